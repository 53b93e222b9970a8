"""The one-time credentials dialog of the Admin screen.

Credentials and encryption keys are shown exactly once. The dialog therefore cannot be closed by
Esc, Enter or the window's close button: only "I have saved these" closes it. "Copy all" and
"Save to file" (written with mode 0600, never into the app's own folders) make saving them easy,
and for a new issuer "Use this issuer for issuing on this computer" puts the secret and key into
the OS keyring so nobody has to paste them into the Issue screen.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QGuiApplication, QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.api.pinning import fingerprint_words
from app.ui.widgets.staff_style import label, staff_stylesheet

LABELS = {
    "service_url": "Service address",
    "certificate_fingerprint": "Certificate fingerprint (SHA-256)",
    "issuer_id": "Issuer id",
    "verifier_id": "Front desk id",
    "client_id": "Client id",
    "client_secret": "Client secret",
    "key_version": "Key version",
    "encryption_key": "Encryption key",
}
SECRET_FIELDS = ("client_secret", "encryption_key")


def handover(wire: dict[str, Any], address: str, fingerprint: str | None) -> dict[str, Any]:
    """A new client's credentials with the address other computers use and, on an office
    network, the certificate's fingerprint in words: all a desk or a payroll computer needs
    (each then accepts this service's certificate and no other)."""
    values = {"service_url": address, **wire}
    if fingerprint:
        values["certificate_fingerprint"] = fingerprint_words(fingerprint)
    return values


def credentials_text(title: str, values: dict[str, Any]) -> str:
    lines = [title, ""]
    lines += [f"{LABELS.get(k, k.replace('_', ' ').capitalize())}: {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write `text` readable by this user only (0600 from the first byte, not chmod after)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT


class CredentialsDialog(QDialog):
    """`use_here` is offered for a new issuer or key (`use_here_text`, ticked when
    `use_here_checked`): ticked when the dialog closes, it calls `on_use_here`."""

    def __init__(
        self,
        title: str,
        values: dict[str, Any],
        parent: QWidget | None = None,
        *,
        on_use_here: Callable[[], None] | None = None,
        use_here_text: str = "Use this issuer for issuing on this computer",
        use_here_checked: bool = True,
        default_folder: Callable[[], str] = lambda: "",
        remember_folder: Callable[[str], None] = lambda _: None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(720)
        self.setStyleSheet(staff_stylesheet() + "QDialog { background: #f3f5f8; }")
        self.title = title
        self._values = dict(values)
        self._on_use_here = on_use_here
        self._default_folder = default_folder
        self._remember_folder = remember_folder
        self._closing = False
        layout = QVBoxLayout(self)
        heading = label(title, "screenTitle")
        layout.addWidget(heading)
        warning = QLabel(
            "⚠ Shown once. Save these now: the secret and the encryption key cannot be shown "
            "again. Anyone holding them can act as this client, so keep them somewhere safe."
        )
        warning.setObjectName("shownOnceWarning")
        warning.setWordWrap(True)
        warning.setStyleSheet(
            "background:#fff4ce;border:1px solid #c19c00;border-radius:6px;padding:10px;"
            "font-weight:bold;color:#3b2f00;"
        )
        layout.addWidget(warning)
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        self.fields: dict[str, QLineEdit] = {}
        for row, (key, value) in enumerate(values.items()):
            edit = QLineEdit(str(value))
            edit.setReadOnly(True)
            edit.setObjectName(f"value_{key}")
            edit.setCursorPosition(0)
            edit.setStyleSheet("font-family: monospace;")
            copy = QPushButton("Copy")
            copy.setObjectName(f"copy_{key}")
            copy.setAutoDefault(False)
            copy.clicked.connect(
                lambda _=False, e=edit: QGuiApplication.clipboard().setText(e.text())
            )
            grid.addWidget(label(LABELS.get(key, key), "fieldLabel", wrap=False), row, 0)
            grid.addWidget(edit, row, 1)
            grid.addWidget(copy, row, 2)
            self.fields[key] = edit
        layout.addLayout(grid)
        self.use_here: QCheckBox | None = None
        if on_use_here is not None:
            self.use_here = QCheckBox(use_here_text)
            self.use_here.setObjectName("useHere")
            self.use_here.setChecked(use_here_checked)
            self.use_here.setToolTip(
                "Keeps the secret and the key in this computer's secure password store, so the "
                "Issue screen is ready without pasting anything."
            )
            layout.addWidget(self.use_here)
        self.status = label("", "hint")
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        self.copy_all_button = QPushButton("Copy all")
        self.copy_all_button.setObjectName("copyAll")
        self.save_button = QPushButton("Save to file…")
        self.save_button.setObjectName("saveToFile")
        self.done_button = QPushButton("I have saved these")
        self.done_button.setObjectName("primary")
        for button in (self.copy_all_button, self.save_button, self.done_button):
            button.setAutoDefault(False)
        buttons.addWidget(self.copy_all_button)
        buttons.addWidget(self.save_button)
        buttons.addStretch(1)
        buttons.addWidget(self.done_button)
        layout.addLayout(buttons)
        self.copy_all_button.clicked.connect(self.copy_all)
        self.save_button.clicked.connect(self._save_dialog)
        self.done_button.clicked.connect(self.confirm_saved)

    # The only way out is the explicit button.
    def reject(self) -> None:
        self.status.setText("Save the details first, then press “I have saved these”.")

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape):
            self.reject()
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self._closing:
            super().closeEvent(event)
        else:
            event.ignore()
            self.reject()

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(credentials_text(self.title, self._values))
        self.status.setText("All details copied. Paste them into your password manager.")

    def save_to(self, path: Path) -> None:
        write_private(path, credentials_text(self.title, self._values))
        self._remember_folder(str(path.parent))
        self.status.setText(f"Saved to {path.name} (readable by you only).")

    def _save_dialog(self) -> None:
        name = self.title.split(":")[-1].strip().replace(" ", "-").lower() or "credentials"
        start = str(Path(self._default_folder() or Path.home()) / f"{name}-credentials.txt")
        target, _ = QFileDialog.getSaveFileName(self, "Save credentials", start, "Text (*.txt)")
        if target:
            try:
                self.save_to(Path(target))
            except OSError as exc:
                self.status.setText(f"Could not save there ({exc.strerror or 'error'}).")

    def confirm_saved(self) -> None:
        if self.use_here is not None and self.use_here.isChecked() and self._on_use_here:
            self._on_use_here()
        self._closing = True
        self.accept()

    def done(self, result: int) -> None:
        for edit in self.fields.values():  # don't leave secrets in widgets after closing
            edit.clear()
        self._values = {}
        super().done(result)
