"""The ABN checksum (PROTOCOL §5), which catches a mistyped fund ABN or USI before it is registered.

A registered record cannot be corrected afterwards, so a typo in a superannuation identifier would
be vouched for on every verification of that payslip.
"""

from __future__ import annotations

import re

_WEIGHTS = (10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19)
_ELEVEN_DIGITS = re.compile(r"[0-9]{11}")


def is_valid_abn(text: str) -> bool:
    if not _ELEVEN_DIGITS.fullmatch(text):
        return False
    digits = [int(c) for c in text]
    digits[0] -= 1
    return sum(w * d for w, d in zip(_WEIGHTS, digits, strict=True)) % 89 == 0
