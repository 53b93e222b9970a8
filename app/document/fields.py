"""The fields §13 compares and the labels that name them: data, extendable here and only here.

A label is a whole cell of text, any case, a trailing ``:`` ignored ("YTD Gross" is not "Gross").
A *weak* label can confirm a field but never accuse a page: "Name" also heads an employer's
block, "From"/"To" head a leave table's dates, "Period" a leave period. A genuine payslip in a
layout never seen must not be called altered because such a word was read (no false alarm is
worse than a miss), so only the field's strong labels can make it ``differs``.

OTHER_LABELS are headings that are not compared but are no value either: a row of column headings
"Name | Position | Department" makes "Position" the next cell after "Name", and it must count as
another label (so the value is looked for below), not as a name that differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["money", "date", "name", "period"]
FieldName = Literal[
    "gross", "tax", "net", "payment_date", "period_start", "period_end", "employee_name"
]


@dataclass(frozen=True)
class Field:
    name: FieldName
    kind: Kind
    words: str
    """How a sentence names it ("net pay")."""
    labels: tuple[str, ...]
    weak_labels: tuple[str, ...] = ()


FIELDS: tuple[Field, ...] = (
    Field(
        "gross",
        "money",
        "gross pay",
        (
            "Gross",
            "Gross Pay",
            "Gross Earnings",
            "Gross Wages",
            "Total Gross",
            "Total Earnings",
        ),
    ),
    Field(
        "tax",
        "money",
        "tax",
        (
            "Tax",
            "Tax Withheld",
            "Income Tax",
            "PAYG",
            "PAYG Withheld",
            "PAYG Withholding",
            "PAYE",
        ),
    ),
    Field(
        "net",
        "money",
        "net pay",
        ("Net", "Net Pay", "Net Wages", "Net Amount", "Take Home Pay", "Amount Paid"),
    ),
    Field(
        "payment_date",
        "date",
        "payment date",
        ("Payment Date", "Pay Date", "Date Paid", "Paid On"),
    ),
    Field("period_start", "date", "period start", ("Period Start", "Period From"), ("From",)),
    Field("period_end", "date", "period end", ("Period End", "Period To"), ("To",)),
    Field("employee_name", "name", "employee name", ("Employee", "Employee Name"), ("Name",)),
)

PERIOD_LABELS: tuple[str, ...] = ("Pay Period",)
"""Labels whose value holds both period dates (``D to D``, ``D - D``, ``D – D``)."""
WEAK_PERIOD_LABELS: tuple[str, ...] = ("Period",)

OTHER_LABELS: tuple[str, ...] = (
    "Position", "Department", "Classification", "Employer", "Employer Name", "Company", "ABN",
    "Employee ID", "Employee No", "Employee Number", "Employee Code", "Payroll ID", "Tax Code",
    "IRD Number", "IRD", "TFN", "Description", "Item", "Type", "Hours", "Units", "Qty", "Rate",
    "Amount", "This Pay", "This Period", "Current", "YTD", "Year to Date", "Year To Date",
    "Total", "Totals", "Earnings", "Deductions", "Super", "Superannuation", "KiwiSaver",
    "Bank", "Account", "Account Name", "Account Number", "BSB", "Pay Frequency", "Pay Cycle",
    "Annual Salary", "Base Rate", "Hourly Rate", "Leave", "Balance", "Address", "Address Line",
    "Status", "Payslip", "Pay Slip", "Reference", "Date",
)  # fmt: skip


NOT_NAMES: frozenset[str] = frozenset(
    [
        "full",
        "part",
        "time",
        "casual",
        "permanent",
        "temporary",
        "contract",
        "contractor",
        "fixed",
        "term",
        "salaried",
        "salary",
        "hourly",
        "wages",
        "staff",
        "ongoing",
        "seasonal",
        "trainee",
        "apprentice",
        "director",
    ]
)
"""Words (as names are normalised) that say the value under "Employee" is no name (an
employment basis): such a value never makes the name differ."""


def label_key(text: str) -> str:
    """A cell's text as labels are compared: casefolded, single spaces, one trailing ':' off.
    (Not cached: a cache would keep pages' text, names included, for the process's life.)"""
    key = " ".join(text.split()).casefold()
    return key[:-1].rstrip() if key.endswith(":") else key


@dataclass(frozen=True)
class LabelUse:
    """What a label names: one field (or both period dates) and whether it may accuse."""

    field: FieldName | Literal["period"] | None
    weak: bool


def _table() -> dict[str, LabelUse]:
    table: dict[str, LabelUse] = {label_key(t): LabelUse(None, True) for t in OTHER_LABELS}
    for spec in FIELDS:
        table.update({label_key(t): LabelUse(spec.name, False) for t in spec.labels})
        table.update({label_key(t): LabelUse(spec.name, True) for t in spec.weak_labels})
    table.update({label_key(t): LabelUse("period", False) for t in PERIOD_LABELS})
    table.update({label_key(t): LabelUse("period", True) for t in WEAK_PERIOD_LABELS})
    return table


LABELS: dict[str, LabelUse] = _table()
"""Every known label (compared or not) by :func:`label_key`."""
FIELD_BY_NAME: dict[str, Field] = {spec.name: spec for spec in FIELDS}
