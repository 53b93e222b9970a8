"""How an applicant check reads on screen: the set's verdict, its problems, the payslips, the
income and the optional affordability line.

Pure rendering of :class:`app.applicant.rules.SetCheck` (the same result the CLI prints); the
panel (:mod:`app.ui.applicant.panel`) owns the inputs and the background work. Every text is a
plain label or a table item: payslip fields come from an issuer and never reach a rich-text
renderer. NOT VERIFIED payslips have no figures here (the domain never keeps them).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QVBoxLayout,
)

from app.applicant.income import Income, Per, affordability_sentence
from app.applicant.report import SET_WORDS
from app.applicant.rules import SetCheck
from app.document.money import minor_digits
from app.ui.widgets.card_parts import clear_layout, plain_label
from app.ui.widgets.style import PALETTES, VERDICT_TONES, Tone
from app.verify.verdicts import HEADLINES


def _banner_style(tone: Tone) -> str:
    return f"""
    QFrame#setBanner {{ background: {PALETTES[tone].strong}; border-radius: 12px; }}
    QFrame#setBanner QLabel {{ color: white; background: transparent; }}
    QLabel#setHeadline {{ font-size: 24pt; font-weight: 800; letter-spacing: 1px; }}
    QLabel#setWords {{ font-size: 12pt; }}
    QLabel#setInstruction {{ font-size: 14pt; font-weight: 700; }}
    QLabel#problem {{ font-size: 11.5pt; padding: 2px 0; }}
    """


class SetBanner(QFrame):
    """The set's verdict in the single check's three colours and words, and its problems."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("setBanner")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 14, 20, 14)
        layout.setSpacing(4)
        self.headline = plain_label("", "setHeadline")
        self.instruction = plain_label("", "setInstruction", wrap=True)
        self.words = plain_label("", "setWords", wrap=True)
        layout.addWidget(self.headline)
        layout.addWidget(self.instruction)
        layout.addWidget(self.words)
        self.problems = QVBoxLayout()
        self.problems.setSpacing(2)
        layout.addLayout(self.problems)
        self.show_waiting()

    def _tone(self, tone: Tone) -> None:
        self.setStyleSheet(_banner_style(tone))

    def show_waiting(self) -> None:
        self._tone("pending")
        self.headline.setText("Add the applicant's payslips")
        self.instruction.setText("")
        self.words.setText(
            "Drop or open PDFs, scan badges one after another, or paste codes. Each payslip is "
            "checked as it is added."
        )
        clear_layout(self.problems)

    def show_checking(self, done: int, total: int) -> None:
        self._tone("pending")
        self.headline.setText("CHECKING…")
        self.instruction.setText(f"{done} of {total} checked")
        self.words.setText("The verdict appears when every payslip has been checked.")
        clear_layout(self.problems)

    def show_check(self, check: SetCheck) -> None:
        self._tone(VERDICT_TONES[check.verdict])
        words, instruction = SET_WORDS[check.verdict]
        self.headline.setText(HEADLINES[check.verdict])
        self.instruction.setText(instruction)
        self.words.setText(words)
        clear_layout(self.problems)
        for problem in check.problems:
            self.problems.addWidget(plain_label(f"•  {problem.message}", "problem", wrap=True))


class IncomeBox(QFrame):
    """The income the VERIFIED payslips prove, how it was worked out, and the optional
    affordability line (a reference, never a decision)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("section")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.setSpacing(6)
        self.title = plain_label("", "sectionTitle")
        layout.addWidget(self.title)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(24)
        layout.addLayout(self.grid)
        self.how = plain_label("", "footnote", wrap=True)
        layout.addWidget(self.how)
        row = QHBoxLayout()
        row.addWidget(plain_label("Rent or repayment", "fieldLabel"))
        self.amount = QLineEdit()
        self.amount.setObjectName("rentAmount")
        self.amount.setPlaceholderText("amount")
        self.amount.setMaximumWidth(140)
        self.amount.setAccessibleName("Rent or repayment amount")
        row.addWidget(self.amount)
        self.per = QComboBox()
        self.per.addItems(["per week", "per fortnight", "per month"])
        self.per.setAccessibleName("Rent or repayment period")
        row.addWidget(self.per)
        self.share = plain_label("", "fieldValue", wrap=True)
        row.addWidget(self.share, 1)
        layout.addLayout(row)
        self.income: Income | None = None
        self.amount.textChanged.connect(self._affordability)
        self.per.currentIndexChanged.connect(self._affordability)
        self.show_income(None, "")

    def show_income(self, income: Income | None, why_none: str) -> None:
        self.income = income
        clear_layout(self.grid)
        if income is None:  # PROTOCOL §10: a set that is not VERIFIED shows why, not a figure
            self.title.setText("INCOME")
            self.how.setText(f"No income is proved. {why_none}".strip())
            self._affordability()
            return
        self.title.setText("INCOME THESE PAYSLIPS PROVE")
        money = income.money
        for col, head in enumerate(("", "Gross", "Net")):
            self.grid.addWidget(plain_label(head, "columnHead"), 0, col)
        rows = (
            ("Per year", income.gross_per_year_minor, income.net_per_year_minor),
            ("Per month", income.gross_per_month_minor, income.net_per_month_minor),
        )
        for r, (label, gross, net) in enumerate(rows, start=1):
            self.grid.addWidget(plain_label(label, "fieldLabel"), r, 0)
            self.grid.addWidget(plain_label(money(gross), "keyValue"), r, 1)
            self.grid.addWidget(plain_label(money(net), "keyValue"), r, 2)
        self.grid.setColumnStretch(3, 1)
        self.how.setText(income.explanation() + " Only VERIFIED payslips count.")
        self._affordability()

    def _affordability(self) -> None:
        text = self.amount.text().strip().replace(",", "")
        if not text:
            self.share.setText("")
            return
        if self.income is None:
            self.share.setText("No income to compare with.")
            return
        minor = _minor(text, self.income.currency)
        if minor is None:
            self.share.setText("Type an amount such as 550 or 550.00.")
            return
        per: Per = ("week", "fortnight", "month")[self.per.currentIndex()]
        self.share.setText(affordability_sentence(minor, per, self.income))


def _minor(text: str, currency: str) -> int | None:
    """A typed amount in the income's minor units, or None when it is no plain amount."""
    whole, _, fraction = text.partition(".")
    digits = minor_digits(currency)
    if not whole.isdigit() or (fraction and (not fraction.isdigit() or len(fraction) > digits)):
        return None
    scale: int = 10**digits
    return int(whole) * scale + int((fraction or "0").ljust(digits, "0") or "0")
