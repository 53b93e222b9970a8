"""Payslip amounts as integers in the currency's minor unit (PROTOCOL §10).

v1 payslips carry ``*_cents`` integers (the v1 currencies all have two minor digits); v2 carry
decimal strings in any ISO 4217 currency, whose minor unit has 0 (JPY), 2 (AUD) or 3 (KWD)
digits. Amounts are compared and added as integers, never as floats.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

ZERO_DIGITS = frozenset(
    "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF".split()  # noqa: SIM905
)
THREE_DIGITS = frozenset("BHD IQD JOD KWD LYD OMR TND".split())  # noqa: SIM905
"""ISO 4217 exponents other than 2 among the v2 currencies (CLF and UYW, exponent 4, are fund
codes and out of the protocol); every other code has two minor digits."""


def minor_digits(currency: str) -> int:
    if currency in ZERO_DIGITS:
        return 0
    if currency in THREE_DIGITS:
        return 3
    return 2


def minor_amount(non_pii: dict[str, Any], key: str) -> int | None:
    """``<key>_cents`` (v1) or ``<key>`` (v2 decimal text) in minor units, None when absent or
    unreadable. A v2 amount with more decimals than the currency has is rounded half up."""
    cents = non_pii.get(f"{key}_cents")
    if isinstance(cents, int) and not isinstance(cents, bool):
        return cents
    text = non_pii.get(key)
    if not isinstance(text, str):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    scaled = value.scaleb(minor_digits(str(non_pii.get("currency", ""))))
    return int(scaled.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def format_minor(amount: int, currency: str) -> str:
    """``1234567`` AUD as ``12,345.67 AUD`` (no symbol: the code is unambiguous)."""
    digits = minor_digits(currency)
    value = Decimal(amount).scaleb(-digits)
    sign = "-" if amount < 0 else ""
    return f"{sign}{abs(value):,.{digits}f} {currency}"
