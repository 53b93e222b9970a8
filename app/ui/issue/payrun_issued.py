"""The pay-run tab's answer when rows of a run were issued before (issue 35, point 5).

The run stopped before registering anything (`app.issuer.ledger.AlreadyIssued`); this box says
so in words ("5 of these payslips were issued on 28 Nov 2026 into …/out1") and offers what a
person may mean: open that folder (the badges are there), skip those rows, revoke the earlier
ones (a confirmation names each: external id and period, nothing the screen did not show), or
issue them again on purpose (a confirmation says both sets would verify). Confirmations are real
message boxes opened without blocking; revoking runs off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QFrame,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.api.client import ApiClient
from app.issuer.ledger import AlreadyIssued, Issued, Ledger, revoke_issued
from app.issuer.row_status import RowStatus
from app.ui.widgets.staff_style import label, plural, set_status
from app.ui.widgets.tasks import TaskRunner

NAMED_AT_MOST = 12
"""Payslips named one per line in a confirmation; the rest are counted."""
BOX_STYLE = (
    "QFrame#issuedBefore{background:#fff4ce;border:1px solid #c19c00;border-radius:8px;}"
    "QLabel{color:#3b2f00;}"
)


def named(items: list[Issued]) -> str:
    """One line per payslip (external id and period), at most NAMED_AT_MOST of them."""
    lines = [f"• {item.external_id}: {item.period_words}" for item in items[:NAMED_AT_MOST]]
    if len(items) > NAMED_AT_MOST:
        lines.append(f"… and {len(items) - NAMED_AT_MOST} more")
    return "\n".join(lines)


TableRow = tuple[int, str, str, str, str]
"""A results-table row: number, external id, status, reference, reason."""


def registered(rows: list[TableRow]) -> bool:
    """True when one of `rows` was registered (so it may be revoked)."""
    return any(row[2] in (RowStatus.CREATED, RowStatus.DUPLICATE) for row in rows)


def not_revoked(rows: list[TableRow], issuer: tuple[ApiClient, Ledger] | None) -> list[Issued]:
    """The payslips of `rows` this app registered (its ledger) and has not revoked."""
    references = {row[3] for row in rows} - {""}
    if issuer is None or not references:
        return []
    return [i for i in issuer[1].entries() if i.reference in references and not i.revoked_on]


class IssuedBefore(QFrame):
    """Hidden until a run meets payslips issued before. Signals: `run_requested(str)` with
    "skip" or "again" (the tab starts the run that way), `revoked(int)` after a revocation."""

    run_requested = Signal(str)
    revoked = Signal(int)

    def __init__(
        self, tasks: TaskRunner, open_folder: Callable[[QUrl], object], parent: QWidget
    ) -> None:
        super().__init__(parent)
        self.setObjectName("issuedBefore")
        self.setStyleSheet(BOX_STYLE)
        self.tasks = tasks
        self.open_folder = open_folder
        self.found: AlreadyIssued | None = None
        self._revoke_with: tuple[ApiClient, Ledger] | None = None
        self.confirmation: QMessageBox | None = None
        """The confirmation last opened; `confirm_button` is its action (not Cancel)."""
        self.confirm_button: QAbstractButton | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        self.words = label("", "issuedBeforeWords")
        self.words.setStyleSheet("font-weight:600;")
        layout.addWidget(self.words)
        buttons = QHBoxLayout()
        self.open_button = QPushButton("Open that folder")
        self.skip_button = QPushButton("Skip them")
        self.skip_button.setToolTip("Registers only the rows not issued before.")
        self.revoke_button = QPushButton("Revoke them…")
        self.again_button = QPushButton("Issue again…")
        for button in (self.open_button, self.skip_button, self.revoke_button, self.again_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.status = label("", "hint")
        self.status.hide()
        layout.addWidget(self.status)
        self.open_button.clicked.connect(self._open)
        self.skip_button.clicked.connect(lambda: self._run("skip"))
        self.revoke_button.clicked.connect(self.confirm_revoke)
        self.again_button.clicked.connect(self.confirm_again)
        self.hide()

    def show_found(self, found: AlreadyIssued, client: ApiClient, ledger: Ledger) -> None:
        self.found = found
        self._revoke_with = (client, ledger)
        self.words.setText(
            f"Nothing was registered: {found}. Registering them again would give these "
            "employees a second, equally valid payslip."
        )
        self._say("")
        for button in (self.skip_button, self.revoke_button, self.again_button):
            button.setEnabled(True)
        self.show()

    def _say(self, text: str, *, error: bool = False) -> None:
        set_status(self.status, text, error=error)
        self.status.setVisible(bool(text))

    def clear(self) -> None:
        self.found = None
        self._revoke_with = None
        self.hide()

    def _open(self) -> None:
        if self.found is not None:
            for folder in self.found.folders:
                self.open_folder(QUrl.fromLocalFile(folder))

    def _run(self, how: str) -> None:
        self.hide()
        self.run_requested.emit(how)

    # ------------------------------------------------------------------ confirmations

    def _ask(
        self, title: str, text: str, details: str, action: str, then: Callable[[], None]
    ) -> None:
        """A question that names its payslips; Cancel is the default and the Esc answer."""
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, parent=self.window())
        box.setObjectName("issuedBeforeConfirmation")
        box.setInformativeText(details)
        yes = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.buttonClicked.connect(lambda button: then() if button is yes else None)
        self.confirmation, self.confirm_button = box, yes
        box.open()

    def confirm_revoke(
        self, chosen: list[Issued] | None = None, issuer: tuple[ApiClient, Ledger] | None = None
    ) -> None:
        """Name every payslip to revoke (the ones met before, or `chosen` ones this app issued
        with `issuer`); Revoke revokes them at the service and in the ledger."""
        if chosen is not None and issuer is not None:
            self._revoke_with = issuer
            earlier, what = chosen, "chosen"
        elif self.found is not None:
            earlier, what = self.found.earlier, "issued before"
        else:
            return
        if not earlier:
            return
        self._ask(
            "Revoke payslips",
            f"Revoke {plural(len(earlier), 'payslip')} {what}? Checking "
            f"{'it' if len(earlier) == 1 else 'them'} will then say NOT VERIFIED (revoked); "
            "this cannot be undone.",
            named(earlier),
            f"Revoke {plural(len(earlier), 'payslip')}",
            lambda: self._revoke(earlier),
        )

    def confirm_again(self) -> None:
        if self.found is None:
            return
        earlier = self.found.earlier
        self._ask(
            "Issue again",
            f"Issue {plural(len(earlier), 'payslip')} a second time? The earlier ones stay "
            "valid unless they are revoked: both would verify.",
            named(earlier),
            "Issue again",
            lambda: self._run("again"),
        )

    def _revoke(self, earlier: list[Issued]) -> None:
        assert self._revoke_with is not None
        client, ledger = self._revoke_with
        for button in (self.skip_button, self.revoke_button, self.again_button):
            button.setEnabled(False)
        self._say(f"Revoking {plural(len(earlier), 'payslip')}…")

        def done(count: int) -> None:
            if self.found is not None and set(earlier) >= set(self.found.earlier):
                self.hide()
                self.found = None
            self.revoked.emit(count)

        def failed(exc: Exception) -> None:
            for button in (self.skip_button, self.revoke_button, self.again_button):
                button.setEnabled(True)
            self._say(
                "Revoking stopped part way; the ones revoked so far are noted. "
                f"Try again in a moment ({getattr(exc, 'code', '') or 'no answer'}).",
                error=True,
            )

        self.tasks.run(lambda: revoke_issued(client, ledger, earlier), done, failed)
