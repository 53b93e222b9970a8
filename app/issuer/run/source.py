"""Reading a pay-run file (CSV, JSON or JSON Lines) row by row, each row checked before anything
is sent.

Rows are read one at a time (a 50,000-row file is never held in memory) and each is either a
`PayrunRow`, ready to encrypt and register, or a `RowProblem` listing every plain-language reason
it cannot be issued (`rows.check_row`). A bad row never stops the good ones; only a file that
cannot be read at all raises `PayrunFileError`.

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

import contextlib
import csv
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TextIO

from app.issuer.export.formats import (
    count_sheet_rows,
    csv_dialect,
    csv_header,
    open_table,
    sniff_encoding,
)
from app.issuer.export.mapping import ExportMapping, is_target, resolve_headers
from app.issuer.export.reader import read_export, read_export_raw
from app.issuer.run.json_source import json_array_items, json_rows, jsonl_rows
from app.issuer.run.rows import (
    PayrunFileError,
    PayrunRow,
    RowInput,
    RowProblem,
    check_row,
)
from app.output.files import unreadable

__all__ = [
    "PayrunSource",
    "check_header",
    "count_rows",
    "is_own_layout",
    "read_payrun",
    "read_raw_rows",
    "read_text_rows",
]

_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def _csv_header(reader: Iterator[list[str]]) -> list[str]:
    """The header line, trimmed. Refused when there is none, when it is blank, or when it names
    a column twice (one of the two cells would silently win)."""
    header = [h.strip() for h in csv_header(reader)]
    if not any(header):
        raise PayrunFileError("the header line is empty")
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise PayrunFileError("the header repeats columns: " + ", ".join(repeated))
    return header


def _csv_row(number: int, header: list[str], cells: list[str]) -> RowInput:
    """One line's cells in the neutral shape: meta columns, `pii.<field>` columns, and every
    other column as a path inside the non-personal part (its text kept as typed)."""
    row = RowInput(number, {}, {}, None)
    if len(cells) != len(header):
        # Keep the external id (if its cell is there) so the problem can be matched up.
        for name, value in zip(header, cells, strict=False):
            if name == "external_id":
                row.meta[name] = value.strip()
        row.reasons.append(
            f"row: has {len(cells)} cells but the header has {len(header)} columns "
            "(a missing or extra delimiter?)"
        )
        return row
    for name, value in zip(header, cells, strict=True):
        if name:
            row.put(name, value)
        elif value.strip():
            row.reasons.append("a column without a header name holds a value")
    row.pii_format = row.meta.get("pii_format")
    return row


def _csv_rows(handle: TextIO, delimiter: str = ",") -> Iterator[RowInput]:
    """Rows numbered from 1, blank lines skipped; a line the csv module cannot split is a row
    with a reason, and reading goes on."""
    reader = csv.reader(handle, delimiter=delimiter)
    header = _csv_header(reader)
    number = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            number += 1
            yield RowInput(number, {}, {}, None, reasons=["row: not valid CSV (check quotes)"])
            continue
        if not any(c.strip() for c in cells):
            continue  # blank lines are not rows
        number += 1
        yield _csv_row(number, header, cells)


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


def is_own_layout(path: Path) -> bool:
    """Whether a CSV's header uses today's column names exactly (else it is read as a
    payroll export: headers case-folded, and any unknown one refused)."""
    with open_table(path) as table:
        return _own_header(table.header)


def _own_header(header: list[str]) -> bool:
    return all(not h.strip() or is_target(h.strip()) for h in header)


class PayrunSource:
    """One pay-run file, what kind it is decided once, when it is opened.

    A JSON or JSON Lines file is in today's layout; anything else is opened once for its header:
    a workbook, a CSV with a mapping, or a CSV whose headers are not all today's column names is
    a payroll system's export (`app.issuer.export`), the rest a CSV in today's layout. Then it
    answers the header check, the row count and the rows (checked or raw) without deciding again.
    Opening raises PayrunFileError when the file cannot be read.
    """

    def __init__(self, path: Path, mapping: ExportMapping | None, header: list[str] | None):
        self.path = path
        self.mapping = mapping
        self.header = header
        """The header line (None for JSON, whose rows are checked one by one)."""
        suffix = path.suffix.lower()
        self.is_export = header is not None and (
            mapping is not None or suffix in (".xlsx", ".xlsm") or not _own_header(header)
        )

    @classmethod
    def open(cls, path: Path, mapping: ExportMapping | None = None) -> PayrunSource:
        if path.suffix.lower() in _JSON_SUFFIXES:
            return cls(path, mapping, None)
        chosen = mapping or ExportMapping()
        with open_table(path, sheet=chosen.sheet, skip_rows=chosen.skip_rows) as table:
            return cls(path, mapping, list(table.header))

    def check_header(self) -> None:
        """Raise PayrunFileError when the header has columns nobody placed, so a run stops
        before it opens a journal or sends anything (JSON: checked per row)."""
        if self.header is not None:
            resolve_headers(self.header, self.mapping or ExportMapping())

    def count(self) -> int | None:
        """A quick estimate of the number of rows (see :func:`count_rows`)."""
        return count_rows(self.path, self.mapping)

    def rows(
        self,
        *,
        default_schema: str | None = None,
        pdf_dir: Path | None = None,
        pdf_names: Mapping[int, str] | None = None,
    ) -> Iterator[PayrunRow | RowProblem]:
        """Every row, checked, in file order; a bad row is a RowProblem and reading goes on.
        `pdf_names` (row number -> file in `pdf_dir`) names each row's PDF when the PDFs come
        split from one combined PDF."""
        if self.is_export:
            yield from read_export(
                self.path,
                self.mapping or ExportMapping(),
                default_schema=default_schema,
                pdf_dir=pdf_dir,
                pdf_names=pdf_names,
            )
            return
        seen: dict[str, int] = {}
        with _own_layout_rows(self.path) as rows:
            for raw in _with_pdf_names(rows, pdf_names):
                yield check_row(raw, default_schema, seen, pdf_dir)

    def raw_rows(self, *, default_schema: str | None = None) -> Iterator[RowInput]:
        """The rows in the neutral shape, unchecked (to match pages of a combined PDF to rows)."""
        if self.is_export:
            mapping = self.mapping or ExportMapping()
            yield from read_export_raw(self.path, mapping, default_schema=default_schema)
            return
        with _own_layout_rows(self.path) as rows:
            yield from rows


@contextlib.contextmanager
def _own_layout_rows(path: Path) -> Iterator[Iterator[RowInput]]:
    """The unchecked rows of a file in today's layout (CSV, JSON or JSON Lines), open while the
    block runs. A file that cannot be opened, or text that is not UTF-8 anywhere in the block
    (rows are decoded as they are read), raises PayrunFileError."""
    encoding = "utf-8-sig" if path.suffix.lower() in _JSON_SUFFIXES else sniff_encoding(path)
    try:
        handle: TextIO = open(path, encoding=encoding, newline="")  # noqa: SIM115
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    with handle:
        try:
            kind = _kind_of(path, handle)
            if kind == "csv":
                delimiter = csv_dialect(handle.readline())
                handle.seek(0)
                yield _csv_rows(handle, delimiter)
            else:
                yield {"json": json_rows, "jsonl": jsonl_rows}[kind](handle)
        except UnicodeDecodeError:
            raise PayrunFileError(f"{path.name} is not UTF-8 text") from None


def _with_pdf_names(
    rows: Iterator[RowInput], pdf_names: Mapping[int, str] | None
) -> Iterator[RowInput]:
    for raw in rows:
        if pdf_names is not None:
            raw.meta.pop("pdf", None)
            if raw.number in pdf_names:
                raw.meta["pdf"] = pdf_names[raw.number]
        yield raw


def read_payrun(
    path: Path,
    *,
    default_schema: str | None = None,
    pdf_dir: Path | None = None,
    mapping: ExportMapping | None = None,
    pdf_names: Mapping[int, str] | None = None,
) -> Iterator[PayrunRow | RowProblem]:
    """Every row of a pay-run file, checked, in file order (:meth:`PayrunSource.rows`). Raises
    PayrunFileError only when the file as a whole cannot be read."""
    source = PayrunSource.open(path, mapping)
    yield from source.rows(default_schema=default_schema, pdf_dir=pdf_dir, pdf_names=pdf_names)


def check_header(path: Path, mapping: ExportMapping | None = None) -> None:
    """Raise PayrunFileError now when the file cannot be opened or has headers nobody placed."""
    PayrunSource.open(path, mapping).check_header()


def read_raw_rows(
    path: Path, *, default_schema: str | None = None, mapping: ExportMapping | None = None
) -> Iterator[RowInput]:
    """The rows in the neutral shape, unchecked (to match pages of a combined PDF to rows)."""
    yield from PayrunSource.open(path, mapping).raw_rows(default_schema=default_schema)


def count_rows(path: Path, mapping: ExportMapping | None = None) -> int | None:
    """A quick estimate of the number of rows (for a progress bar); None when unknown.

    CSV and JSON Lines: line breaks counted in 1 MiB blocks. A JSON array: its items decoded
    one at a time and dropped (about 10 us a row, a fraction of a percent of a run), so even
    that progress bar knows its end from the start."""
    suffix = path.suffix.lower()
    skip = mapping.skip_rows if mapping is not None else 0
    if suffix in (".xlsx", ".xlsm"):
        return count_sheet_rows(path, mapping.sheet if mapping else None, skip)
    if suffix == ".json":
        try:
            with open(path, encoding="utf-8-sig") as text:
                return sum(1 for _, ok in json_array_items(text) if ok)
        except (OSError, UnicodeDecodeError, PayrunFileError):
            return None
    if suffix not in (".csv", ".txt", ".jsonl", ".ndjson"):
        return None
    try:
        with open(path, "rb") as handle:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except OSError:
        return None
    return max(lines - (1 + skip if suffix in (".csv", ".txt") else 0), 0)


def read_text_rows(text: str, *, default_schema: str | None = None) -> list[PayrunRow | RowProblem]:
    """Check CSV text held in memory (tests, previews)."""
    seen: dict[str, int] = {}
    return [check_row(raw, default_schema, seen, None) for raw in _csv_rows(io.StringIO(text))]
