"""One payslip field as an input: the right widget for its kind, its label, and its error line.

The form generator (:mod:`app.ui.issue.form`) decides which fields exist and where; this module
decides how one field is typed in: a choice is a list (AUD and NZD first among currencies), a
date is a picker that can stay empty, money has a $ sign and takes only amounts, anything else is
a line of text. The labels are a payroll officer's words, not the schema's tax-office
abbreviations, and the service's terse messages are said the way a person would say them.
"""

from __future__ import annotations

from PySide6.QtCore import QDate, QRegularExpression, Qt, Signal
from PySide6.QtGui import QMouseEvent, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QComboBox,
    QDateEdit,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from app.issuer.fields import FieldSpec

ERROR_STYLE = "color:#b3261e;"
#: Plain words for fields whose schema titles are tax-office abbreviations (kept in the tooltip).
FRIENDLY_LABELS = {
    "gross": "Gross pay",
    "gross_cents": "Gross pay",
    "net": "Net pay",
    "net_cents": "Net pay",
    "paygw": "Tax withheld (PAYG)",
    "paygw_cents": "Tax withheld (PAYG)",
    "paye": "Tax withheld (PAYE)",
    "paye_cents": "Tax withheld (PAYE)",
    "ytd_gross": "Gross pay, year to date",
    "ytd_gross_cents": "Gross pay, year to date",
    "ytd_paygw": "Tax withheld, year to date",
    "ytd_paygw_cents": "Tax withheld, year to date",
    "ytd_paye": "Tax withheld, year to date",
    "ytd_paye_cents": "Tax withheld, year to date",
    "ytd": "Year to date",
    "esct": "Employer superannuation contribution tax (ESCT)",
    "stsl_withholding": "Study and training loan withholding",
}
#: The service's terse messages, as a person would say them (tests match on the originals).
PLAIN_ERRORS = {
    "required": "Please fill this in",
    "required when type is allowance": ("Please choose the kind of allowance"),
}
#: Currencies offered first; the full ISO list follows.
FIRST_CURRENCIES = ("AUD", "NZD")
EMPTY_DATE = QDate(1900, 1, 1)


class DateEdit(QDateEdit):
    """A date picker that can be empty (shown blank) until the user picks a date."""

    def __init__(self) -> None:
        super().__init__()
        self.setCalendarPopup(True)
        self.setDisplayFormat("d MMM yyyy")
        self.setMinimumDate(EMPTY_DATE)
        self.setSpecialValueText("Choose a date")
        self.setDate(EMPTY_DATE)

    def is_empty(self) -> bool:
        return self.date() == EMPTY_DATE

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        if self.is_empty():  # open the calendar at today, not in 1900
            self.setDate(QDate.currentDate())
        super().mousePressEvent(event)


class FieldEditor(QWidget):
    """One input with its label text, a hint, and an inline error line under it."""

    changed = Signal()

    def __init__(self, spec: FieldSpec, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.path = path
        self.setObjectName(f"field:{path}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        self.combo: QComboBox | None = None
        self.edit: QLineEdit | None = None
        self.date: DateEdit | None = None
        if spec.kind == "choice":
            self.combo = QComboBox()
            compact_combo(self.combo)
            self.combo.addItem("— choose —" if spec.required else "", "")
            choices = list(spec.choices)
            if spec.name == "currency":
                choices = [c for c in FIRST_CURRENCIES if c in choices] + [
                    c for c in choices if c not in FIRST_CURRENCIES
                ]
            for choice in choices:
                text = choice if spec.name == "currency" else choice.replace("_", " ").capitalize()
                self.combo.addItem(text, choice)
            self.combo.currentIndexChanged.connect(lambda _=0: self.changed.emit())
            self.combo.setMaximumWidth(340)
            layout.addWidget(self.combo)
        elif spec.kind == "date":
            self.date = DateEdit()
            self.date.setObjectName(f"date:{path}")
            self.date.dateChanged.connect(lambda _=None: self.changed.emit())
            self.date.setMaximumWidth(240)
            layout.addWidget(self.date)
        elif spec.kind == "cents" or spec.is_money:
            row = QHBoxLayout()
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(6)
            sign = QLabel("$")
            sign.setObjectName("fieldLabel")
            self.edit = QLineEdit()
            self.edit.setPlaceholderText("0.00")
            self.edit.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.edit.setValidator(
                QRegularExpressionValidator(QRegularExpression(r"-?[0-9][0-9,]*\.?[0-9]{0,2}|-?"))
            )
            self.edit.setMaximumWidth(220)
            self.edit.textChanged.connect(lambda _="": self.changed.emit())
            row.addWidget(sign)
            row.addWidget(self.edit, 1)
            row.addStretch(0)
            layout.addLayout(row)
        else:
            self.edit = QLineEdit()
            self.edit.setPlaceholderText(_placeholder(spec))
            if spec.max_length:
                self.edit.setMaxLength(spec.max_length)
            self.edit.textChanged.connect(lambda _="": self.changed.emit())
            layout.addWidget(self.edit)
        self.error = QLabel("")
        self.error.setObjectName(f"error:{path}")
        self.error.setStyleSheet(ERROR_STYLE)
        tip = f"{spec.label}" + (f": {spec.description}" if spec.description else "")
        self.input.setToolTip(tip)
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)

    @property
    def label_text(self) -> str:
        text = FRIENDLY_LABELS.get(self.spec.name, self.spec.label)
        return text + (" *" if self.spec.required else "")

    @property
    def input(self) -> QWidget:
        widget = self.combo or self.date or self.edit
        assert widget is not None
        return widget

    def text(self) -> str:
        if self.combo is not None:
            return str(self.combo.currentData() or "")
        if self.date is not None:
            return "" if self.date.is_empty() else self.date.date().toString("yyyy-MM-dd")
        assert self.edit is not None
        return self.edit.text()

    def set_text(self, value: str) -> None:
        if self.combo is not None:
            index = self.combo.findData(value)
            self.combo.setCurrentIndex(max(index, 0))
        elif self.date is not None:
            picked = QDate.fromString(value, "yyyy-MM-dd")
            self.date.setDate(picked if picked.isValid() else EMPTY_DATE)
        else:
            assert self.edit is not None
            self.edit.setText(value)

    def set_error(self, message: str) -> None:
        self.error.setText(PLAIN_ERRORS.get(message, message))
        self.error.setVisible(bool(message))
        widget = self.input
        widget.setProperty("invalid", bool(message))
        widget.style().unpolish(widget)
        widget.style().polish(widget)


def compact_combo(combo: QComboBox) -> None:
    """Let a combo box be narrower than its longest choice, so the form never scrolls sideways."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(8)


def _placeholder(spec: FieldSpec) -> str:
    if spec.kind == "date":
        return "YYYY-MM-DD"
    if spec.kind == "cents" or spec.is_money:
        return "0.00"
    if spec.kind in ("quantity", "decimal"):
        return "e.g. 38"
    if spec.kind == "integer":
        return "whole number"
    return ""
