"""The admin screen: payroll providers (issuers), front desks (verifiers), clients and keys.

Everything goes through the service's admin API. The screen guards against the mistakes that
lock an office out: it refuses to disable the client this app itself signs in with and the last
admin client, every destructive confirmation names its target and defaults to Cancel, and a
duplicate name is asked about first. Counts refresh after each change and on a timer.
Credentials are shown once (see `admin_credentials`), never kept by this screen. The tables and
which buttons their selection enables are `admin_overview`'s; this module holds the actions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QWidget,
)

from app.api import ApiClient
from app.api.errors import ApiError
from app.issuer.local_issuer import (
    LocalIssuer,
    load_local_issuer,
    save_local_issuer,
    saved_address,
    use_new_key,
)
from app.shell.context import AppContext, desk_fingerprint
from app.ui.admin.add_row import AddRow
from app.ui.admin.credentials import SECRET_FIELDS, CredentialsDialog, handover
from app.ui.admin.overview import (
    OverviewTabs,
    is_phone,
    retire_consequence,
    select_row,
    selected_text,
)
from app.ui.admin.pair_dialog import open_pair_dialog
from app.ui.widgets.folders import last_folder, remember_folder
from app.ui.widgets.staff_style import (
    label,
    plural,
    set_status,
    staff_screen,
    titled_column,
)
from app.ui.widgets.tasks import TaskRunner
from app.verify.presentation import error_message
from service.protocol.schemas import IssuerCreated, KeyCreated, Overview, VerifierCreated

REFRESH_MS = 20_000

__all__ = ["SECRET_FIELDS", "AdminScreen", "CredentialsDialog"]


def _client_id(client: ApiClient | None) -> str | None:
    return getattr(client, "client_id", None)


class AdminScreen(QWidget):
    """Signals: `refreshed` after the overview reloads; `failed(str)` with the shown message."""

    refreshed = Signal()
    failed = Signal(str)

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        staff_screen(self)
        self.context = context
        self.tasks = tasks
        self.last_dialog: CredentialsDialog | None = None
        self.last_confirmation: QMessageBox | None = None
        self.show_dialogs = True
        self.auto_confirm = True
        """What a confirmation answers when dialogs are not shown (tests)."""
        self._busy = 0
        layout = titled_column(
            self,
            "Admin",
            "Payroll providers who issue payslips, front desks that verify them, and the keys "
            "that protect the employees' details.",
        )

        add = AddRow()
        self.name_edit = add.name_edit
        self.create_issuer_button = add.create_issuer_button
        self.create_verifier_button = add.create_verifier_button
        layout.addWidget(add)

        top = QHBoxLayout()
        self.status = label("", "adminStatus")
        self.status.setObjectName("adminStatus")
        self.refresh_button = QPushButton("Refresh")
        top.addWidget(self.status, 1)
        top.addWidget(self.refresh_button)
        layout.addLayout(top)

        self.tabs = OverviewTabs()
        # The screen's own names for the tabs' widgets (its actions and the tests use them).
        self.issuers, self.verifiers = self.tabs.issuers, self.tabs.verifiers
        self.clients, self.keys = self.tabs.clients, self.tabs.keys
        self.copy_buttons, self.empty_hints = self.tabs.copy_buttons, self.tabs.empty_hints
        self.rotate_button, self.pair_button = self.tabs.rotate_button, self.tabs.pair_button
        self.disable_button, self.retire_button = self.tabs.disable_button, self.tabs.retire_button
        self.pair_button.setEnabled(context.admin is not None)
        self.pair_button.clicked.connect(
            lambda: open_pair_dialog(
                self,
                context.admin,
                tasks,
                self.overview,
                selected_text(self.verifiers, 1),
                context.settings,
                desk_fingerprint(context),
            )
        )
        self.tabs.copied.connect(lambda value: set_status(self.status, f"Copied {value}"))
        layout.addWidget(self.tabs, 1)

        self.create_issuer_button.clicked.connect(lambda: self._create("issuer"))
        self.create_verifier_button.clicked.connect(lambda: self._create("verifier"))
        self.name_edit.returnPressed.connect(lambda: self._create("issuer"))
        self.refresh_button.clicked.connect(self.refresh)
        self.rotate_button.clicked.connect(self._rotate)
        self.retire_button.clicked.connect(self._retire)
        self.disable_button.clicked.connect(self._disable)
        for table in (self.issuers, self.verifiers, self.clients, self.keys):
            table.itemSelectionChanged.connect(self._follow_selection)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        if context.admin is None:
            for widget in (
                self.create_issuer_button,
                self.create_verifier_button,
                self.refresh_button,
                self.name_edit,
            ):
                widget.setEnabled(False)
            set_status(
                self.status,
                "Admin works only on the computer that runs this office's service (its admin "
                "sign-in is kept there).",
                error=True,
            )
        else:
            self.refresh()
            self.timer.start()
        self._follow_selection()

    # ------------------------------------------------------------------ plumbing

    def _run(self, work: Callable[[], Any], done: Callable[[Any], None], note: str = "") -> None:
        self._busy += 1
        if note:
            set_status(self.status, note)

        def finished(value: Any) -> None:
            self._busy -= 1
            done(value)

        def failed(exc: Exception) -> None:
            self._busy -= 1
            self._error(exc)

        self.tasks.run(work, finished, failed)

    def _error(self, exc: Exception) -> None:
        if isinstance(exc, ApiError):
            text = error_message(exc.code)
            if exc.code == "VALIDATION_FAILED" and exc.field_errors:
                problem = exc.field_errors[0]
                text = f"The {problem.path.split('.')[-1]} {problem.message}."
            if exc.request_id:
                text += f" (Reference for support: {exc.request_id})"
        else:
            text = "The action could not be completed. Check the Service screen and try again."
        set_status(self.status, text, error=True)
        self.failed.emit(text)

    def _tick(self) -> None:
        if self._busy == 0 and self.isVisible():
            self.refresh()

    def refresh(self) -> None:
        admin = self.context.admin
        if admin is None:
            return
        self._run(admin.admin_list, self._show_overview)

    @property
    def overview(self) -> Overview:
        """The latest ``admin_list`` answer (no rows before the first)."""
        return self.tabs.overview

    def _show_overview(self, overview: Overview) -> None:
        self.tabs.show_overview(overview, self._own_ids())
        issuers, verifiers = overview.issuers, overview.verifiers
        set_status(
            self.status,
            f"{plural(len(issuers), 'payroll provider')}, {plural(len(verifiers), 'front desk')}, "
            f"{plural(overview.record_count, 'registered payslip')}.",
        )
        self._follow_selection()
        self.refreshed.emit()

    def _follow_selection(self) -> None:
        self.tabs.follow_selection(self.context.admin is not None)

    def _confirm(self, title: str, text: str, action: str) -> bool:
        """A question that names its target; Cancel is the default and the Esc answer."""
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, parent=self)
        box.setObjectName("confirmation")
        yes = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        self.last_confirmation = box
        if not self.show_dialogs:
            return self.auto_confirm
        box.exec()
        return box.clickedButton() is yes

    # ------------------------------------------------------------------ actions

    def _show_credentials(
        self,
        title: str,
        values: dict[str, Any],
        on_use_here: Callable[[], None] | None = None,
        **use_here: Any,
    ) -> None:
        settings = self.context.settings
        dialog = CredentialsDialog(
            title,
            values,
            self,
            on_use_here=on_use_here,
            **use_here,
            default_folder=lambda: last_folder(settings, "credentials"),
            remember_folder=lambda folder: remember_folder(settings, "credentials", folder),
        )
        self.last_dialog = dialog
        if self.show_dialogs:
            dialog.open()
        self.refresh()

    def _create(self, kind: str) -> None:
        admin = self.context.admin
        name = " ".join(self.name_edit.text().split())
        if admin is None:
            return
        if not name:
            set_status(self.status, "Type a name first.", error=True)
            self.name_edit.setFocus()
            return
        overview = self.overview
        listed = overview.issuers if kind == "issuer" else overview.verifiers
        what = "payroll provider" if kind == "issuer" else "front desk"
        duplicate = any(i.name.casefold() == name.casefold() for i in listed)
        if duplicate and not self._confirm(
            "Same name",
            f"There is already a {what} called “{name}”. Add another one with the same name?",
            "Add another",
        ):
            set_status(self.status, f"Nothing added: “{name}” exists already.")
            return
        if kind == "issuer":
            url = saved_address(self.context.service_url, self._embedded_url())

            def made_issuer(made: IssuerCreated) -> None:
                self.name_edit.clear()
                self._show_credentials(
                    f"New payroll provider: {name}",
                    self._handover(made.wire()),
                    on_use_here=lambda: self._use_here(url, name, made),
                )

            self._run(lambda: admin.admin_create_issuer(name), made_issuer, "Adding…")
        else:

            def made_verifier(made: VerifierCreated) -> None:
                self.name_edit.clear()
                self._show_credentials(f"New front desk: {name}", self._handover(made.wire()))

            self._run(lambda: admin.admin_create_verifier(name), made_verifier, "Adding…")

    def _handover(self, wire: dict[str, Any]) -> dict[str, Any]:
        return handover(wire, self.context.public_url, desk_fingerprint(self.context))

    def _use_here(self, url: str, name: str, made: IssuerCreated) -> None:
        try:
            save_local_issuer(self.context.settings, self.context.secrets, url, name, made)
        except OSError:
            set_status(self.status, "The issuer could not be saved on this computer.", error=True)
            return
        set_status(self.status, f"“{name}” is now the issuer for issuing on this computer.")
        self._reload_issue_screen()
        self.refresh()  # its client is now "Used by this app"

    def _reload_issue_screen(self) -> None:
        with contextlib.suppress(AttributeError, RuntimeError):
            window = self.window()
            window.issue_screen.issuer_panel.reload()  # type: ignore[attr-defined]

    def _embedded_url(self) -> str | None:
        service = self.context.service
        return service.url if service is not None and self.context.demo is None else None

    def local_issuer(self) -> LocalIssuer | None:
        """The payroll provider this computer issues as (saved from Admin or the Issue screen)."""
        return load_local_issuer(self.context.settings, self.context.secrets)

    def issues_here(self, issuer_id: str) -> bool:
        """Whether this computer issues as `issuer_id` (its saved issuer client belongs to it)."""
        local = self.local_issuer()
        client = self.tabs.client(local.client_id) if local is not None else None
        return client is not None and client.owner_id == issuer_id

    def _target(self, table: QTableWidget, column: int, what: str) -> str | None:
        """The selected row's id for an action, or None (and a request to select one)."""
        value = selected_text(table, column) if self.context.admin is not None else None
        if value is None:
            set_status(self.status, f"Select {what} first.", error=True)
        return value

    def _confirm_then(
        self, action: str, text: str, work: Callable[[ApiClient], Any], note: str
    ) -> None:
        """Ask (``action`` is the title and the yes button); only a yes runs ``work`` with the
        admin client, then the overview reloads."""
        admin = self.context.admin
        if admin is not None and self._confirm(action, text, action):
            self._run(lambda: work(admin), lambda _: self.refresh(), note)

    def _rotate(self) -> None:
        admin, issuer_id = self.context.admin, self._target(self.issuers, 1, "a payroll provider")
        if admin is None or issuer_id is None:
            return
        name = selected_text(self.issuers, 0) or issuer_id
        here = self.issues_here(issuer_id)

        def made_key(made: KeyCreated) -> None:
            self._show_credentials(
                f"New key for {name}",
                made.wire(),
                on_use_here=lambda: self._use_key_here(name, issuer_id, made),
                use_here_text="Use this key for issuing on this computer",
                use_here_checked=here,
            )

        self._run(lambda: admin.admin_rotate_key(issuer_id), made_key, "Making a new key…")

    def _use_key_here(self, name: str, issuer_id: str, made: KeyCreated) -> None:
        """Issue with the new key from now on, if this computer issues as its provider."""
        local = self.local_issuer()
        client = self.tabs.client(local.client_id) if local is not None else None
        if local is None or client is None or client.owner_id != issuer_id:
            set_status(
                self.status,
                f"This computer does not issue as “{name}”, so the new key was not kept here. "
                "Give it to whoever issues for this payroll provider.",
                error=True,
            )
            return
        try:
            use_new_key(
                self.context.settings,
                self.context.secrets,
                local.client_id,
                made.key_version,
                made.encryption_key,
            )
        except OSError:
            set_status(self.status, "The new key could not be saved on this computer.", error=True)
            return
        set_status(
            self.status, f"This computer now issues for “{name}” with key {made.key_version}."
        )
        self._reload_issue_screen()

    def _retire(self) -> None:
        key_version = self._target(self.keys, 0, "a key")
        if key_version is None:
            return
        local = self.local_issuer()
        warning = ""
        if local is not None and local.key_version == key_version:
            warning = (
                "⚠ This computer still issues payslips with this key. After retiring it, "
                "issuing here stops until this computer has a new key: first press “Give new "
                "key” on the Payroll providers tab and tick “Use this key for issuing on this "
                "computer”.\n\n"
            )
        self._confirm_then(
            "Retire key",
            f"{warning}Retire key {key_version} of {selected_text(self.keys, 1) or ''}?\n\n"
            + retire_consequence(self.overview, key_version),
            lambda admin: admin.admin_retire_key(key_version),
            "Retiring…",
        )

    def _own_ids(self) -> set[str]:
        """Every client this app signs in with: admin, desk, and the issuer it issues as."""
        clients = (self.context.admin, self.context.verifier, self.context.issuer)
        own = {i for i in (_client_id(c) for c in clients) if i}
        local = self.local_issuer()
        if local is not None and local.client_id:
            own.add(local.client_id)
        return own

    def refusal(self, client_id: str) -> str | None:
        """Why this client must not be disabled from here, or None."""
        if client_id == _client_id(self.context.admin):
            return (
                "This is the admin client this app signs in with; disabling it would lock you "
                "out of Admin. Disable it from another admin computer if you must."
            )
        if client_id in self._own_ids():
            return (
                "This app itself signs in with this client; disabling it would stop this "
                "computer from working. Disable it from another computer if you must."
            )
        if self.tabs.is_last_admin(client_id):
            return "This is the last admin client; without it nobody could administer the service."
        return None

    def _disable(self) -> None:
        client_id = self._target(self.clients, 0, "a client")
        if client_id is None:
            return
        refusal = self.refusal(client_id)
        if refusal is not None:
            set_status(self.status, refusal, error=True)
            self.failed.emit(refusal)
            return
        name = selected_text(self.clients, 2) or ""
        client = self.tabs.client(client_id)
        phone = client is not None and is_phone(client)
        self._confirm_then(
            "Remove phone" if phone else "Disable client",
            (f"Remove the phone {name}?" if phone else f"Disable client {client_id} ({name})?")
            + "\n\nIt stops working at once and cannot be turned back on.",
            lambda admin: admin.admin_disable_client(client_id),
            "Removing…" if phone else "Disabling…",
        )

    def select_row(self, table: QTableWidget, text: str, column: int = 0) -> bool:
        """Select the row whose `column` shows `text` (used by keyboard users' search and tests)."""
        return select_row(table, text, column)
