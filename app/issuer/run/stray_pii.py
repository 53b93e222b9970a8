"""Stray personal data: employee data belongs only in the encrypted part of a payslip.

A row whose non-PII text (an award name, a tax code, its external id) contains that row's
employee name, account number, IRD number or address, or anything shaped like an e-mail address
or a tax file number, is flagged and not sent: the non-PII part is stored by the service in
plain text, so a name typed into the wrong column would leak. Reasons name the column, never the
value, because they end up in results files and logs.

The single-payslip form (`app.ui.issue.single`) and the pay-run row check (`rows.check_row`) both
call `stray_pii`, so the rule is written once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from app.issuer.fields import spec_for_path

__all__ = ["find_stray_pii", "stray_pii", "text_fields"]

_EMAIL_RE = re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}")
_LONG_DIGITS_RE = re.compile(r"(?<![0-9])[0-9][0-9 -]{7,}[0-9](?![0-9])")
_SENSITIVE = ("employee_name", "account_name", "account_number", "ird_number", "address", "bsb")
_NAME_FIELDS = ("employee_name", "account_name")

_WHAT = {
    "employee_name": "the employee's name",
    "account_name": "the employee's name",
    "account_number": "the employee's bank account number",
    "ird_number": "the employee's IRD number",
    "bsb": "the employee's BSB",
    "address": "the employee's address",
}


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def find_stray_pii(
    pii_fields: Mapping[str, str], texts: Mapping[str, str], *, free_text: frozenset[str]
) -> list[tuple[str, str]]:
    """(column, what it seems to hold) for each `texts` entry that looks like personal data.

    Each value is compared with this row's own sensitive PII: the employee's full name and every
    name part of 3+ letters, the account name and number, IRD number, BSB and address. Columns in
    `free_text` are also checked for e-mail addresses and long digit runs (tax file or phone
    numbers), which no legitimate free-text payslip field holds. Only names of things are
    returned, never the values.
    """
    phrases: list[tuple[str, str]] = []
    words: list[tuple[str, str]] = []
    digit_runs: list[tuple[str, str]] = []
    for name in _SENSITIVE:
        value = (pii_fields.get(name) or "").strip()
        if not value:
            continue
        if name in ("account_number", "ird_number", "bsb"):
            digits = _digits(value)
            if len(digits) >= 6:
                digit_runs.append((digits, name))
            continue
        if len(_normalise(value)) >= 4:
            phrases.append((_normalise(value), name))
        if name in _NAME_FIELDS:
            words.extend((w, name) for w in re.findall(r"[^\W\d_]{3,}", value.casefold()))
    flagged: list[tuple[str, str]] = []
    for column, value in texts.items():
        if not value:
            continue
        norm = _normalise(value)
        value_words = set(re.findall(r"[^\W\d_]{3,}", value.casefold()))
        value_digits = _digits(value)
        found = (
            next((n for p, n in phrases if p in norm), None)
            or next((n for w, n in words if w in value_words), None)
            or next((n for d, n in digit_runs if d in value_digits), None)
        )
        what = _WHAT[found] if found else None
        if what is None and column in free_text:
            if _EMAIL_RE.search(value):
                what = "an e-mail address"
            elif _LONG_DIGITS_RE.search(value):
                what = "a long number (a tax file, account or phone number?)"
        if what is not None:
            flagged.append((column, what))
    return flagged


def _strings(value: Any, prefix: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield prefix, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{prefix}.{index}")


def text_fields(schema: str, non_pii: Mapping[str, Any]) -> tuple[dict[str, str], frozenset[str]]:
    """The text-typed values of a payslip (path -> value) and which of them are free text.

    Dates, amounts and choices are checked against strict patterns and cannot carry a name, so
    only text fields are searched for stray personal data."""
    texts: dict[str, str] = {}
    free: set[str] = set()
    for path, value in _strings(non_pii, ""):
        spec = spec_for_path(schema, path)
        if spec is None or spec.kind != "text":
            continue
        texts[path] = value
        if spec.is_free_text:
            free.add(path)
    return texts, frozenset(free)


def stray_pii(
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    pii_fields: Mapping[str, str],
    *,
    external_id: str | None = None,
) -> dict[str, str]:
    """Field path -> message, for each non-PII text that seems to hold personal data."""
    texts, free = text_fields(schema, payslip_non_pii)
    if external_id:
        texts["external_id"] = external_id
    return {
        column: f"seems to contain {what}; personal data belongs only in the employee's "
        "details, where it is encrypted"
        for column, what in find_stray_pii(pii_fields, texts, free_text=free)
    }
