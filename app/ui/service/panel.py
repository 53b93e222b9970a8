"""The Service screen: the verification service this desk uses, in words an office can act on.

Which kind of service it is (live, sandbox, demo), where its data is kept, whether it answers,
how long it has been running and how much it holds; for the service embedded in this app, a
Restart button. Health is polled off the GUI thread; the state is shown with colour, a symbol
and words together. No class names or developer terms on the screen.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.api.pinning import fingerprint_words
from app.api.probe import probe
from app.shell.context import AppContext, office_fingerprint
from app.shell.restart import instance_dir, restart_embedded
from app.ui.service.address import AddressSection
from app.ui.widgets.office_down import OfficeDownNotice
from app.ui.widgets.staff_style import (
    label,
    plural,
    section,
    set_status,
    staff_screen,
    titled_column,
)
from app.ui.widgets.tasks import TaskRunner
from service.hosting.network_address import is_loopback_url
from service.hosting.server import Running
from service.hosting.tls import TlsError
from service.protocol.schemas import Overview

POLL_MS = 5000
ENVIRONMENTS = {
    "production": "Live — real payslips",
    "sandbox": "Sandbox — test data only; results prove nothing about real payslips",
}


def environment_words(context: AppContext) -> str:
    if context.demo is not None:
        return "Demo — a temporary service with invented payslips; nothing is kept"
    return ENVIRONMENTS.get(context.environment, context.environment.capitalize())


def store_words(running: Running | None) -> str:
    if running is None:
        return "Kept by the central service"
    name = type(running.store).__name__.lower()
    if "postgres" in name:
        return "A PostgreSQL database server"
    return "Files in the data folder on this computer"


def _uptime(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return "less than a minute"
    if minutes < 60:
        return plural(minutes, "minute")
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{plural(hours, 'hour')} {plural(minutes, 'minute')}"
    return plural(hours // 24, "day")


class ServicePanel(QWidget):
    """Signals: `health_changed(bool)` whenever a health check finishes; `restarted()`."""

    health_changed = Signal(bool)
    restarted = Signal()

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        staff_screen(self)
        self.context = context
        self.tasks = tasks
        self.healthy: bool | None = None
        self._checking = False
        self._started = time.monotonic()
        running = context.service
        # The screen's own scroll area: with the address settings it is taller than a
        # 1024x600 screen, and one scroll bar for the whole screen is the rule.
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        body = QWidget()
        staff_screen(body)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidget(body)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        outer.addWidget(self.scroll_area)
        layout = titled_column(
            body,
            "Service",
            "The verification service keeps the registered payslips and answers every check. "
            + (
                "It runs inside this app on this computer."
                if running is not None
                else "This desk uses a service that runs elsewhere."
            ),
        )
        self.state = QLabel("Checking…")
        self.state.setObjectName("serviceState")
        self.state.setStyleSheet("font-size:15pt;padding:10px 14px;border-radius:8px;")
        layout.addWidget(self.state)
        self.problem = label("", "serviceProblem")
        self.problem.setStyleSheet("color:#b3261e;font-weight:600;")
        self.problem.hide()
        layout.addWidget(self.problem)
        self.office_down = OfficeDownNotice(context, tasks)
        self.office_down.restarted.connect(self._after_notice)
        layout.addWidget(self.office_down)

        about, about_layout = section("About this service")
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setHorizontalSpacing(18)
        grid.setVerticalSpacing(8)
        self.url_label = label(self._here_words(), "fieldValue")
        self.url_label.setObjectName("serviceUrl")
        self.public_label = label(self._public_words(), "fieldValue")
        self.public_label.setObjectName("servicePublicUrl")
        folder = instance_dir(context)
        if context.demo is not None:
            folder_text = "A temporary folder, deleted when the app closes"
        elif folder is not None:
            folder_text = str(folder)
        else:
            folder_text = "On the central service"
        self.uptime_label = label("", "fieldValue")
        self.counts_label = label("", "fieldValue")
        self.environment_label = label(environment_words(context), "fieldValue")
        self.fingerprint_label = label(self._fingerprint_words(), "fieldValue")
        self.fingerprint_label.setObjectName("serviceFingerprint")
        self.fingerprint_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rows: list[tuple[str, QLabel]] = [
            ("Kind", self.environment_label),
            ("Runs", label("Inside this app" if running else "Elsewhere", "fieldValue")),
            *(
                [
                    ("Address here", self.url_label),
                    ("For other desks and phones", self.public_label),
                    ("Certificate fingerprint", self.fingerprint_label),
                ]
                if running is not None
                else [("Address", self.url_label)]
            ),
            ("Data kept in", label(store_words(running), "fieldValue")),
            ("Data folder", label(folder_text, "fieldValue")),
            ("Running for", self.uptime_label),
            ("Holds", self.counts_label),
        ]
        for row, (caption, value) in enumerate(rows):
            grid.addWidget(label(caption, "fieldLabel", wrap=False), row, 0)
            grid.addWidget(value, row, 1)
        about_layout.addLayout(grid)
        layout.addWidget(about)

        self.address: AddressSection | None = None
        if running is not None and context.demo is None:
            self.address = AddressSection(context)
            self.address.apply_requested.connect(self.restart)
            layout.addWidget(self.address)

        buttons = QHBoxLayout()
        self.check_button = QPushButton("Check now")
        self.copy_button = QPushButton("Copy address")
        self.restart_button = QPushButton("Restart the service")
        self.restart_button.setVisible(running is not None)
        self.restart_button.setToolTip(
            "Stops and starts the service inside this app; verifying pauses for a moment."
        )
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        buttons.addWidget(self.restart_button)
        layout.addLayout(buttons)
        self.message = label("", "hint")
        layout.addWidget(self.message)
        layout.addStretch(1)
        self.check_button.clicked.connect(self.check)
        self.copy_button.setToolTip("Copies the address other desks and phones use.")
        self.copy_button.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(self.context.public_url)
        )
        self.restart_button.clicked.connect(self.restart)
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        self.check()

    def _here_words(self) -> str:
        url = self.context.service_url or "not set up"
        down = self.context.office_down
        if down is None:
            return url
        return f"{url} — a stand-in for this app only while port {down.port} is in use"

    def _fingerprint_words(self) -> str:
        """The SHA-256 fingerprint of the certificate this service shows, in groups of four:
        what other desks are given (Admin → Add front desk) and what a person compares with
        their browser's certificate viewer."""
        found = office_fingerprint(self.context)
        if found is None:
            return "None: this service speaks plain HTTP, on this computer only"
        return fingerprint_words(found)

    def _public_words(self) -> str:
        url = self.context.public_url
        if not url:
            return "not set up"
        if is_loopback_url(url):
            return f"{url} — this computer only: other desks and phones cannot use it"
        return url

    def check(self) -> None:
        self.uptime_label.setText(_uptime(time.monotonic() - self._started))
        if self._checking or not self.context.service_url:
            return
        self._checking = True
        url = self.context.service_url
        client = self.context.verifier
        admin = self.context.admin

        verify = self.context.own_options().get("verify", True)

        def work() -> tuple[bool, Overview | None, str]:
            healthy = client.healthz(url)
            overview = None
            if healthy and admin is not None:
                try:
                    overview = admin.admin_list()
                except Exception:  # counts are a nicety; health is what matters here
                    overview = None
            # Why not, naming the address ("refused", "did not answer in time", ...).
            problem = "" if healthy else (probe(url, verify) or "")
            return healthy, overview, problem

        self.tasks.run(work, self._show, lambda _: self._show((False, None, "")))

    def _show(self, answer: tuple[bool, Overview | None, str]) -> None:
        self._checking = False
        healthy, overview, problem = answer
        self.healthy = bool(healthy)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem) and not healthy)
        down = self.context.office_down
        if down is not None:  # this app's stand-in answers; the office service does not
            self.state.setText(f"✖ The office service is not running — port {down.port} is in use")
            self.state.setStyleSheet(
                "font-size:15pt;padding:10px 14px;border-radius:8px;"
                "background:#fbeceb;color:#b3261e;font-weight:600;"
            )
        elif self.healthy:
            self.state.setText("✔ Running — answering checks")
            self.state.setStyleSheet(
                "font-size:15pt;padding:10px 14px;border-radius:8px;"
                "background:#e8f3eb;color:#1b6e31;font-weight:600;"
            )
        else:
            self.state.setText("✖ Not answering — verifying will fail until it is back")
            self.state.setStyleSheet(
                "font-size:15pt;padding:10px 14px;border-radius:8px;"
                "background:#fbeceb;color:#b3261e;font-weight:600;"
            )
        if overview is not None:
            self.counts_label.setText(
                f"{plural(overview.record_count, 'registered payslip')}, "
                f"{plural(len(overview.issuers), 'payroll provider')}, "
                f"{plural(len(overview.verifiers), 'front desk')}"
            )
        elif not self.counts_label.text():
            self.counts_label.setText("Shown on the computer that runs the service")
        self.health_changed.emit(self.healthy)

    def _after_notice(self) -> None:
        """The notice restarted the service (retry, another port): show the new addresses."""
        self.service_changed()
        self.restarted.emit()

    def service_changed(self) -> None:
        """Read the service's addresses and state again (after any restart)."""
        self._started = time.monotonic()
        self.url_label.setText(self._here_words())
        self.public_label.setText(self._public_words())
        self.fingerprint_label.setText(self._fingerprint_words())
        self.office_down.refresh()
        if self.address is not None and self.context.settings.service_port:
            self.address.port.setValue(self.context.settings.service_port)
            self.address.scan_base.setText(self.context.settings.scan_base)
        self.check()

    def restart(self) -> None:
        """Restart the embedded service off the GUI thread; the panel reports how it went."""
        if self.context.service is None:
            return
        self.restart_button.setEnabled(False)
        set_status(self.message, "Restarting the service…")

        def done(_: object) -> None:
            self.restart_button.setEnabled(True)
            down = self.context.office_down
            set_status(
                self.message,
                "The service was restarted." if down is None else down.words,
                error=down is not None,
            )
            if self.address is not None:
                self.address.on_restarted(down is None, self.tasks)
            self.service_changed()
            self.restarted.emit()

        def failed(exc: Exception) -> None:
            self.restart_button.setEnabled(True)
            reason = str(exc) if isinstance(exc, TlsError | OSError) else ""
            set_status(
                self.message,
                "The service could not be restarted"
                + (f" ({reason})" if reason else "")
                + ". Change the values below, or close and reopen the app.",
                error=True,
            )
            if self.address is not None:
                self.address.on_restarted(False)
            self.check()

        self.tasks.run(lambda: restart_embedded(self.context), done, failed)
