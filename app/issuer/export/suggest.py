"""A MAPPING.json guessed from an export's headers (`issue-run FILE --suggest-mapping`, and the
pay-run tab's starting point).

Payroll systems name the same things differently ("Gross Earnings", "Total Gross", "Gross Pay");
the table below holds the names seen in AU and NZ exports, compared after trimming, case-folding
and turning punctuation into spaces. The country decides tax and the schema: headers such as BSB,
PAYG or Super mean Australia (`au.payslip.v2`, AUD), IRD, PAYE, KiwiSaver or Tax Code mean New
Zealand (`nz.payslip.v2`, NZD). A title row above the header is skipped, and the date format is
read from the first rows' date cells (day-first unless a cell proves otherwise, as AU and NZ
write dates). A header the table does not know maps to `null`: the clerk decides, never a guess.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from app.issuer.export.cells import date_text
from app.issuer.export.formats import open_table
from app.issuer.export.mapping import norm_header
from app.issuer.fields import ValueProblem, spec_for_path
from service.protocol.vocabulary import PayslipSchema

__all__ = ["country_of", "suggest_for_file", "suggest_mapping"]

_COMMON: dict[str, tuple[str, ...]] = {
    "external_id": (
        "employee id",
        "emp id",
        "emp no",
        "employee no",
        "employee number",
        "employee code",
        "staff id",
        "staff no",
        "payroll id",
        "employee ref",
        "worker id",
        "worker no",
        "id",
    ),
    "pii.employee_name": (
        "employee",
        "employee name",
        "name",
        "full name",
        "staff name",
        "employee full name",
        "worker",
        "worker name",
    ),
    "period_start": (
        "pay period start",
        "period start",
        "period from",
        "start date",
        "pay period from",
        "period start date",
        "pay period start date",
        "from",
    ),
    "period_end": (
        "pay period end",
        "period end",
        "period to",
        "end date",
        "pay period to",
        "period end date",
        "pay period end date",
        "to",
    ),
    "payment_date": ("payment date", "pay date", "paid on", "date paid", "pay day", "payday"),
    "gross": (
        "gross",
        "gross pay",
        "gross earnings",
        "total gross",
        "gross wages",
        "gross amount",
        "total gross pay",
        "gross salary",
    ),
    "net": (
        "net",
        "net pay",
        "net wages",
        "net amount",
        "take home",
        "take home pay",
        "net salary",
    ),
    "pii.account_number": (
        "account number",
        "account no",
        "acct no",
        "account",
        "bank account",
        "bank account number",
        "bank account no",
        "bank acct",
        "bank acct no",
        "bank acct number",
        "acc no",
    ),
    "pii.account_name": ("account name", "bank account name", "acct name"),
    "pii.address": ("address", "home address", "postal address", "employee address"),
    "pii.position": ("position", "job title", "title", "role", "occupation"),
    "pii.department": ("department", "dept", "team"),
    "currency": ("currency", "currency code"),
    "ytd_gross": ("ytd gross", "gross ytd", "year to date gross", "ytd gross earnings"),
    "annual_rate": ("annual salary", "annual rate", "salary"),
    "reimbursements": ("reimbursements", "reimbursement", "expense reimbursements"),
}
_AU: dict[str, tuple[str, ...]] = {
    "paygw": (
        "payg",
        "payg withheld",
        "payg withholding",
        "payg tax",
        "tax",
        "tax withheld",
        "income tax",
    ),
    "ytd_paygw": ("ytd payg", "ytd tax", "payg ytd", "ytd payg withheld"),
    "pii.bsb": ("bsb", "bsb number", "bsb no", "bank bsb"),
    "pii.employer_identity": ("abn", "employer abn"),
    "pay_frequency": ("pay frequency", "frequency", "pay cycle"),
    "award": ("award", "modern award"),
}
_NZ: dict[str, tuple[str, ...]] = {
    "paye": ("paye", "paye tax", "paye withheld", "tax", "tax withheld", "income tax"),
    "ytd_paye": ("ytd paye", "ytd tax", "paye ytd"),
    "pii.ird_number": ("ird", "ird number", "ird no", "ird num", "tax number"),
    "pii.employer_name": ("employer", "employer name"),
    "tax_code": ("tax code",),
    "pay_cycle": ("pay cycle", "pay frequency", "frequency"),
    "hours_paid": ("hours", "hours paid", "hours worked", "total hours"),
    "kiwisaver_employee_deduction": (
        "kiwisaver",
        "kiwisaver employee",
        "ks employee",
        "kiwisaver deduction",
        "kiwisaver employee deduction",
    ),
    "kiwisaver_employer_contribution": (
        "kiwisaver employer",
        "ks employer",
        "employer kiwisaver",
        "kiwisaver employer contribution",
    ),
    "esct": ("esct",),
    "student_loan": ("student loan", "sl", "student loan deduction"),
}
_AU_HINTS = ("bsb", "payg", "super", "superannuation", "abn", "tfn", "stp")
_NZ_HINTS = ("ird", "paye", "kiwisaver", "esct", "tax code", "acc", "student loan")


def _key(header: object) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", norm_header(header)).split())


def _table(synonyms: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {name: target for target, names in synonyms.items() for name in names}


_BY_COUNTRY = {
    "AU": {**_table(_COMMON), **_table(_AU)},
    "NZ": {**_table(_COMMON), **_table(_NZ)},
}


def country_of(headers: list[str]) -> str:
    """`AU` or `NZ`, by the country-specific words in the headers (AU when nothing tells)."""
    keys = [_key(h) for h in headers]
    words = {w for k in keys for w in k.split()} | set(keys)
    au = sum(h in words for h in _AU_HINTS)
    nz = sum(h in words for h in _NZ_HINTS)
    return "NZ" if nz > au else "AU"


def suggest_mapping(
    headers: list[str], sample_rows: list[list[Any]] | None = None, skip_rows: int = 0
) -> dict[str, Any]:
    """The MAPPING.json (as a dict) for these headers; unplaced headers map to None."""
    country = country_of(headers)
    schema = PayslipSchema.AU_V2 if country == "AU" else PayslipSchema.NZ_V2
    table = _BY_COUNTRY[country]
    columns: dict[str, str | None] = {}
    used: set[str] = set()
    for header in headers:
        if not str(header).strip():
            continue
        target = table.get(_key(header))
        if target is None and norm_header(header) in (
            "external_id",
            "schema",
            "issued_at",
        ):
            target = norm_header(header)
        if target is not None and (target in used or not _fits(schema, target)):
            target = None
        if target is not None:
            used.add(target)
        columns[str(header)] = target
    mapping: dict[str, Any] = {
        "columns": columns,
        "date_format": _date_format(headers, columns, sample_rows or []),
        "schema": schema,
    }
    if skip_rows:
        mapping["skip_rows"] = skip_rows
    if "currency" not in used:
        mapping["defaults"] = {"currency": "AUD" if country == "AU" else "NZD"}
    return mapping


def _fits(schema: str, target: str) -> bool:
    if target.startswith("pii.") or target in ("external_id", "schema", "issued_at"):
        return True
    return spec_for_path(schema, target) is not None


def _date_format(headers: list[str], columns: dict[str, str | None], rows: list[list[Any]]) -> str:
    """The date format that reads every sampled date cell (day-first preferred)."""
    dates = [i for i, h in enumerate(headers) if columns.get(str(h)) in _DATE_TARGETS]
    texts = [row[i] for row in rows for i in dates if i < len(row) and isinstance(row[i], str)]
    texts = [t for t in texts if t.strip()]
    for fmt in ("DD/MM/YYYY", "YYYY-MM-DD", "D MMM YYYY", "MM/DD/YYYY"):
        try:
            for text in texts:
                date_text(text, fmt)
        except ValueProblem:
            continue
        if texts:
            return fmt
    return "DD/MM/YYYY"


_DATE_TARGETS = ("period_start", "period_end", "payment_date")


def _width(cells: list[Any]) -> int:
    return sum(1 for c in cells if c is not None and str(c).strip())


def suggest_for_file(path: Path, sheet: str | None = None) -> dict[str, Any]:
    """Open FILE once, find its header (skipping title and blank rows above it: the first of
    the top rows filled at least half as wide as the widest) and suggest a mapping for it."""
    with open_table(path, sheet=sheet, blank_rows=True) as table:
        top: list[list[Any]] = [list(table.header)]
        for _, cells in table.rows:
            top.append(list(cells))
            if len(top) > _MAX_TITLE_ROWS + 11:
                break
    candidates = top[: _MAX_TITLE_ROWS + 1]
    widest = max(_width(row) for row in candidates)
    skip = next(i for i, row in enumerate(candidates) if _width(row) >= max(2, widest // 2))
    header = ["" if h is None else str(h) for h in top[skip]]
    while header and not header[-1].strip():
        header.pop()
    sample = [row for row in top[skip + 1 :] if _width(row)][:10]
    mapping = suggest_mapping(header, sample, skip)
    if sheet:
        mapping["sheet"] = sheet
    return mapping


_MAX_TITLE_ROWS = 6
