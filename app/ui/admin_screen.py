"""The admin screen: issuers, verifiers, clients and keys of the service, through its admin API.

Credentials and encryption keys are shown exactly once, in a dialog that says so and offers copy
buttons; nothing of them is kept by the app after the dialog closes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.api_errors import ApiError
from app.context import AppContext
from app.presentation import error_message
from app.ui.tasks import TaskRunner

SECRET_FIELDS = ("client_secret", "encryption_key")


class CredentialsDialog(QDialog):
    """Shows one-time credentials with copy buttons and a clear "shown once" warning."""

    def __init__(self, title: str, values: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(640)
        layout = QVBoxLayout(self)
        warning = QLabel(
            "⚠ Shown once. Copy these now and store them safely: the secret and the encryption "
            "key cannot be shown again. Anyone holding them can act as this client."
        )
        warning.setObjectName("shownOnceWarning")
        warning.setWordWrap(True)
        warning.setStyleSheet(
            "background:#fff4ce;border:1px solid #c19c00;padding:8px;font-weight:bold;"
        )
        layout.addWidget(warning)
        form = QFormLayout()
        self.fields: dict[str, QLineEdit] = {}
        for key, value in values.items():
            row = QHBoxLayout()
            edit = QLineEdit(str(value))
            edit.setReadOnly(True)
            edit.setObjectName(f"value_{key}")
            copy = QPushButton("Copy")
            copy.setObjectName(f"copy_{key}")
            copy.clicked.connect(
                lambda _=False, e=edit: QGuiApplication.clipboard().setText(e.text())
            )
            row.addWidget(edit, 1)
            row.addWidget(copy)
            form.addRow(key.replace("_", " ").capitalize(), row)
            self.fields[key] = edit
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("I have stored them")
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)

    def done(self, result: int) -> None:
        for edit in self.fields.values():  # don't leave secrets in widgets after closing
            edit.clear()
        super().done(result)


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    return table


def _fill(table: QTableWidget, rows: list[list[str]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))


class AdminScreen(QWidget):
    """Signals: `refreshed` after the overview reloads; `failed(str)` with the shown message."""

    refreshed = Signal()
    failed = Signal(str)

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.overview: dict[str, Any] = {}
        self.last_dialog: CredentialsDialog | None = None
        self.show_dialogs = True
        layout = QVBoxLayout(self)
        title = QLabel("Admin")
        title.setObjectName("screenTitle")
        layout.addWidget(title)
        self.status = QLabel("")
        self.status.setObjectName("adminStatus")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        create = QHBoxLayout()
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("Name of the payroll provider or desk")
        self.name_edit.setObjectName("adminName")
        self.create_issuer_button = QPushButton("Create issuer")
        self.create_verifier_button = QPushButton("Create verifier")
        self.refresh_button = QPushButton("Refresh")
        create.addWidget(self.name_edit, 1)
        for button in (self.create_issuer_button, self.create_verifier_button, self.refresh_button):
            create.addWidget(button)
        layout.addLayout(create)

        self.tabs = QTabWidget()
        self.issuers = _table(["Issuer", "Issuer id", "Records", "Revoked"])
        self.verifiers = _table(["Verifier", "Verifier id", "Created"])
        self.clients = _table(["Client id", "Role", "Name", "State"])
        self.keys = _table(["Key version", "Issuer", "State", "Created"])
        self.tabs.addTab(self.issuers, "Issuers")
        self.tabs.addTab(self.verifiers, "Verifiers")
        self.tabs.addTab(self.clients, "Clients")
        self.tabs.addTab(self.keys, "Keys")
        layout.addWidget(self.tabs, 1)

        actions = QHBoxLayout()
        self.rotate_button = QPushButton("Rotate key of selected issuer")
        self.retire_button = QPushButton("Retire selected key")
        self.disable_button = QPushButton("Disable selected client")
        for button in (self.rotate_button, self.retire_button, self.disable_button):
            actions.addWidget(button)
        actions.addStretch(1)
        layout.addLayout(actions)

        self.create_issuer_button.clicked.connect(lambda: self._create("issuer"))
        self.create_verifier_button.clicked.connect(lambda: self._create("verifier"))
        self.refresh_button.clicked.connect(self.refresh)
        self.rotate_button.clicked.connect(self._rotate)
        self.retire_button.clicked.connect(self._retire)
        self.disable_button.clicked.connect(self._disable)
        if context.admin is None:
            self._set_enabled(False)
            self.status.setText(
                "Admin needs this instance's admin credentials, which are only on the computer "
                "that created it (or use `python -m service admin` there)."
            )
        else:
            self.refresh()

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (
            self.create_issuer_button,
            self.create_verifier_button,
            self.refresh_button,
            self.rotate_button,
            self.retire_button,
            self.disable_button,
            self.name_edit,
        ):
            widget.setEnabled(enabled)

    def _run(self, work: Callable[[], Any], done: Callable[[Any], None]) -> None:
        self.status.setText("Working…")
        self.tasks.run(work, done, self._error)

    def _error(self, exc: Exception) -> None:
        if isinstance(exc, ApiError):
            text = f"{error_message(exc.code)} ({exc.code}; request id {exc.request_id or '-'})"
            if exc.code == "VALIDATION_FAILED" and exc.field_errors:
                text = f"{exc.field_errors[0].path}: {exc.field_errors[0].message}"
        else:
            text = f"The action failed ({type(exc).__name__})."
        self.status.setText(text)
        self.failed.emit(text)

    def refresh(self) -> None:
        admin = self.context.admin
        if admin is None:
            return
        self._run(admin.admin_list, self._show_overview)

    def _show_overview(self, overview: dict[str, Any]) -> None:
        self.overview = overview
        _fill(
            self.issuers,
            [
                [i["name"], i["issuer_id"], str(i.get("records", 0)), str(i.get("revoked", 0))]
                for i in overview.get("issuers", [])
            ],
        )
        _fill(
            self.verifiers,
            [
                [v["name"], v["verifier_id"], v.get("created_at", "")]
                for v in overview.get("verifiers", [])
            ],
        )
        _fill(
            self.clients,
            [
                [
                    c["client_id"],
                    c["role"],
                    c["name"],
                    "disabled" if c.get("disabled") else "active",
                ]
                for c in overview.get("clients", [])
            ],
        )
        names = {i["issuer_id"]: i["name"] for i in overview.get("issuers", [])}
        _fill(
            self.keys,
            [
                [
                    k["key_version"],
                    names.get(k["issuer_id"], k["issuer_id"]),
                    k["state"],
                    k.get("created_at", ""),
                ]
                for k in overview.get("keys", [])
            ],
        )
        self.status.setText(
            f"{len(overview.get('issuers', []))} issuers, "
            f"{len(overview.get('verifiers', []))} verifiers, "
            f"{overview.get('record_count', 0)} registered payslips."
        )
        self.refreshed.emit()

    def _selected(self, table: QTableWidget, column: int) -> str | None:
        row = table.currentRow()
        item = table.item(row, column) if row >= 0 else None
        return item.text() if item else None

    def _show_credentials(self, title: str, values: dict[str, Any]) -> None:
        dialog = CredentialsDialog(title, values, self)
        self.last_dialog = dialog
        if self.show_dialogs:
            dialog.open()
        self.refresh()

    def _create(self, kind: str) -> None:
        admin = self.context.admin
        name = self.name_edit.text().strip()
        if admin is None:
            return
        if not name:
            self.status.setText("Enter a name first.")
            return
        if kind == "issuer":
            self._run(
                lambda: admin.admin_create_issuer(name),
                lambda made: self._show_credentials(f"New issuer: {name}", made),
            )
        else:
            self._run(
                lambda: admin.admin_create_verifier(name),
                lambda made: self._show_credentials(f"New verifier: {name}", made),
            )

    def _rotate(self) -> None:
        admin, issuer_id = self.context.admin, self._selected(self.issuers, 1)
        if admin is None or issuer_id is None:
            self.status.setText("Select an issuer on the Issuers tab first.")
            return
        self._run(
            lambda: admin.admin_rotate_key(issuer_id),
            lambda made: self._show_credentials("New key version", made),
        )

    def _confirm(self, question: str) -> bool:
        if not self.show_dialogs:
            return True
        answer = QMessageBox.question(self, "Are you sure?", question)
        return answer == QMessageBox.StandardButton.Yes

    def _retire(self) -> None:
        admin, key_version = self.context.admin, self._selected(self.keys, 0)
        if admin is None or key_version is None:
            self.status.setText("Select a key on the Keys tab first.")
            return
        if self._confirm(
            "Retiring destroys this key. Payslips encrypted with it can never be verified again."
        ):
            self._run(lambda: admin.admin_retire_key(key_version), lambda _: self.refresh())

    def _disable(self) -> None:
        admin, client_id = self.context.admin, self._selected(self.clients, 0)
        if admin is None or client_id is None:
            self.status.setText("Select a client on the Clients tab first.")
            return
        if self._confirm("Disable this client? Its tokens stop working at once."):
            self._run(lambda: admin.admin_disable_client(client_id), lambda _: self.refresh())

    def select_row(self, table: QTableWidget, text: str, column: int = 0) -> bool:
        """Select the row whose `column` shows `text` (used by keyboard users' search and tests)."""
        for row in range(table.rowCount()):
            item = table.item(row, column)
            if item is not None and item.text() == text:
                table.setCurrentCell(row, column)
                return True
        return False


__all__ = ["AdminScreen", "CredentialsDialog"]
