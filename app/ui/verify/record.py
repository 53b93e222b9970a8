"""Verification records on the verify screen (issue 23, PROTOCOL §11).

Two things the verify screen is given (a collaborator with a narrow API: it never reaches into
the screen; the screen says when a result is shown, when it goes, and which receipts to check):

* After a VERIFIED or NOT VERIFIED result, "Save verification record..." asks the service for a
  signed receipt of the same code and writes the one-page record PDF
  (:mod:`app.ui.records.record_pdf`).
  Not in kiosk mode, which opens no file dialogs. CANNOT VERIFY has nothing to record.
* A verification record that is dropped, opened, typed by a USB scanner or seen by the camera is
  no payslip code; the screen hands the receipts it holds to :meth:`RecordDesk.check`, which
  checks them against the service's published keys and says, instead of "not a payslip code",
  "Verification record: genuine, made on ... by ..." (or that it was altered).

Both talk to the service over HTTP off the GUI thread; nothing of a record is logged or kept.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import jwt
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QLabel, QWidget

from app.inputs.classify import PayslipCode
from app.receipts.check import (
    JWKS_PATH,
    ReceiptCheck,
    check_receipt,
    load_jwks,
    made_at,
    verdict_words,
)
from app.shell.context import AppContext
from app.ui.records.record_button import SAVE_TEXT, not_saved_sentence, record_button
from app.ui.records.record_pdf import desk_name, page_size_for, write_record
from app.ui.verify.result_card import ResultCard
from app.ui.widgets.tasks import TaskRunner
from app.verify.flow import Outcome
from app.verify.verdicts import RECORDABLE
from service.protocol.schemas import ReceiptClaims

log = logging.getLogger("app.verify")


def make_record(
    code: PayslipCode, client: Any, path: str, desk: str, page: Any, outcome: Outcome | None = None
) -> str:
    """Worker thread: get a receipt of the code the check sent, write the record (with what the
    ``outcome``'s document check found of the page)."""
    receipt = client.receipt(code.text).receipt
    claims = ReceiptClaims.model_validate(jwt.decode(receipt, options={"verify_signature": False}))
    document = outcome.document if outcome is not None else None
    code_only = outcome is not None and not outcome.compared
    write_record(path, receipt, claims, desk, page, document, code_only)
    return path


def _recorded(claims: ReceiptClaims) -> str:
    headline, _ = verdict_words(claims)
    facts = [f for f in (claims.issuer.name if claims.issuer else None, claims.sub) if f]
    said = f"{headline}" + (f" ({', '.join(facts)})" if facts else "")
    if claims.verified and claims.employee_name:
        said += f" for {claims.employee_name}"
    return said


def records_sentence(checks: list[ReceiptCheck]) -> tuple[str, str]:
    """What the screen says about a record, and its state: one receipt (a single check's
    record) as :func:`record_sentence`; several (an applicant's record) all checked, genuine
    only when every one is, and what each records."""
    if len(checks) == 1:
        return record_sentence(checks[0]), checks[0].state
    count = len(checks)
    for state in ("altered", "cannot_check"):
        bad = [n for n, c in enumerate(checks, 1) if c.state == state]
        if bad:
            which = ", ".join(str(n) for n in bad)
            first = checks[bad[0] - 1]
            if state == "altered":
                return (
                    f"Verification record of {count} payslips: NOT GENUINE. Receipt {which} "
                    f"of {count}: {first.reason} Do not rely on it."
                ), state
            return (
                f"Verification record of {count} payslips: cannot be checked here (receipt "
                f"{which} of {count}). {first.reason}"
            ), state
    claims = [c.claims for c in checks if c.claims is not None]
    first_made = min(claims, key=lambda c: c.iat)
    verifiers = ", ".join(dict.fromkeys(c.verifier for c in claims))
    recorded = "; ".join(_recorded(c) for c in claims)
    return (
        f"Verification record of {count} payslips: all {count} receipts genuine, made on "
        f"{made_at(first_made)} by {verifiers}. They record: {recorded}."
    ), "genuine"


def record_sentence(checked: ReceiptCheck) -> str:
    """What the screen says about a scanned or dropped verification record."""
    claims = checked.claims
    if checked.state == "genuine" and claims is not None:
        _, words = verdict_words(claims)
        said = _recorded(claims)
        return (
            f"Verification record: genuine, made on {made_at(claims)} by {claims.verifier}. "
            f"It records: {said}. {'' if claims.verified else words}"
        ).strip()
    if checked.state == "altered":
        return f"Verification record: NOT GENUINE. {checked.reason} Do not rely on it."
    return f"Verification record: cannot be checked here. {checked.reason}"


class RecordDesk(QObject):
    """The screen's record button and record recognition.

    Given the desk's context and task runner, the result card (its button goes on the card's
    bottom row through :meth:`ResultCard.add_action`) and the notice line the refusals are said
    in. The screen tells it :meth:`offer` (a result is shown), :meth:`withdraw` (it is gone or a
    new check started) and :meth:`check` (receipts found in a refused input).

    Signals:
        saved(str): a record PDF was written (its path).
        save_failed(str): it could not be (one plain sentence).
        record_checked(str): a scanned or dropped record was checked ("genuine", "altered",
            "cannot_check").
    """

    saved = Signal(str)
    save_failed = Signal(str)
    record_checked = Signal(str)

    def __init__(
        self,
        context: AppContext,
        tasks: TaskRunner,
        card: ResultCard,
        notice: QLabel,
        *,
        kiosk: bool,
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.context = context
        self.tasks = tasks
        self.card = card
        self.notice = notice
        self.kiosk = kiosk
        self._dialog_parent = parent
        self._code: PayslipCode | None = None
        self.button = record_button(
            "saveRecordButton",
            "A one-page PDF with a receipt signed by the service, to keep on file",
            self.save,
        )
        card.add_action(self.button)

    # -- saving ---------------------------------------------------------------------------------

    def offer(self, outcome: Outcome) -> None:
        """A result is on the card: offer its record when the verdict is one to keep on file
        (a receipt of the code the check sent)."""
        self._code = outcome.sent
        wanted = outcome.verdict in RECORDABLE and not self.kiosk and self._code is not None
        self.button.setVisible(wanted and not outcome.disagreement)
        self.button.setEnabled(True)
        self.button.setText(SAVE_TEXT)
        _relayout(self.card.banner, self.card)

    def withdraw(self) -> None:
        """The result is gone (or a new check started): nothing to record."""
        self._code = None
        self.button.hide()

    def save(self, path: str | None = None) -> None:
        """Ask where (unless `path`), then get the receipt and write the record off-thread."""
        code = self._code
        if code is None:
            return
        if path is None:
            reference = self.card.outcome and self.card.outcome.result
            stem = reference.service_reference[:8] if reference else "payslip"
            path, _ = QFileDialog.getSaveFileName(
                self._dialog_parent,
                "Save verification record",
                str(Path.home() / f"verification-record-{stem}.pdf"),
                "PDF (*.pdf)",
            )
            if not path:
                return
        client = self.context.verifier
        outcome = self.card.outcome
        desk = desk_name(self.context.settings.extra)
        page = page_size_for()
        chosen = path
        self.button.setEnabled(False)
        self.button.setText("Saving…")
        self.tasks.run(
            lambda: make_record(code, client, chosen, desk, page, outcome),
            self._saved,
            self._failed,
        )

    def _saved(self, path: str) -> None:
        self.button.setText("Record saved")
        self.card.set_hint(f"Verification record saved as {Path(path).name}")
        self.saved.emit(path)

    def _failed(self, exc: Exception) -> None:
        log.info("verification record not saved: %s", getattr(exc, "code", type(exc).__name__))
        self.button.setEnabled(True)
        self.button.setText(SAVE_TEXT)
        sentence = not_saved_sentence(exc, "something went wrong while making it")
        self.card.set_hint(sentence)
        self.save_failed.emit(sentence)

    # -- recognising a record -------------------------------------------------------------------

    def check(self, receipts: list[str]) -> None:
        """The screen refused an input and said so in its amber notice: check the receipts it
        held (none: the plain refusal stands) and recolour the notice for what they turn out
        to be."""
        _tone(self.notice, "")
        found = list(receipts)
        if not found:
            return
        self._say("Checking the verification record…", "checking")
        url = self.context.service_url.rstrip("/") + JWKS_PATH
        trust = self.context.own_options().get("verify")  # an office certificate: pinned

        def check_all() -> list[ReceiptCheck]:
            jwks = load_jwks(url, trust)  # one fetch of the keys for every receipt on the record
            return [check_receipt(receipt, jwks) for receipt in found]

        self.tasks.run(check_all, self._checked, self._not_checked)

    def _checked(self, checks: list[ReceiptCheck]) -> None:
        sentence, state = records_sentence(checks)
        self._say(sentence, state)
        self.record_checked.emit(state)

    def _not_checked(self, exc: Exception) -> None:
        self._say(
            "Verification record: cannot be checked now (the service's keys could not be "
            "fetched). Try again in a moment.",
            "cannot_check",
        )
        self.record_checked.emit("cannot_check")

    def _say(self, sentence: str, tone: str) -> None:
        """Say it in the notice, coloured by what the record is: a genuine record in the
        verified green, an altered one in red, one that cannot be checked in the warning amber
        (issue 35: a genuine record was shown in the amber "this is no payslip code" box)."""
        notice = self.notice
        _tone(notice, tone)
        notice.setText(sentence)
        notice.show()
        widget = notice.parentWidget()
        while widget is not None and not widget.isWindow():
            _relayout(widget)
            widget = widget.parentWidget()


def _tone(notice: QWidget, tone: str) -> None:
    """Set the notice's ``tone`` property ("" is the refusal's amber) and restyle it."""
    notice.setProperty("tone", tone)
    notice.style().unpolish(notice)
    notice.style().polish(notice)


def _relayout(*widgets: QWidget) -> None:
    """Lay out now, not on the next pass: a widget shown or grown after the card was laid out."""
    for widget in widgets:
        layout = widget.layout()
        if layout is not None:
            layout.invalidate()
            layout.activate()
