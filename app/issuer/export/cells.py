"""One cell of a payroll export, converted to the text today's pay-run layout reads.

Exports write dates day-first (`13/11/2026`) or as Excel date cells, and money as `$3,846.15`,
`(12.50)` or `12.50-`. The row checks (`app.issuer.run.rows`) read ISO dates and plain decimals,
so every cell is normalised here first and the checks stay the same for every file kind. Money is
handled as text and `Decimal` only: a v1 `*_cents` field gets exactly the cents written (an XLSX
number cell is a binary float: read to Excel's 15 significant digits, it is the decimal the
payroll system stored). Problems raise `ValueProblem` with a message that names the expected
form, never the value.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from app.document.values import MONTHS  # one table of month names, short and long
from app.issuer.fields import ValueProblem

__all__ = ["cell_text", "date_text", "money_text"]

_TIME = r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
_DATE_RES = {
    "DD/MM/YYYY": re.compile(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})" + _TIME),
    "MM/DD/YYYY": re.compile(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})" + _TIME),
    "YYYY-MM-DD": re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})" + _TIME),
    "D MMM YYYY": re.compile(r"(\d{1,2})[ -]([A-Za-z]{3,9})\.?[ -](\d{4})" + _TIME),
}
_CENT = Decimal("0.01")
_MONEY_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_GROUPED_RE = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")
# Currency signs and codes an export may put before or after an amount.
_CURRENCY_RE = re.compile(r"^(?:A\$|NZ\$|AU\$|AUD|NZD|\$|€|£|¥)|(?:AUD|NZD)$", re.IGNORECASE)


def date_text(value: Any, date_format: str) -> str:
    """An ISO date (`2026-11-13`) from a date cell or a text in `date_format`."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    match = _DATE_RES[date_format].fullmatch(text)
    if match is None:
        if date_format != "YYYY-MM-DD" and _DATE_RES["YYYY-MM-DD"].fullmatch(text):
            match = _DATE_RES["YYYY-MM-DD"].fullmatch(text)
            date_format = "YYYY-MM-DD"
        else:
            raise ValueProblem(f"expected a date as {date_format}")
    assert match is not None
    a, b, c = match.groups()
    try:
        if date_format == "DD/MM/YYYY":
            day = dt.date(int(c), int(b), int(a))
        elif date_format == "MM/DD/YYYY":
            day = dt.date(int(c), int(a), int(b))
        elif date_format == "YYYY-MM-DD":
            day = dt.date(int(a), int(b), int(c))
        else:
            month = MONTHS.get(b.casefold())
            if month is None:
                raise ValueProblem(f"expected a date as {date_format}")
            day = dt.date(int(c), month, int(a))
    except ValueError:
        raise ValueProblem(f"expected a real calendar date as {date_format}") from None
    return day.isoformat()


def money_text(value: Any) -> str:
    """A plain decimal (`-1234.56`) from a number cell or a text such as `$1,234.56`, `(12.50)`,
    `12.50-`, `1 234.56` or `NZ$ 99`. Digits after the point are kept as written."""
    if isinstance(value, bool):
        raise ValueProblem("expected an amount such as 1234.56")
    if isinstance(value, int | float | Decimal):
        # A number cell: the decimal the payroll system stored, shown as money (2 places at
        # least, as its number format would; never rounded).
        number = Decimal(value) if isinstance(value, int | Decimal) else Decimal(_float_text(value))
        if not number.is_finite():
            raise ValueProblem("expected an amount such as 1234.56")
        if number.as_tuple().exponent > -2:  # type: ignore[operator]
            number = number.quantize(_CENT)
        return _decimal_text(number)
    text = str(value).strip().replace("\u00a0", " ").replace("\u2212", "-")
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1].strip()
    if text.endswith("-"):
        negative, text = not negative, text[:-1].strip()
    if text.startswith("-"):
        negative, text = not negative, text[1:].strip()
    text = _CURRENCY_RE.sub("", text).strip()
    if text.startswith("-") and not negative:  # "$-12.50"
        negative, text = True, text[1:]
    text = text.replace(" ", "").replace("'", "")
    if _GROUPED_RE.fullmatch(text):
        text = text.replace(",", "")
    if not _MONEY_RE.fullmatch(text):
        raise ValueProblem("expected an amount such as 1234.56")
    return f"-{text}" if negative and text.strip("0.") else text


def _float_text(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueProblem("expected an amount such as 1234.56")
    # Excel keeps 15 significant digits; more is binary noise from a formula (0.1 + 0.2).
    return _decimal_text(Decimal(f"{value:.15g}"))


def _decimal_text(value: Decimal) -> str:
    try:
        text = format(value, "f")
    except (InvalidOperation, ValueError):
        raise ValueProblem("expected an amount such as 1234.56") from None
    if not value.is_finite():
        raise ValueProblem("expected an amount such as 1234.56")
    return text


def cell_text(value: Any) -> str:
    """Any other cell as text: empty for nothing, whole numbers without `.0`, dates as ISO."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else _float_text(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time():
            return value.date().isoformat()
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)
