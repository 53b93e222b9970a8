"""How results read to a person at the desk: money, dates, masked accounts, plain-word errors.

Qt-free so the CLI summary and the result card say exactly the same thing. Results are the
protocol's `VerificationResult`; the payslip's own fields (`payslip_non_pii`) are read by name
across all schema versions (v1 `*_cents` integers, v2 decimal strings), which is why they stay a
JSON object (see `service.protocol.schemas.PayslipView`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from app.verify.verdicts import plain_words
from service.protocol.schemas import EmployeePii, VerificationResult
from service.protocol.vocabulary import Verdict

_MINOR_UNITS = {
    "JPY": 0,
    "KRW": 0,
    "VND": 0,
    "XOF": 0,
    "XAF": 0,
    "CLP": 0,
    "ISK": 0,
    "BHD": 3,
    "KWD": 3,
    "OMR": 3,
    "JOD": 3,
    "TND": 3,
    "IQD": 3,
    "LYD": 3,
}
_SYMBOLS = {
    "AUD": "$",
    "NZD": "$",
    "USD": "$",
    "CAD": "$",
    "SGD": "$",
    "HKD": "$",
    "GBP": "£",
    "EUR": "€",
    "JPY": "¥",
    "ZAR": "R",
    "CHF": "CHF ",
}


def error_message(code: str | None) -> str:
    """Plain words for an error code, from the one table in :mod:`app.verify.verdicts`."""
    return plain_words(code)


def money(value: Any, currency: str, *, cents: bool) -> str:
    """`cents` for v1 integer amounts; v2 amounts are decimal strings shown exactly as issued."""
    try:
        amount = (
            Decimal(value) / (Decimal(10) ** _MINOR_UNITS.get(currency, 2))
            if cents
            else Decimal(str(value))
        )
    except (InvalidOperation, TypeError, ValueError):
        return f"{value} {currency}"
    places = _MINOR_UNITS.get(currency, 2) if cents else max(0, -amount.as_tuple().exponent)  # type: ignore[operator]
    sign = "-" if amount < 0 else ""
    text = f"{abs(amount):,.{places}f}"
    return f"{sign}{_SYMBOLS.get(currency, '')}{text} {currency}"


def long_date(value: Any) -> str:
    try:
        return date.fromisoformat(str(value)).strftime("%-d %b %Y")
    except ValueError:
        return str(value)


def local_moment(text: str) -> datetime | None:
    """A service time (UTC, ISO 8601; one without a zone is UTC too) in this computer's time
    zone, or None when it is no time at all."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone()


def timestamp(value: Any) -> str:
    """A service time as this computer's local time, to the minute; other text as it is."""
    text = str(value or "")
    moment = local_moment(text) if text else None
    return moment.strftime("%-d %b %Y %H:%M") if moment else text


def format_abn(value: str) -> str | None:
    """An 11-digit Australian Business Number grouped as printed (``51 824 753 556``), else None."""
    digits = "".join(c for c in value if c.isdigit())
    if len(digits) != 11 or any(c not in "0123456789 " for c in value.strip()):
        return None
    return f"{digits[:2]} {digits[2:5]} {digits[5:8]} {digits[8:]}"


def mask_account(value: str) -> str:
    """All but the last 3 digits hidden, so a screen glance or a photo leaks little.

    Used for bank accounts and IRD (tax) numbers alike."""
    digits = [c for c in value if c.isalnum()]
    if len(digits) <= 3:
        return value
    keep = 3
    out: list[str] = []
    seen = 0
    total = len(digits)
    for char in value:
        if char.isalnum():
            seen += 1
            out.append(char if seen > total - keep else "•")
        else:
            out.append(char)
    return "".join(out)


def humanise(key: str) -> str:
    words = key.removesuffix("_cents").replace("_", " ")
    replacements = {
        "paygw": "PAYG withheld",
        "paye": "PAYE",
        "ytd": "YTD",
        "stsl": "STSL",
        "abn": "ABN",
        "bsb": "BSB",
        "ird": "IRD",
        "esct": "ESCT",
        "usi": "USI",
    }
    return (
        " ".join(replacements.get(w, w) for w in words.split()).capitalize().replace("Ytd", "YTD")
    )


def amount_of(non_pii: dict[str, Any], key: str, currency: str) -> str | None:
    """The formatted amount for a v1 `<key>_cents` or a v2 `<key>` field, if present."""
    if f"{key}_cents" in non_pii:
        return money(non_pii[f"{key}_cents"], currency, cents=True)
    if key in non_pii:
        return money(non_pii[key], currency, cents=False)
    return None


def line_items(non_pii: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(section, description, quantity x rate, amount) rows for earnings, deductions and super."""
    currency = str(non_pii.get("currency", ""))
    rows: list[tuple[str, str, str, str]] = []
    sections = (
        ("Earnings", "earnings"),
        ("Salary sacrifice", "salary_sacrifice"),
        ("Deductions", "deductions"),
        ("Super", "superannuation"),
    )
    for title, key in sections:
        for item in non_pii.get(key, []) or []:
            kind = item.get("type") or item.get("contribution_type") or ""
            detail = (
                item.get("allowance_type") or item.get("leave_type") or item.get("other_category")
            )
            description = humanise(str(kind)) + (f" ({humanise(str(detail))})" if detail else "")
            qty = item.get("units")
            rate = amount_of(item, "rate", currency)
            quantity = f"{qty} × {rate}" if qty is not None and rate else (str(qty) if qty else "")
            amount = amount_of(item, "amount", currency) or ""
            rows.append((title, description, quantity, amount))
    return rows


def summary_lines(result: VerificationResult) -> list[tuple[str, str]]:
    """The headline facts of a verified payslip, label and value, in reading order."""
    payslip = result.payslip
    non_pii = payslip.payslip_non_pii
    currency = str(non_pii.get("currency", ""))
    lines: list[tuple[str, str]] = [("Issuer", payslip.issuer.name)]
    start, end = non_pii.get("period_start"), non_pii.get("period_end")
    period = f"{long_date(start)} – {long_date(end)}" if start else long_date(end)
    lines.append(("Pay period", period))
    lines.append(("Payment date", long_date(non_pii.get("payment_date", ""))))
    for key, label in (
        ("gross", "Gross pay"),
        ("paygw", "Tax (PAYG)"),
        ("paye", "Tax (PAYE)"),
        ("net", "Net pay"),
        ("ytd_gross", "YTD gross"),
        ("ytd_paygw", "YTD tax"),
        ("ytd_paye", "YTD tax"),
    ):
        value = amount_of(non_pii, key, currency)
        if value is not None:
            lines.append((label, value))
    return lines


EMPLOYEE_LABELS: dict[str, str] = {
    "employee_name": "Employee",
    "position": "Position",
    "department": "Department",
    "employer_abn": "Employer ABN",
    "employer_identity": "Employer",
    "employer_name": "Employer",
    "ird_number": "IRD number",
    "bsb": "BSB",
    "account_number": "Account",
    "account_name": "Account name",
    "address": "Address",
    "raw": "Employee data",
}


MASKED_FIELDS = frozenset({"account_number", "ird_number"})
"""Shown masked until the operator reveals them: a bank account and a tax number."""


def employee_lines(employee: EmployeePii, reveal: bool) -> list[tuple[str, str]]:
    """The employee's fields in protocol order, labelled; account and tax numbers masked unless
    `reveal`."""
    lines = []
    for key, value in employee.fields():
        label = EMPLOYEE_LABELS.get(key, humanise(key))
        shown = value if reveal or key not in MASKED_FIELDS else mask_account(value)
        if key in {"employer_identity", "employer_abn"} and (abn := format_abn(value)):
            label, shown = "Employer ABN", abn
        lines.append((label, shown))
    return lines


def shows_payslip_data(verdict: Verdict | None) -> bool:
    """The one privacy rule of every output (the GUI card, the kiosk, the phone page, and
    `app verify`'s text and JSON): payslip figures and employee data are shown only for VERIFIED.
    A NOT VERIFIED result (revoked, forged, disagreeing codes) still decrypts at the service, but
    shows only its reason and, when known, the issuer's name and the reference, so a bad payslip
    can never read like a good one nor hand out the person's details. The phone page
    (`service/http/phone_page/verify.js`) follows the same rule; tests hold all of them to it."""
    return verdict == Verdict.VERIFIED


def withheld_result(result: VerificationResult) -> dict[str, Any]:
    """What an output may carry of a result it must not show (`shows_payslip_data` false): the
    reference, the record's status and its issuer, never the service's answer as it came."""
    payslip = result.payslip
    return {
        "verified": result.verified,
        "service_reference": result.service_reference,
        "payslip": {
            "status": payslip.status,
            "issuer": {"issuer_id": payslip.issuer.issuer_id, "name": payslip.issuer.name},
        },
    }
