"""The admin screen's overview: four tabs of tables filled from one ``admin_list`` answer.

Payroll providers, front desks, clients and keys, each with its Copy id button and the actions
that act on the tab's selected row. The tables only show what the service said, in an office's
words (local times, "Disabled", "Expired", "Used by this app", when a phone last signed in and
until when it may); ids are shown whole, never cut off, because
people copy them into support requests. Which row is selected decides which buttons are enabled,
so a button never offers to act on nothing. The actions themselves are the screen's.
"""

from __future__ import annotations

from datetime import UTC, datetime

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.ui.widgets.staff_style import label, local_time
from app.verify.presentation import local_moment
from service.protocol.schemas import ClientSummary, KeySummary, Overview
from service.protocol.vocabulary import KeyState

ROLES = {"admin": "Administer", "issuer": "Issue", "verifier": "Verify"}
KEY_STATES: dict[str, str] = {
    KeyState.ACTIVE: "Current",
    KeyState.LIVE: "Previous (still verifies old payslips)",
    KeyState.RETIRED: "Retired",
}
"""A key's state in an office admin's words: the service says active / live / retired."""

NO_OVERVIEW = Overview(issuers=[], verifiers=[], clients=[], keys=[], record_count=0)
"""What the tables show before the first ``admin_list`` answer."""


def _table(headers: list[str], id_columns: tuple[int, ...] = ()) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.verticalHeader().setVisible(False)
    table.setAlternatingRowColors(True)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    for column in id_columns:  # ids are shown whole, never cut off
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    return table


def _fill(table: QTableWidget, rows: list[list[str]]) -> None:
    selected = table.currentRow()
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))
    if 0 <= selected < len(rows):
        table.selectRow(selected)


def selected_text(table: QTableWidget, column: int) -> str | None:
    """The selected row's text in ``column``, or None when no row is selected."""
    rows = table.selectionModel().selectedRows() if table.selectionModel() else []
    row = rows[0].row() if rows else -1
    item = table.item(row, column) if row >= 0 else None
    return item.text() if item else None


class OverviewTabs(QTabWidget):
    """The tables (``issuers``, ``verifiers``, ``clients``, ``keys``) and their buttons.

    Signals: `copied(str)` after Copy id put an id on the clipboard.
    """

    copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.overview: Overview = NO_OVERVIEW
        self.own_ids: set[str] = set()
        """The clients this app signs in with: never offered for disabling."""
        self.issuers = _table(["Payroll provider", "Issuer id", "Payslips", "Withdrawn"], (1,))
        self.verifiers = _table(["Front desk", "Front desk id", "Added"], (1,))
        self.clients = _table(
            ["Client id", "Can", "Name", "State", "Added", "Note", "Last used", "Signs in until"],
            (0,),
        )
        self.keys = _table(["Key version", "Payroll provider", "State", "Added", "Retired"], (0, 2))
        self.id_columns = {
            "issuers": (self.issuers, 1),
            "verifiers": (self.verifiers, 1),
            "clients": (self.clients, 0),
            "keys": (self.keys, 0),
        }
        """Each tab's table and the column holding its rows' ids."""
        self.copy_buttons: dict[str, QPushButton] = {}
        self.empty_hints: dict[str, QWidget] = {}

        self.rotate_button = QPushButton("Give new key")
        self.rotate_button.setToolTip(
            "Makes a new key version for the selected payroll provider; payslips already issued "
            "stay verifiable."
        )
        self.pair_button = QPushButton("Pair a phone…")  # issue 10: app/ui/admin/pair_dialog.py
        self.disable_button = QPushButton("Disable client…")
        self.retire_button = QPushButton("Retire key…")
        self._page(
            "issuers",
            "Payroll providers",
            [self.rotate_button],
            "No payroll providers yet. Type a name above and press “Add payroll provider”.",
        )
        self._page(
            "verifiers",
            "Front desks",
            [self.pair_button],
            "No front desks yet. Type a name above and press “Add front desk”.",
        )
        self._page("clients", "Clients", [self.disable_button], "")
        self._page("keys", "Keys", [self.retire_button], "No keys yet.")

    def _page(self, key: str, title: str, buttons: list[QPushButton], empty: str) -> None:
        table, _ = self.id_columns[key]
        page = QWidget()
        box = QVBoxLayout(page)
        hint = label(empty, "hint")
        hint.hide()
        self.empty_hints[key] = hint
        box.addWidget(hint)
        box.addWidget(table, 1)
        row = QHBoxLayout()
        copy = QPushButton("Copy id")
        copy.setObjectName(f"copyId:{key}")
        copy.clicked.connect(lambda: self._copy_id(key))
        self.copy_buttons[key] = copy
        row.addWidget(copy)
        for button in buttons:
            row.addWidget(button)
        row.addStretch(1)
        box.addLayout(row)
        self.addTab(page, title)

    def _copy_id(self, key: str) -> None:
        value = selected_text(*self.id_columns[key])
        if value:
            QGuiApplication.clipboard().setText(value)
            self.copied.emit(value)

    def show_overview(self, overview: Overview, own_ids: set[str]) -> None:
        """Fill every table from an ``admin_list`` answer; ``own_ids``: this app's clients."""
        self.overview = overview
        self.own_ids = set(own_ids)
        issuers, verifiers = overview.issuers, overview.verifiers
        now = datetime.now(UTC)
        _fill(
            self.issuers,
            [[i.name, i.issuer_id, str(i.records), str(i.revoked)] for i in issuers],
        )
        _fill(
            self.verifiers,
            [[v.name, v.verifier_id, local_time(v.created_at)] for v in verifiers],
        )
        _fill(
            self.clients,
            [
                [
                    c.client_id,
                    ROLES.get(c.role, c.role),
                    c.name,
                    client_state(c, now),
                    local_time(c.created_at),
                    "Used by this app" if c.client_id in own_ids else "",
                    local_time(c.last_used_at) if c.last_used_at else "Not yet",
                    local_time(c.expires_at) if c.expires_at else "",
                ]
                for c in overview.clients
            ],
        )
        names = {i.issuer_id: i.name for i in issuers}
        _fill(
            self.keys,
            [
                [
                    k.key_version,
                    names.get(k.issuer_id, k.issuer_id),
                    KEY_STATES.get(k.state, k.state.capitalize()),
                    local_time(k.created_at),
                    local_time(k.retired_at),
                ]
                for k in overview.keys
            ],
        )
        for key, count in (("issuers", len(issuers)), ("verifiers", len(verifiers))):
            self.empty_hints[key].setVisible(count == 0)
        self.setTabText(0, f"Payroll providers ({len(issuers)})")
        self.setTabText(1, f"Front desks ({len(verifiers)})")

    def follow_selection(self, admin: bool) -> None:
        """Each button is enabled only while its tab has a row it can act on (and, for the
        actions, only with an admin sign-in)."""
        self.rotate_button.setEnabled(admin and selected_text(self.issuers, 1) is not None)
        key = self.key(selected_text(self.keys, 0))
        self.retire_button.setEnabled(admin and key is not None and key.state != KeyState.RETIRED)
        client = self.client(selected_text(self.clients, 0))
        own = client is not None and client.client_id in self.own_ids
        # Left enabled for the app's own clients: pressing it says why it will not (a greyed
        # button would not).
        self.disable_button.setEnabled(admin and client is not None and not client.disabled)
        phone = client is not None and is_phone(client)
        self.disable_button.setText("Remove phone…" if phone else "Disable client…")
        self.disable_button.setToolTip(
            "This app signs in with this client, so it cannot be disabled from here."
            if own
            else "Stops the selected phone from verifying, at once and for good."
            if phone
            else "Stops the selected client from signing in, at once and for good."
        )
        for name, (table, column) in self.id_columns.items():
            self.copy_buttons[name].setEnabled(selected_text(table, column) is not None)

    def key(self, version: str | None) -> KeySummary | None:
        return next((k for k in self.overview.keys if k.key_version == version), None)

    def client(self, client_id: str | None) -> ClientSummary | None:
        return next((c for c in self.overview.clients if c.client_id == client_id), None)

    def is_last_admin(self, client_id: str) -> bool:
        """Disabling this client would leave no active admin client."""
        client = self.client(client_id)
        active_admins = [c for c in self.overview.clients if c.role == "admin" and not c.disabled]
        return client is not None and client.role == "admin" and len(active_admins) <= 1


def is_phone(client: ClientSummary) -> bool:
    """A paired phone's client: the only kind that expires (service.domain.pairing)."""
    return client.expires_at is not None


def client_state(client: ClientSummary, now: datetime) -> str:
    """Disabled, Expired (a phone past its time: pair it again) or Active."""
    if client.disabled:
        return "Disabled"
    until = local_moment(client.expires_at) if client.expires_at else None
    return "Expired" if until is not None and until <= now else "Active"


def _payslips(count: int) -> str:
    return "1 payslip" if count == 1 else f"{count:,} payslips"


def retire_consequence(overview: Overview, key_version: str) -> str:
    """What retiring a key destroys, counted (issue 35: the confirmation said "payslips
    encrypted with it can never be verified again" without saying how many). From the overview
    the screen holds; a service that does not count per key gets the old sentence."""
    key = next((k for k in overview.keys if k.key_version == key_version), None)
    if key is None or key.records is None:
        return "Retiring destroys this key: payslips encrypted with it can never be verified again."
    words = (
        f"Retiring destroys this key: {_payslips(key.records)} registered with it (and not "
        f"revoked) will never verify again."
        if key.records
        else "No payslip that is not revoked was registered with this key, so retiring it "
        "makes none unverifiable."
    )
    issuer = next((i for i in overview.issuers if i.issuer_id == key.issuer_id), None)
    if issuer is not None and issuer.unpinned:
        words += (
            f" Up to {issuer.unpinned:,} more of {issuer.name}'s payslips may be lost too: the "
            "service has not noted their key yet (they were registered without naming it and "
            "not verified since)."
        )
    return words


def select_row(table: QTableWidget, text: str, column: int = 0) -> bool:
    """Select the row whose ``column`` shows ``text`` (keyboard users' search and tests)."""
    for row in range(table.rowCount()):
        item = table.item(row, column)
        if item is not None and item.text() == text:
            table.selectRow(row)
            return True
    return False
