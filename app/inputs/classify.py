"""What a text read at the edge is: a payslip code, a verification record's receipt, or nothing.

Every input ends in text: the camera's and a photo's QR codes, a PDF's metadata and pages, what a
USB scanner types, what is typed or pasted. Each text is classified once, where it enters, into a
typed value; from there the verify path carries that value to the API call, and nothing parses
the text again. A receipt (PROTOCOL §11) is no payslip code: it gets no verdict, but the desk
checks it as a verification record. Anything else gets neither, and nothing is sent for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import jwt

from service.protocol.barcode_text import MAX_BARCODE_CHARS, BarcodeTextError, parse_barcode
from service.protocol.schemas import RECEIPT_TYPE

MAX_RECEIPT_CHARS = 8192
JWS_FORM = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class PayslipCode:
    """A text that is one of the barcode forms of PROTOCOL §3 (checked locally), as read."""

    text: str


@dataclass(frozen=True, slots=True)
class ReceiptText:
    """A compact JWS whose header says it is a receipt (its signature is not checked here:
    :func:`app.receipts.check.check_receipt` does that), without surrounding blanks."""

    text: str


def classify(text: str) -> PayslipCode | ReceiptText | None:
    """The one decision about a text: a payslip code, a receipt, or nothing."""
    if is_payslip_code(text):
        return PayslipCode(text)
    if looks_like_receipt(text):
        return ReceiptText(text.strip())
    return None


def is_payslip_code(text: str) -> bool:
    """True when ``text`` is one of the barcode forms of PROTOCOL §3 (checked locally)."""
    if not text.strip() or len(text) > MAX_BARCODE_CHARS:
        return False
    try:
        parse_barcode(text)
    except BarcodeTextError:
        return False
    return True


def looks_like_receipt(text: str) -> bool:
    """A compact JWS whose header says it is a receipt (not checked: see `check_receipt`)."""
    text = text.strip()
    if len(text) > MAX_RECEIPT_CHARS or not JWS_FORM.match(text):
        return False
    try:
        return jwt.get_unverified_header(text).get("typ") == RECEIPT_TYPE
    except jwt.PyJWTError:
        return False


def payslip_codes(texts: Iterable[str]) -> list[PayslipCode]:
    """The payslip codes among one input's texts, in order."""
    return [PayslipCode(text) for text in texts if is_payslip_code(text)]


def receipts_in(texts: Iterable[str]) -> list[str]:
    """Every distinct receipt among the texts one input yielded, in order (an applicant's
    record carries one per payslip)."""
    return list(dict.fromkeys(t.strip() for t in texts if looks_like_receipt(t)))
