"""The result card: the verdict *is* the screen; everything else sits below it, folded.

The verdict panel takes at least half of the visible height (the verify screen tells it how much
there is, :meth:`ResultCard.set_available_height`) and says VERIFIED, NOT VERIFIED or CANNOT
VERIFY with colour, icon and words together, plus one instruction. A VERIFIED panel also holds
what the person at the desk compares with the paper: the employee's name, the net pay, the
payment date and the issuer. A NOT VERIFIED panel holds the reason and, when known, the issuer's
name, and nothing else: no payslip figures and no employee data anywhere on the card, so a
revoked or forged payslip can never look like a valid one; an altered page (PROTOCOL §13) shows
one sentence per changed field and the compared fields only (registered and shown), nothing
else of the employee. A VERIFIED panel says what the document check found of the printed
figures (they match, the page could not be compared, or only a code was read). CANNOT VERIFY has
"Try again".

Below the panel: for VERIFIED the payslip and the employee (bank account and IRD number masked
until revealed), collapsible; for every verdict a collapsed "Details for support" with the codes,
request ids, references and times (local, to the minute), copyable. Every label is plain text:
payslip fields come from an issuer and must never be able to inject markup into the screen.

Nothing shown here is logged or written anywhere; :meth:`ResultCard.clear` drops the widgets that
held it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.document.compare import DocumentCheck
from app.ui.verify.document_section import compared_section
from app.ui.verify.verdict_panel import Banner
from app.ui.widgets.card_parts import Fold, Section, clear_layout, plain_label
from app.ui.widgets.style import VERDICT_TONES, type_scale
from app.verify.flow import Attempt, Outcome
from app.verify.presentation import (
    employee_lines,
    line_items,
    long_date,
    shows_payslip_data,
    summary_lines,
    timestamp,
)
from app.verify.verdicts import meaning_of, standing
from service.protocol.schemas import EmployeePii, VerificationResult
from service.protocol.vocabulary import Verdict

SLOW_TEXT = "The service is slow to answer"
CHECKING_DOCUMENT = "Checking the document…"
COMPARE_FIRST = "Accept if the paper shows these figures."
COMPARING = "The printed figures are being compared with the registered payslip."
VERDICT_SHARE = 0.55
"""Share of the visible height the verdict panel takes (at least half, issue 9)."""
ANOTHER_CODE_HINT = "Another code is in view: press Next to check it"
_KEY_LINES = frozenset({"Net pay"})


class ResultCard(QWidget):
    """Shows one verification outcome, or the "checking" state while it is on its way.

    Signals:
        next_requested(): Next was pressed; the owner clears the card and resumes scanning.
        retry_requested(): "Try again" was pressed after CANNOT VERIFY.
        shown(str): a final outcome is on screen; carries its state ("verified",
            "not_verified" or "cannot_verify"). The latency bench and the tests wait on it.
    """

    next_requested = Signal()
    retry_requested = Signal()
    shown = Signal(str)

    def __init__(self, kiosk: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("resultCard")
        self.setAccessibleName("Verification result")
        self.kiosk = kiosk
        self._reveal = False
        self._employee: EmployeePii | None = None
        self._employee_section: Section | None = None
        self._reveal_button: QPushButton | None = None
        self._available = 0
        self._at_least = 0
        self.details: Fold | None = None
        self.support: Fold | None = None
        self.support_text = ""
        """The support details as one copyable text (codes, ids, references; no personal data)."""
        self.outcome: Outcome | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(14)
        self.banner = Banner(kiosk)
        self.banner.next_clicked.connect(self.next_requested)
        self.banner.retry_clicked.connect(self.retry_requested)
        layout.addWidget(self.banner)
        self.body = QVBoxLayout()
        self.body.setSpacing(14)
        layout.addLayout(self.body)
        layout.addStretch(1)
        self.banner.hide()

    # -- states -----------------------------------------------------------------------------

    def show_pending(self, *, slow: bool = False, document: bool = False) -> None:
        """The code is on its way to the service; ``slow`` once it has not answered for a while;
        ``document`` once it answered and the page is being compared (no verdict yet: it may
        still change)."""
        self._reset()
        self.outcome = None
        if document:
            words = f"{CHECKING_DOCUMENT} {COMPARING}"
        elif slow:
            words = f"{SLOW_TEXT}. If it does not answer within a few seconds, this says so."
        else:
            words = "Asking the verification service about this payslip."
        self.banner.show_verdict("pending", "CHECKING…", "Wait for the result.", words)
        self.banner.set_facts([])
        self.banner.retry_button.hide()
        self.banner.countdown.setText("")
        self.banner.show()

    def show_outcome(self, outcome: Outcome) -> None:
        """Render a final outcome: the verdict panel, then the folded details below it."""
        if outcome.verdict is None:
            raise ValueError("an input without a payslip code has no verdict to show")
        self._reset()
        self.outcome = outcome
        meaning = outcome.meaning
        tone = VERDICT_TONES[outcome.verdict]
        altered = altered_document(outcome)
        # An altered page: one sentence per changed field, both values named (PROTOCOL §13).
        words = "\n".join(altered.sentences()) if altered else meaning.words
        document = outcome.document_words if shows_payslip_data(outcome.verdict) else None
        # VERIFIED: what the document check says replaces the general words (the headline says
        # the code is genuine), so the panel still fits a 1024x600 kiosk.
        text = "" if document else words
        self.banner.show_verdict(tone, meaning.headline, _instruction(outcome), text)
        self.banner.retry_button.setVisible(outcome.verdict == Verdict.CANNOT_VERIFY)
        if shows_payslip_data(outcome.verdict) and outcome.result is not None:
            self.banner.set_document(document or "")
            self.banner.set_facts(self._key_facts(outcome.result))
            self._add_details(outcome.result)
        elif outcome.verdict == Verdict.NOT_VERIFIED:
            issuers = sorted({n for n in (_issuer_name(a) for a in outcome.attempts) if n})
            self.banner.set_facts([("Issued by", ", ".join(issuers))] if issuers else [])
            if altered:
                self.body.addWidget(compared_section(altered))
        else:
            self.banner.set_facts([])
        self._add_support(outcome)
        self.banner.show()
        self._show_new_widgets()
        self._fit_banner()
        self._relayout()
        self.shown.emit(outcome.verdict)

    def set_countdown(self, seconds: int | None) -> None:
        self.banner.countdown.setText("" if seconds is None else f"Clears in {seconds} s")

    def add_action(self, button: QPushButton) -> None:
        """A collaborator's button on the verdict panel's bottom row (it shows and hides it)."""
        self.banner.add_action(button)

    def set_hint(self, text: str) -> None:
        """A small note inside the panel (another code in view); empty hides it."""
        self.banner.hint.setText(text)
        self.banner.hint.setVisible(bool(text))

    def set_available_height(self, height: int, at_least: int = 0) -> None:
        """The visible height the card lives in; the verdict panel takes its share of it, and
        never less than ``at_least`` pixels."""
        self._available = max(0, height)
        self._at_least = max(0, at_least)
        self._fit_banner()

    def _fit_banner(self) -> None:
        if self._available <= 0:
            return
        scale = type_scale(self.kiosk) * min(2.0, max(1.0, self._available / 560))
        self.banner.set_scale(scale)
        share = round(self._available * VERDICT_SHARE)
        self.banner.setMinimumHeight(min(self._available, max(share, self._at_least)))

    def _relayout(self) -> None:
        """Lay out now rather than on the next event loop pass (no half-drawn first frame)."""
        for layout in (self.banner.layout(), self.layout()):
            if layout is not None:
                layout.activate()

    def clear(self) -> None:
        """Forget the result: widgets holding payslip or employee data are deleted."""
        self._reset()
        self.outcome = None
        self.banner.hide()
        self.banner.set_facts([])
        self.banner.headline.setText("")
        self.banner.instruction.setText("")
        self.banner.text.setText("")
        self.banner.countdown.setText("")
        self.set_hint("")

    def visible_texts(self) -> list[str]:
        """Every text a person can currently read on the card (tests assert on these)."""
        texts = []
        for label in self.findChildren(QLabel):
            if label.isVisibleTo(self) and label.text():
                texts.append(label.text())
        for button in self.findChildren(QPushButton):
            if button.isVisibleTo(self) and button.text():
                texts.append(button.text())
        return texts

    def all_texts(self) -> list[str]:
        """Every text the card holds, folded or not (privacy tests assert on these)."""
        texts = [label.text() for label in self.findChildren(QLabel) if label.text()]
        texts += [b.text() for b in self.findChildren(QPushButton) if b.text()]
        return texts + [b.toolTip() for b in self.findChildren(QWidget) if b.toolTip()]

    @property
    def revealed(self) -> bool:
        return self._reveal

    def toggle_reveal(self) -> None:
        """Show or hide the full bank account and IRD number (masked by default)."""
        self._reveal = not self._reveal
        self._render_employee()

    def copy_support_details(self) -> None:
        QGuiApplication.clipboard().setText(self.support_text)

    # -- building blocks --------------------------------------------------------------------

    def _show_new_widgets(self) -> None:
        """Show the widgets just built now, not on Qt's next event loop pass.

        A layout shows a widget added to a visible parent only later (a queued call), so for a
        moment the card would be half empty to anything reading it (tests, screen readers, the
        latency bench). Widgets hidden on purpose keep their state.
        """
        for widget in self.findChildren(QWidget):
            if not widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
                widget.show()

    def _reset(self) -> None:
        clear_layout(self.body)
        self._reveal = False
        self._employee = None
        self._employee_section = None
        self._reveal_button = None
        self.details = None
        self.support = None
        self.support_text = ""
        self.set_hint("")

    @staticmethod
    def _key_facts(result: VerificationResult) -> list[tuple[str, str]]:
        """What the desk compares with the paper, inside the green panel."""
        lines = dict(summary_lines(result))
        non_pii = result.payslip.payslip_non_pii
        employee = result.employee
        name = employee.employee_name or employee.raw or "—"
        return [
            ("Employee", name),
            ("Net pay", lines.get("Net pay", "—")),
            ("Payment date", long_date(non_pii.get("payment_date", "")) or "—"),
            ("Issued by", lines.get("Issuer") or "—"),
        ]

    def _add_details(self, result: VerificationResult) -> None:
        fold = Fold("Payslip details", expanded=not self.kiosk)
        row = QHBoxLayout()
        row.setSpacing(14)
        left = QVBoxLayout()
        left.setSpacing(14)
        payslip = Section("Payslip")
        payslip.add_pairs(summary_lines(result), emphasise=_KEY_LINES)
        left.addWidget(payslip)
        items = line_items(result.payslip.payslip_non_pii)
        if items:
            left.addWidget(self._items_section(items))
        left.addStretch(1)
        row.addLayout(left, 3)
        right = QVBoxLayout()
        right.setSpacing(14)
        self._employee = result.employee
        shown = dict(self._employee.fields())
        if shown:
            section = Section("Employee")
            if {"account_number", "ird_number"} & set(shown):
                self._reveal_button = section.add_head_button(
                    "Reveal numbers",
                    "Show the full bank account and IRD number until this clears",
                    self.toggle_reveal,
                )
            self._employee_section = section
            self._render_employee()
            right.addWidget(section)
        right.addStretch(1)
        row.addLayout(right, 2)
        fold.body_layout.addLayout(row)
        self.details = fold
        self.body.addWidget(fold)

    def _render_employee(self) -> None:
        section = self._employee_section
        if section is None or self._employee is None:
            return
        section.clear_rows()
        section.add_pairs(employee_lines(self._employee, reveal=self._reveal))
        self._show_new_widgets()
        if self._reveal_button is not None:
            self._reveal_button.setText("Hide numbers" if self._reveal else "Reveal numbers")

    def _items_section(self, items: list[tuple[str, str, str, str]]) -> Section:
        section = Section("Pay lines")
        grid = section.grid
        for column, head in enumerate(("Description", "Units × rate", "Amount")):
            label = plain_label(head.upper(), "columnHead")
            if column == 2:
                label.setAlignment(Qt.AlignmentFlag.AlignRight)
            grid.addWidget(label, 0, column)
        row = 1
        group = None
        for title, description, quantity, amount in items:
            if title != group:
                grid.addWidget(plain_label(title, "itemGroup"), row, 0, 1, 3)
                group = title
                row += 1
            grid.addWidget(plain_label(description, wrap=True), row, 0)
            grid.addWidget(plain_label(quantity, "fieldLabel"), row, 1)
            shown = plain_label(amount, "fieldValue")
            shown.setAlignment(Qt.AlignmentFlag.AlignRight)
            grid.addWidget(shown, row, 2)
            row += 1
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 0)
        return section

    def _add_support(self, outcome: Outcome) -> None:
        """Codes, request ids, references and times, folded: for a support call, not the desk."""
        pairs = _support_pairs(outcome)
        fold = Fold("Details for support", expanded=False)
        section = Section("Details for support")
        section.add_pairs(pairs)
        for label in section.findChildren(QLabel):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        section.add_head_button(
            "Copy",
            "Copy these details (no personal data) to paste into a support request",
            self.copy_support_details,
        )
        fold.body_layout.addWidget(section)
        section.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.support_text = "\n".join(f"{k}: {v}" for k, v in pairs)
        self.support = fold
        self.body.addWidget(fold)


def _instruction(outcome: Outcome) -> str:
    """VERIFIED, but the printed figures were not compared (no page, or none could be read):
    the desk is told to look before it accepts, not only further down in a sentence."""
    document = outcome.document
    unchecked = outcome.document_words and (document is None or document.status != "matches")
    if outcome.verdict == Verdict.VERIFIED and unchecked:
        return COMPARE_FIRST
    return outcome.meaning.instruction


def altered_document(outcome: Outcome) -> DocumentCheck | None:
    """The document check of an outcome whose page was altered, else None."""
    document = outcome.document
    return document if document is not None and document.status == "altered" else None


def _issuer_name(attempt: Attempt) -> str:
    if attempt.result is None:
        return ""
    return attempt.result.payslip.issuer.name


def _support_pairs(outcome: Outcome) -> list[tuple[str, str]]:
    """Label/value rows for support: never a name, an amount or an account."""
    pairs: list[tuple[str, str]] = [("Outcome", f"{outcome.headline} ({outcome.reason})")]
    several = len(outcome.attempts) > 1
    for index, attempt in enumerate(outcome.attempts):
        part = ("PDF metadata " if index == 0 else "Printed code ") if several else ""
        if attempt.result is not None:
            result = attempt.result
            payslip = result.payslip
            pairs.append((f"{part}Reference", result.service_reference))
            if several:
                state = standing(result.verified).lower()
                pairs.append((f"{part}Answer", state))
            if payslip.schema_id:
                pairs.append((f"{part}Schema", payslip.schema_id))
            if payslip.issued_at:
                pairs.append((f"{part}Issued", timestamp(payslip.issued_at)))
            if payslip.revoked_at:
                pairs.append((f"{part}Revoked", timestamp(payslip.revoked_at)))
            if result.decrypted_at:
                pairs.append((f"{part}Checked", timestamp(result.decrypted_at)))
        else:
            code = attempt.code or "-"
            pairs.append((f"{part}Code", code))
            if several:
                pairs.append((f"{part}Meaning", meaning_of(code).words))
            if attempt.request_id:
                pairs.append((f"{part}Request id", attempt.request_id))
    return pairs
