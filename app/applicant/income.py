"""The income a set of payslips proves (PROTOCOL §10), and a rent or repayment's share of it.

Only VERIFIED documents count, each payslip once (a duplicate is not two pays), and only when
they share one currency and one pay frequency: a mean of weekly and monthly pays, or of AUD and
NZD, is no income anyone earns, so the set then proves none and says why.

per year = mean amount per payslip x periods per year, in minor units rounded half up;
per month = per year / 12, rounded the same way. Exact fractions throughout, no floats.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from fractions import Fraction
from typing import Literal

from app.applicant.documents import Document, Payslip
from app.document.money import format_minor

PERIODS_PER_YEAR: dict[str, int] = {
    "weekly": 52,
    "fortnightly": 26,
    "four_weekly": 13,
    "semi_monthly": 24,
    "monthly": 12,
    "quarterly": 4,
}
_WORDS = {
    "weekly": "weekly",
    "fortnightly": "fortnightly",
    "four_weekly": "four-weekly",
    "semi_monthly": "half-monthly",
    "monthly": "monthly",
    "quarterly": "quarterly",
}
Per = Literal["week", "fortnight", "month"]
PER_YEAR: dict[Per, int] = {"week": 52, "fortnight": 26, "month": 12}
RULE_OF_THUMB_PERCENT = 30
"""The usual "housing costs at most 30% of income" guide: shown as a reference, never decides."""


def half_up(value: Fraction) -> int:
    """Round to an integer, halves away from zero (as ``Decimal.ROUND_HALF_UP``)."""
    magnitude = (abs(value.numerator) * 2 + value.denominator) // (2 * value.denominator)
    return magnitude if value >= 0 else -magnitude


def _one_month_after(start: date) -> date:
    year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
    return date(year, month, min(start.day, calendar.monthrange(year, month)[1]))


def frequency_of(payslip: Payslip) -> str | None:
    """The schema's pay frequency, else the one its period length shows (7, 14, 28 days; 28-31
    days that span one calendar month are monthly, so a February month is not four-weekly)."""
    if payslip.pay_frequency in PERIODS_PER_YEAR:
        return payslip.pay_frequency
    start, end = payslip.period_start, payslip.period_end
    if start is None or end is None:
        return None
    days = (end - start).days + 1
    if 28 <= days <= 31 and end + timedelta(days=1) == _one_month_after(start):
        return "monthly"
    return {7: "weekly", 14: "fortnightly", 28: "four_weekly"}.get(days)


@dataclass(frozen=True)
class Income:
    currency: str
    frequency: str
    periods_per_year: int
    payslips: int
    gross_per_pay_minor: int
    net_per_pay_minor: int
    gross_per_year_minor: int
    net_per_year_minor: int
    gross_per_month_minor: int
    net_per_month_minor: int

    def explanation(self) -> str:
        """How it was worked out, in one sentence."""
        word = _WORDS.get(self.frequency, self.frequency)
        gross, net = self.money(self.gross_per_pay_minor), self.money(self.net_per_pay_minor)
        pay = f"{gross} gross, {net} net"
        if self.payslips == 1:
            what = f"The pay of one {word} payslip ({pay})"
        else:
            what = f"The average of {self.payslips} {word} payslips ({pay})"
        return f"{what} × {self.periods_per_year} pays a year; a month is a twelfth of the year."

    def money(self, minor: int) -> str:
        return format_minor(minor, self.currency)

    def wire(self) -> dict[str, object]:
        return {
            "currency": self.currency,
            "periods_per_year": self.periods_per_year,
            "gross_per_year_minor": self.gross_per_year_minor,
            "net_per_year_minor": self.net_per_year_minor,
            "net_per_month_minor": self.net_per_month_minor,
        }


@dataclass(frozen=True)
class IncomeResult:
    income: Income | None
    why_none: str | None = None


def counted(documents: Sequence[Document]) -> list[Payslip]:
    """The payslips income and neighbour checks read: VERIFIED, each reference once."""
    seen: set[str | None] = set()
    out: list[Payslip] = []
    for doc in documents:
        if doc.verified and doc.payslip is not None and doc.service_reference not in seen:
            seen.add(doc.service_reference)
            out.append(doc.payslip)
    return out


def income_of(documents: Sequence[Document]) -> IncomeResult:
    payslips = counted(documents)
    if not payslips:
        return IncomeResult(None, "No payslip is VERIFIED, so no income is proved.")
    currencies = sorted({p.currency for p in payslips})
    if len(currencies) > 1:
        return IncomeResult(
            None, f"The payslips are in different currencies ({', '.join(currencies)})."
        )
    frequencies = {frequency_of(p) for p in payslips}
    if None in frequencies:
        return IncomeResult(None, "A payslip shows neither its pay frequency nor a whole period.")
    if len(frequencies) > 1:
        return IncomeResult(None, "The payslips are for different pay frequencies.")
    grosses = [p.gross_minor for p in payslips]
    nets = [p.net_minor for p in payslips]
    if any(v is None for v in grosses + nets):
        return IncomeResult(None, "A payslip shows no gross or net pay.")
    frequency = frequencies.pop()
    assert frequency is not None
    periods = PERIODS_PER_YEAR[frequency]
    gross = Fraction(sum(v for v in grosses if v is not None), len(payslips))
    net = Fraction(sum(v for v in nets if v is not None), len(payslips))
    gross_year, net_year = half_up(gross * periods), half_up(net * periods)
    return IncomeResult(
        Income(
            currency=currencies[0],
            frequency=frequency,
            periods_per_year=periods,
            payslips=len(payslips),
            gross_per_pay_minor=half_up(gross),
            net_per_pay_minor=half_up(net),
            gross_per_year_minor=gross_year,
            net_per_year_minor=net_year,
            gross_per_month_minor=half_up(Fraction(gross_year, 12)),
            net_per_month_minor=half_up(Fraction(net_year, 12)),
        )
    )


def share_of_net(amount_minor: int, per: Per, income: Income) -> int | None:
    """A rent or repayment of ``amount_minor`` per week, fortnight or month as a whole percentage
    of the net income (half up), or None when the income is not positive."""
    if income.net_per_year_minor <= 0 or amount_minor < 0:
        return None
    return half_up(Fraction(amount_minor * PER_YEAR[per] * 100, income.net_per_year_minor))


def affordability_sentence(amount_minor: int, per: Per, income: Income, what: str = "Rent") -> str:
    share = share_of_net(amount_minor, per, income)
    if share is None:
        return f"{what} cannot be compared: the payslips show no net income."
    return (
        f"{what} of {format_minor(amount_minor, income.currency)} a {per} is {share}% of net "
        f"income (a common guide is at most {RULE_OF_THUMB_PERCENT}%; it is a reference, not a "
        "decision)."
    )
