"""The notice shown while the office service is not running because another program holds its
port (issue 35): on the Service screen and the Issue screen, in words, with what to do.

The service never moves to another port by itself: badges already printed and other desks carry
the port. The notice offers the two ways out a person can choose: *Retry* (after the other
program was stopped) and *Choose another port…*, whose dialog says plainly that badges already
printed keep the old address. Both restart the service off the GUI thread (app.shell.restart);
`restarted` tells the screens to read the addresses again.
"""

from __future__ import annotations

import contextlib

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.shell.context import AppContext, kept_address, listen_host
from app.shell.restart import restart_embedded, with_port
from app.ui.widgets.staff_style import label, set_status
from app.ui.widgets.tasks import TaskRunner
from service.hosting.network_address import choose_port

DOWN_STYLE = (
    "QFrame#officeDown{background:#fbeceb;border:1px solid #b3261e;border-radius:8px;}"
    "QLabel{color:#5c0f0a;}"
)


class PortDialog(QDialog):
    """Choose another port for the office service, told what that means for printed badges."""

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("officePortDialog")
        self.setWindowTitle("Choose another port")
        settings = context.settings
        self.old_port = settings.service_port
        self.old_address = kept_address(settings, self.old_port)
        layout = QVBoxLayout(self)
        layout.addWidget(
            label(
                f"The office service keeps port {self.old_port}, and every badge printed so far "
                f"carries {self.old_address}.",
                "hint",
            )
        )
        self.port = QSpinBox()
        self.port.setObjectName("officeNewPort")
        self.port.setAccessibleName("New port")
        self.port.setRange(1024, 65535)
        self.port.setValue(choose_port(listen_host(settings), min(self.old_port + 1, 65535)))
        row = QHBoxLayout()
        row.addWidget(label("New port", "fieldLabel", wrap=False))
        row.addWidget(self.port)
        row.addStretch(1)
        layout.addLayout(row)
        self.warning = label("", "portChangeWarning")
        self.warning.setStyleSheet(
            "background:#fff4ce;border:1px solid #c19c00;border-radius:6px;padding:8px 10px;"
        )
        layout.addWidget(self.warning)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.port.valueChanged.connect(self._explain)
        self._explain()
        self.setMinimumWidth(520)

    def new_address(self) -> str:
        return with_port(self.old_address, self.old_port, self.port.value())

    def _explain(self) -> None:
        new = self.new_address()
        if new == self.old_address:
            tail = (
                f"The address for badges ({self.old_address}) names no port: whatever answers "
                "there must then send phones to the new port."
            )
        else:
            tail = f"New badges will carry {new}."
        self.warning.setText(
            f"⚠ Badges already printed carry {self.old_address}: phones cannot open them, and "
            f"other desks set to it cannot verify, until something answers there again. {tail}"
        )
        self.ok_button.setText(f"Use port {self.port.value()}")


class OfficeDownNotice(QFrame):
    """Hidden while the office service runs. Signals: `restarted()` after a retry or a new port,
    whether or not the service is back (the screens then re-read `context.office_down`)."""

    restarted = Signal()

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.setObjectName("officeDown")
        self.setStyleSheet(DOWN_STYLE)
        self.context = context
        self.tasks = tasks
        self.dialog: PortDialog | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 10)
        self.words = label("", "officeDownWords")
        self.words.setStyleSheet("font-weight:600;")
        layout.addWidget(self.words)
        self.here = label(
            "This computer still verifies and issues on its own; payslips issued now carry the "
            "office address and can be checked there once the service is back.",
            "hint",
        )
        layout.addWidget(self.here)
        buttons = QHBoxLayout()
        self.retry_button = QPushButton("Retry")
        self.retry_button.setAccessibleName("Retry starting the office service")
        self.port_button = QPushButton("Choose another port…")
        self.port_button.setAccessibleName("Choose another port for the office service")
        self.status = label("", "hint")
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.port_button)
        buttons.addWidget(self.status, 1)
        layout.addLayout(buttons)
        self.retry_button.clicked.connect(self.retry)
        self.port_button.clicked.connect(self.choose_port)
        self.refresh()

    def refresh(self) -> None:
        down = self.context.office_down
        self.setVisible(down is not None)
        if down is not None:
            self.words.setText(f"✖ {down.words}")

    def retry(self) -> None:
        self._restart("Trying the port again…")

    def choose_port(self) -> None:
        """Open the port dialog (non-blocking); accepting it saves the port and restarts."""
        self.dialog = PortDialog(self.context, self.window())  # not under the red notice
        self.dialog.accepted.connect(self._use_chosen)
        self.dialog.open()

    def _use_chosen(self) -> None:
        dialog = self.dialog
        assert dialog is not None
        settings = self.context.settings
        settings.scan_base = with_port(settings.scan_base, dialog.old_port, dialog.port.value())
        settings.service_port = dialog.port.value()
        with contextlib.suppress(OSError):  # not saving is said by the next start, not here
            settings.save()
        self._restart(f"Starting the office service on port {settings.service_port}…")

    def _restart(self, doing: str) -> None:
        self.retry_button.setEnabled(False)
        self.port_button.setEnabled(False)
        set_status(self.status, doing)

        def finished(error: object) -> None:
            self.retry_button.setEnabled(True)
            self.port_button.setEnabled(True)
            if isinstance(error, Exception):
                set_status(self.status, f"The service could not be started ({error}).", error=True)
            elif self.context.office_down is not None:
                set_status(self.status, "The port is still in use.", error=True)
            else:
                set_status(self.status, "")
            self.refresh()
            self.restarted.emit()

        self.tasks.run(lambda: restart_embedded(self.context), finished, finished)
