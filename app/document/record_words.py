"""What a verification record (PROTOCOL §11) says of the document check (§13), in words.

The receipt is the service's and unchanged: it says VERIFIED for a genuine code, whatever the
paper shows. So the record also states what the desk found on the page: the check's status and,
for an altered copy, each changed field with its registered and its shown value; the record's
verdict is then NOT VERIFIED, as the desk's screen said. Qt-free: the record PDFs draw these.
"""

from __future__ import annotations

from app.document.check import TEXT_CODE
from app.document.compare import NOT_COMPARED_WORDS, DocumentCheck
from app.document.fields import FIELD_BY_NAME

LABEL = "Document check"
ALTERED_WORDS = (
    "The payslip code is genuine, but the printed figures differ from the registered payslip: "
    "this copy was altered. Do not accept it."
)
"""The record's verdict words for an altered copy (its receipt alone would say VERIFIED)."""


def is_altered(check: DocumentCheck | None) -> bool:
    return check is not None and check.status == "altered"


def status_words(check: DocumentCheck | None, code_only: bool = False) -> str | None:
    """The check's status in one line; None when no check was made or due (not VERIFIED)."""
    if check is None:
        return f"Not compared: {TEXT_CODE}" if code_only else None
    if check.status == "altered":
        return "Altered: the printed figures differ from the registered payslip"
    if check.status == "matches":
        return "Matches: the printed figures match the registered payslip"
    return f"Not compared: {NOT_COMPARED_WORDS.split(': ', 1)[1]} ({check.reason})"


def record_rows(check: DocumentCheck | None, code_only: bool = False) -> list[tuple[str, str]]:
    """Label/value rows: the status, then one row per changed field (registered and shown)."""
    status = status_words(check, code_only)
    if status is None or check is None:
        return [] if status is None else [(LABEL, status)]
    rows = [(LABEL, status)]
    for field in check.fields:
        if field.status == "differs":
            rows.append(
                (
                    FIELD_BY_NAME[field.field].words.capitalize(),
                    f"registered {field.registered_words}; the page shows {field.shown_words}",
                )
            )
    return rows
