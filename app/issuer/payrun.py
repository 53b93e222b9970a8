"""Reading a pay run (CSV, JSON or JSON Lines) and checking every row before anything is sent.

Rows are read one at a time (a 50,000-row file is never held in memory) and each is either a
`PayrunRow`, ready to encrypt and register, or a `RowProblem` listing every plain-language reason
it cannot be issued. A bad row never stops the good ones.

Stray PII: employee data belongs only in the encrypted part. A row whose non-PII text (an award
name, a tax code, its external id) contains that row's employee name, account number, IRD number
or address, or anything shaped like an e-mail address or a tax file number, is flagged and not
sent. Reasons name the column, never the value, because they end up in results files and logs.

The layout (documented in docs/issuer.md):

* CSV: one header line. Columns `schema`, `external_id`, `issued_at`, `pii_format`, `pdf`,
  `pdf_page`, `pdf_corner`; `pii.<field>` for the employee's data in the chosen PII format; every
  other column is a path inside `payslip_non_pii` (`gross_cents`, `earnings.0.type`,
  `hourly.hours`). A v1 `*_cents` field may instead be given as money under its name without
  `_cents` (`gross` = `3846.15`). Empty cells are absent fields.
* JSON: an array of objects (or JSON Lines, one object per line) with `schema`, `external_id`,
  `issued_at`, `payslip_non_pii` (wire types), `pii` (`{"format": "AU2", "employee_name": ...}`)
  and optionally `pdf`, `pdf_page`, `pdf_corner`.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TextIO

from app.issuer.badges import CORNERS
from app.issuer.fields import FieldSpec, FormValues, ValueProblem, read_value, spec_for_path
from app.issuer.pii import FORMATS, PiiTextError, build_pii_text, format_for_schema
from app.issuer.records import check_payslip
from service.protocol.schemas import PAYSLIP_SCHEMAS

__all__ = [
    "META_COLUMNS",
    "PayrunFileError",
    "PayrunRow",
    "RowProblem",
    "find_stray_pii",
    "read_payrun",
    "stray_pii",
]

META_COLUMNS = ("schema", "external_id", "issued_at", "pii_format", "pdf", "pdf_page", "pdf_corner")
_JSON_KEYS = frozenset({*META_COLUMNS, "payslip_non_pii", "pii"})
_EMAIL_RE = re.compile(r"[^\s@]+@[^\s@]+\.[A-Za-z]{2,}")
_LONG_DIGITS_RE = re.compile(r"(?<![0-9])[0-9][0-9 -]{7,}[0-9](?![0-9])")
_SENSITIVE = ("employee_name", "account_name", "account_number", "ird_number", "address", "bsb")
_NAME_FIELDS = ("employee_name", "account_name")
_SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class PayrunFileError(Exception):
    """The file as a whole cannot be read (not found, not CSV/JSON, no header). Plain text."""


@dataclass(frozen=True)
class PayrunRow:
    """One row ready to issue. `pii_text` is personal data: it is excluded from the repr."""

    number: int
    external_id: str
    schema: str
    issued_at: str | None
    payslip_non_pii: dict[str, Any]
    pii_format: str
    pii_text: str = field(repr=False)
    pdf: str | None = None
    pdf_page: int = 1
    pdf_corner: str = "bottom-right"

    @property
    def file_stem(self) -> str:
        """A safe, unique file name stem for this row's badge and PDF."""
        safe = _SAFE_NAME_RE.sub("_", self.external_id).strip("._")[:80] or "payslip"
        return f"{self.number:06d}_{safe}"


@dataclass(frozen=True)
class RowProblem:
    """A row that will not be issued, with every reason found (no values quoted)."""

    number: int
    external_id: str
    reasons: tuple[str, ...]


# --- stray PII -----------------------------------------------------------------------------


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


_WHAT = {
    "employee_name": "the employee's name",
    "account_name": "the employee's name",
    "account_number": "the employee's bank account number",
    "ird_number": "the employee's IRD number",
    "bsb": "the employee's BSB",
    "address": "the employee's address",
}


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


def stray_pii(
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    pii_fields: Mapping[str, str],
    *,
    external_id: str | None = None,
) -> dict[str, str]:
    """Field path -> message, for each non-PII text that seems to hold personal data."""
    texts, free = _text_fields(schema, payslip_non_pii)
    if external_id:
        texts["external_id"] = external_id
    return {
        column: f"seems to contain {what}; personal data belongs only in the employee's "
        "details, where it is encrypted"
        for column, what in find_stray_pii(pii_fields, texts, free_text=free)
    }


# --- one row -------------------------------------------------------------------------------


@dataclass
class _RowInput:
    """A row in a neutral shape: CSV cells are text, JSON values keep their wire types."""

    number: int
    meta: dict[str, str]
    pii: dict[str, str]
    pii_format: str | None
    non_pii: dict[str, Any] | None = None  # JSON: the object as given
    cells: dict[str, str] = field(default_factory=dict)  # CSV: path -> text
    reasons: list[str] = field(default_factory=list)


@lru_cache(maxsize=8192)
def _column(schema: str, column: str) -> tuple[FieldSpec | None, str, bool]:
    """(spec, path, money) for a CSV column under a schema: the field at that path, or a v1
    cents field given as money under its name without `_cents` (`gross` for `gross_cents`)."""
    spec = spec_for_path(schema, column)
    if spec is not None:
        return spec, column, False
    alias = spec_for_path(schema, column + "_cents")
    if alias is not None and alias.kind == "cents":
        return alias, column + "_cents", True
    return None, column, False


def _field_path(path: str) -> str:
    return path.removeprefix("payslip_non_pii.")


def _csv_non_pii(
    schema: str, cells: Mapping[str, str], reasons: list[str]
) -> tuple[dict[str, Any], set[str]]:
    values = FormValues()
    bad: set[str] = set()
    for column, text in cells.items():
        if not text.strip():
            continue
        spec, path, money = _column(schema, column)
        if spec is None:
            reasons.append(f"{column}: not a field of {schema}")
            continue
        if spec.kind in ("object", "array"):
            reasons.append(f"{column}: give its parts as separate columns ({column}.<field>)")
            continue
        try:
            values.set(path, read_value(spec, text, money=money))
        except ValueProblem as exc:
            reasons.append(f"{column}: {exc}")
            bad.add(path)
    return values.compacted(), bad


def _text_fields(schema: str, non_pii: Mapping[str, Any]) -> tuple[dict[str, str], frozenset[str]]:
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


def _check_row(
    raw: _RowInput, default_schema: str | None, seen_ids: dict[str, int], pdf_dir: Path | None
) -> PayrunRow | RowProblem:
    number = raw.number
    reasons = list(raw.reasons)
    external_id = (raw.meta.get("external_id") or "").strip() or f"row-{number}"
    schema = (raw.meta.get("schema") or "").strip() or (default_schema or "")
    if reasons:
        return RowProblem(number, external_id, tuple(reasons))
    if schema not in PAYSLIP_SCHEMAS:
        what = "missing" if not schema else "not a known schema"
        return RowProblem(
            number, external_id, (f"schema: {what} (use one of {', '.join(PAYSLIP_SCHEMAS)})",)
        )
    if external_id in seen_ids:
        reasons.append(f"external_id: repeats row {seen_ids[external_id]}")
    else:
        seen_ids[external_id] = number
    issued_at = (raw.meta.get("issued_at") or "").strip() or None

    # The employee's data, in the format that fits the schema unless the row names another.
    pii_format = (raw.pii_format or "").strip() or format_for_schema(schema)
    pii_text = ""
    if pii_format not in FORMATS:
        reasons.append(f"pii_format: not a known format (use one of {', '.join(FORMATS)})")
    else:
        names = FORMATS[pii_format]
        pii = {k: v for k, v in raw.pii.items() if v != ""}
        for name in sorted(set(pii) - set(names)):
            reasons.append(f"pii.{name}: not a field of {pii_format}")
        if not (pii.get("employee_name") or "").strip():
            reasons.append("pii.employee_name: required")
        try:
            pii_text = build_pii_text(pii_format, {k: v for k, v in pii.items() if k in names})
        except PiiTextError as exc:
            reasons.append(f"pii.{exc.field}: {exc.problem}")

    # The non-personal part, typed by the schema.
    bad: set[str] = set()
    if raw.non_pii is not None:
        non_pii = raw.non_pii
    else:
        non_pii, bad = _csv_non_pii(schema, raw.cells, reasons)
    if not isinstance(non_pii, dict):
        reasons.append("payslip_non_pii: expected an object")
        non_pii = {}
    for error in check_payslip(
        schema, non_pii, issued_at, external_id=raw.meta.get("external_id") or None
    ):
        path = _field_path(error.path)
        if path in bad:
            continue  # already explained by the value that could not be read
        message = (
            "required (column missing or empty)" if error.message == "required" else (error.message)
        )
        reasons.append(f"{path or 'row'}: {message}")

    for column, message in stray_pii(
        schema, non_pii, raw.pii, external_id=raw.meta.get("external_id")
    ).items():
        reasons.append(f"{column}: {message}")

    # The employee's payslip PDF to stamp, when one is given.
    pdf = (raw.meta.get("pdf") or "").strip() or None
    page_text = (raw.meta.get("pdf_page") or "").strip() or "1"
    corner = (raw.meta.get("pdf_corner") or "").strip() or "bottom-right"
    page = 1
    if not page_text.isdigit() or int(page_text) < 1:
        reasons.append("pdf_page: expected a page number from 1")
    else:
        page = int(page_text)
    if corner not in CORNERS:
        reasons.append(f"pdf_corner: expected one of {', '.join(CORNERS)}")
    if pdf_dir is not None:
        if pdf is None and (pdf_dir / f"{external_id}.pdf").is_file():
            pdf = f"{external_id}.pdf"
        if pdf is not None:
            candidate = (pdf_dir / pdf).resolve()
            if pdf_dir.resolve() not in candidate.parents:
                reasons.append("pdf: must name a file inside the PDF folder")
            elif not candidate.is_file():
                reasons.append("pdf: no such file in the PDF folder")
    elif pdf is not None:
        reasons.append("pdf: a PDF is named but no PDF folder was given")

    if reasons:
        return RowProblem(number, external_id, tuple(reasons))
    return PayrunRow(
        number=number,
        external_id=external_id,
        schema=schema,
        issued_at=issued_at,
        payslip_non_pii=non_pii,
        pii_format=pii_format,
        pii_text=pii_text,
        pdf=pdf,
        pdf_page=page,
        pdf_corner=corner,
    )


# --- files ---------------------------------------------------------------------------------


def _csv_rows(handle: TextIO) -> Iterator[_RowInput]:
    reader = csv.reader(handle)
    try:
        header = next(reader)
    except StopIteration:
        raise PayrunFileError("the file is empty (a header line is expected)") from None
    except csv.Error:
        raise PayrunFileError("the header line is not valid CSV") from None
    header = [h.strip() for h in header]
    if not any(header):
        raise PayrunFileError("the header line is empty")
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise PayrunFileError("the header repeats columns: " + ", ".join(repeated))
    number = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            number += 1
            yield _RowInput(number, {}, {}, None, reasons=["row: not valid CSV (check quotes)"])
            continue
        if not any(c.strip() for c in cells):
            continue  # blank lines are not rows
        number += 1
        row = _RowInput(number, {}, {}, None)
        if len(cells) != len(header):
            # Keep the external id (if its cell is there) so the problem can be matched up.
            for name, value in zip(header, cells, strict=False):
                if name == "external_id":
                    row.meta[name] = value.strip()
            row.reasons.append(
                f"row: has {len(cells)} cells but the header has {len(header)} columns "
                "(a missing or extra delimiter?)"
            )
            yield row
            continue
        for name, value in zip(header, cells, strict=True):
            if not name:
                if value.strip():
                    row.reasons.append("a column without a header name holds a value")
                continue
            if name in META_COLUMNS:
                row.meta[name] = value.strip()
            elif name.startswith("pii."):
                row.pii[name[4:]] = value.strip()
            else:
                row.cells[name] = value
        row.pii_format = row.meta.get("pii_format")
        yield row


def _json_object_row(number: int, item: Any) -> _RowInput:
    row = _RowInput(number, {}, {}, None)
    if not isinstance(item, dict):
        row.reasons.append("row: expected a JSON object")
        return row
    for key in sorted(set(item) - _JSON_KEYS):
        row.reasons.append(f"{key}: unknown key")
    for key in META_COLUMNS:
        value = item.get(key)
        if value is None:
            continue
        if key == "pdf_page" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            row.reasons.append(f"{key}: expected text")
            continue
        row.meta[key] = value
    pii = item.get("pii", {})
    if not isinstance(pii, dict):
        row.reasons.append("pii: expected an object of text fields")
    else:
        for key, value in pii.items():
            if key == "format":
                row.pii_format = value if isinstance(value, str) else None
            elif isinstance(value, str):
                row.pii[key] = value
            else:
                row.reasons.append(f"pii.{key}: expected text")
    row.non_pii = item.get("payslip_non_pii")
    if row.non_pii is None:
        row.non_pii = {}
    if row.meta.get("pii_format") and row.pii_format is None:
        row.pii_format = row.meta["pii_format"]
    return row


def _json_array_items(handle: TextIO, chunk: int = 1 << 16) -> Iterator[tuple[Any, bool]]:
    """Items of a top-level JSON array, decoded one at a time from a buffered stream.

    Yields (item, ok); a syntax error ends the file (the position after it is unknowable).
    """
    decoder = json.JSONDecoder()
    buffer = ""
    eof = False

    def fill() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        data = handle.read(chunk)
        if not data:
            eof = True
            return False
        buffer += data
        return True

    def skip_ws() -> None:
        nonlocal buffer
        while True:
            buffer = buffer.lstrip()
            if buffer or not fill():
                return

    skip_ws()
    if not buffer.startswith("["):
        raise PayrunFileError("a JSON pay run must be an array of objects (or JSON Lines)")
    buffer = buffer[1:]
    first = True
    while True:
        skip_ws()
        if buffer.startswith("]"):
            return
        if not first:
            if not buffer.startswith(","):
                yield None, False
                return
            buffer = buffer[1:]
            skip_ws()
        first = False
        while True:
            try:
                item, end = decoder.raw_decode(buffer)
            except json.JSONDecodeError:
                if fill():
                    continue
                yield None, False
                return
            if end == len(buffer) and not eof and isinstance(item, int | float):
                fill()  # a number may continue in the next chunk
                continue
            buffer = buffer[end:]
            yield item, True
            break


def _json_rows(handle: TextIO) -> Iterator[_RowInput]:
    for number, (item, ok) in enumerate(_json_array_items(handle), start=1):
        if not ok:
            yield _RowInput(
                number,
                {},
                {},
                None,
                reasons=["row: not valid JSON; the rest of the file cannot be read"],
            )
            return
        yield _json_object_row(number, item)


def _jsonl_rows(handle: TextIO) -> Iterator[_RowInput]:
    number = 0
    for line in handle:
        if not line.strip():
            continue
        number += 1
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            yield _RowInput(number, {}, {}, None, reasons=["row: not valid JSON"])
            continue
        yield _json_object_row(number, item)


def _kind_of(path: Path, handle: TextIO) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in (".csv", ".txt"):
        return "csv"
    start = handle.read(1)
    handle.seek(0)
    return "json" if start == "[" else "csv"


def read_payrun(
    path: Path, *, default_schema: str | None = None, pdf_dir: Path | None = None
) -> Iterator[PayrunRow | RowProblem]:
    """Every row of a pay-run file, checked, in file order. Raises PayrunFileError only when the
    file as a whole cannot be read; a bad row is a RowProblem and reading goes on."""
    try:
        handle: TextIO = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115
    except FileNotFoundError:
        raise PayrunFileError(f"{path.name} does not exist") from None
    except IsADirectoryError:
        raise PayrunFileError(f"{path.name} is a folder, not a file") from None
    except PermissionError:
        raise PayrunFileError(f"no permission to read {path.name}") from None
    seen: dict[str, int] = {}
    with handle:
        try:
            kind = _kind_of(path, handle)
            rows = {"csv": _csv_rows, "json": _json_rows, "jsonl": _jsonl_rows}[kind](handle)
            for raw in rows:
                yield _check_row(raw, default_schema, seen, pdf_dir)
        except UnicodeDecodeError:
            raise PayrunFileError(f"{path.name} is not UTF-8 text") from None


def count_rows(path: Path) -> int | None:
    """A quick estimate of the number of rows (for a progress bar); None when unknown.

    CSV and JSON Lines: line breaks counted in 1 MiB blocks. A JSON array: its items decoded
    one at a time and dropped (about 10 us a row, a fraction of a percent of a run), so even
    that progress bar knows its end from the start."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            with open(path, encoding="utf-8-sig") as text:
                return sum(1 for _, ok in _json_array_items(text) if ok)
        except (OSError, UnicodeDecodeError, PayrunFileError):
            return None
    if suffix not in (".csv", ".txt", ".jsonl", ".ndjson"):
        return None
    try:
        with open(path, "rb") as handle:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return None
    return max(lines - (1 if suffix in (".csv", ".txt") else 0), 0)


def read_text_rows(text: str, *, default_schema: str | None = None) -> list[PayrunRow | RowProblem]:
    """Check CSV text held in memory (tests, previews)."""
    seen: dict[str, int] = {}
    return [_check_row(raw, default_schema, seen, None) for raw in _csv_rows(io.StringIO(text))]
