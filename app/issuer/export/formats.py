"""Opening a payroll export as a header and a stream of rows of cells, whatever its file kind.

* CSV: the encoding is UTF-8 (with or without a BOM) when every byte of the file decodes as
  UTF-8, else Windows-1252 (what Excel on an Australian or New Zealand PC writes); the whole
  file is validated in 1 MiB blocks first, so a stray byte on row 40,000 cannot switch the
  encoding half way through. The delimiter (`,` `;` or tab) is the one the header line uses
  most. Cells are text.
* XLSX: openpyxl in read-only mode streams the rows of the first sheet (or the mapping's
  `sheet`), so a 50,000-row workbook is never held in memory. Cells keep their types (numbers,
  dates), which `cells` converts.

`skip_rows` lines or rows (a title such as "Pay run 13/11/2026") come before the header.
Blank rows are not rows. Errors are plain `PayrunFileError` text naming the file, not its cells.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from app.issuer.run.rows import PayrunFileError
from app.output.files import unreadable

__all__ = [
    "EXPORT_SUFFIXES",
    "Table",
    "csv_dialect",
    "csv_header",
    "open_table",
    "sniff_encoding",
]

EXPORT_SUFFIXES = (".csv", ".txt", ".xlsx", ".xlsm")
_DELIMITERS = (",", ";", "\t")


@dataclass
class Table:
    """An opened export: `header` (cells as written) and `rows`, each (row number, cells).
    Row 1 is the first row after the header, as in today's CSV layout. Close when done."""

    header: list[str]
    rows: Iterator[tuple[int, list[Any]]]
    _closer: contextlib.ExitStack

    def close(self) -> None:
        self._closer.close()

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sniff_encoding(path: Path) -> str:
    """`utf-8-sig` when the file is UTF-8 (a BOM is dropped), else `cp1252`."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                decoder.decode(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return "cp1252"
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    return "utf-8-sig"


def csv_dialect(line: str) -> str:
    """The delimiter the first lines use most (outside quotes); `,` when they use none."""
    counts = dict.fromkeys(_DELIMITERS, 0)
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif not quoted and char in counts:
            counts[char] += 1
    best = max(_DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def csv_header(reader: Iterator[list[str]]) -> list[str]:
    """A CSV's first line, as the csv module splits it. Refused (PayrunFileError) when the file
    is empty or the line is not valid CSV, in the same words for an export and today's layout."""
    try:
        return next(reader)
    except StopIteration:
        raise PayrunFileError("the file is empty (a header line is expected)") from None
    except csv.Error:
        raise PayrunFileError("the header line is not valid CSV") from None


def _numbered(
    rows: Iterator[list[Any]], blank_rows: bool = False
) -> Iterator[tuple[int, list[Any]]]:
    number = 0
    for cells in rows:
        if not blank_rows and not any(c is not None and str(c).strip() for c in cells):
            continue
        number += 1
        yield number, cells


def _open_csv(
    path: Path, skip_rows: int, stack: contextlib.ExitStack, blank_rows: bool = False
) -> Table:
    encoding = sniff_encoding(path)
    try:
        handle = stack.enter_context(open(path, encoding=encoding, newline=""))  # noqa: SIM115
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    try:
        for _ in range(skip_rows):
            handle.readline()
        start = handle.tell()
        first = "".join(handle.readline() for _ in range(5))
        handle.seek(start)
    except UnicodeDecodeError:
        raise PayrunFileError(f"{path.name} is neither UTF-8 nor Windows-1252 text") from None
    reader = csv.reader(handle, delimiter=csv_dialect(first))
    header = csv_header(reader)

    def rows() -> Iterator[list[Any]]:
        while True:
            try:
                yield next(reader)
            except StopIteration:
                return
            except csv.Error:
                yield [_BAD_CSV]
            except UnicodeDecodeError:
                raise PayrunFileError(
                    f"{path.name} is neither UTF-8 nor Windows-1252 text"
                ) from None

    return Table(header, _numbered(rows(), blank_rows), stack)


class _BadCsv:
    """The cell list of a line the csv module could not read (unbalanced quotes)."""

    def __str__(self) -> str:
        return "?"


_BAD_CSV = _BadCsv()


def is_bad_csv(cells: list[Any]) -> bool:
    return len(cells) == 1 and cells[0] is _BAD_CSV


def _open_xlsx(
    path: Path,
    sheet: str | None,
    skip_rows: int,
    stack: contextlib.ExitStack,
    blank_rows: bool = False,
) -> Table:
    try:
        from openpyxl import load_workbook
    except ImportError:  # pragma: no cover - the app extra installs it
        raise PayrunFileError("reading .xlsx needs openpyxl (pip install openpyxl)") from None
    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    except Exception:  # zipfile.BadZipFile, KeyError, XML errors: all "not a workbook"
        raise PayrunFileError(f"{path.name} is not an Excel workbook (.xlsx)") from None
    stack.callback(book.close)
    if sheet is not None and sheet not in book.sheetnames:
        raise PayrunFileError(
            f"the workbook has no sheet named {sheet} (it has: {', '.join(book.sheetnames)})"
        )
    ws = book[sheet] if sheet is not None else book.worksheets[0]
    values = ws.iter_rows(values_only=True)
    for _ in range(skip_rows):
        next(values, None)
    first = next(values, None)
    if first is None:
        raise PayrunFileError("the sheet is empty (a header row is expected)")
    header = ["" if c is None else str(c) for c in first]
    while header and not header[-1].strip():
        header.pop()  # formatted but empty columns at the right
    width = len(header)

    def rows() -> Iterator[list[Any]]:
        for cells in values:
            if blank_rows:  # probing for the header: every cell as it is
                yield list(cells)
                continue
            row = list(cells[:width])
            if any(c is not None and str(c).strip() for c in cells[width:]):
                row.append(_EXTRA)  # a value beyond the last header
            elif len(row) < width:
                row.extend([None] * (width - len(row)))
            yield row

    return Table(header, _numbered(rows(), blank_rows), stack)


_EXTRA = object()


def has_extra_cell(cells: list[Any]) -> bool:
    return bool(cells) and cells[-1] is _EXTRA


def open_table(
    path: Path, *, sheet: str | None = None, skip_rows: int = 0, blank_rows: bool = False
) -> Table:
    """Open FILE by its suffix (.xlsx/.xlsm as a workbook, anything else as CSV). With
    `blank_rows`, blank rows are kept and XLSX rows are not cut to the header's width (to find
    a header below title rows)."""
    stack = contextlib.ExitStack()
    try:
        if path.suffix.lower() in (".xlsx", ".xlsm"):
            return _open_xlsx(path, sheet, skip_rows, stack, blank_rows)
        return _open_csv(path, skip_rows, stack, blank_rows)
    except BaseException:
        stack.close()
        raise


def csv_text_table(text: str) -> Table:
    """A table from CSV text held in memory (tests)."""
    handle = io.StringIO(text)
    reader = csv.reader(handle, delimiter=csv_dialect(text.split("\n", 1)[0]))
    header = next(reader)
    return Table(header, _numbered(iter(reader)), contextlib.ExitStack())


def count_sheet_rows(path: Path, sheet: str | None, skip_rows: int) -> int | None:
    """A workbook sheet's rows below its header, for a progress bar: the number of its last
    `<row>`, read from the decompressed sheet XML (about 0.1 s for 50,000 rows; opening the
    workbook with openpyxl would parse its whole shared-string table first). None when it
    cannot tell."""
    try:
        with zipfile.ZipFile(path) as book:
            part = _sheet_part(book, sheet)
            if part is None:
                return None
            last, tail = 0, b""
            with book.open(part) as xml:
                for block in iter(lambda: xml.read(1 << 20), b""):
                    data = tail + block
                    found = _last_row_number(data)
                    last = found or last
                    tail = data[-200:]
    except (OSError, zipfile.BadZipFile, KeyError, ElementTree.ParseError):
        return None
    return max(last - skip_rows - 1, 0)


_ROW_RE = re.compile(rb'<(?:\w+:)?row\b[^>]*?\br="(\d+)"')


def _last_row_number(data: bytes) -> int:
    """The `r` (Excel row number) of the last `<row>` element starting in `data` (0: none)."""
    start = max(data.rfind(b"<row"), data.rfind(b":row"))
    while start >= 0:
        begin = data.rfind(b"<", 0, start + 1)
        match = _ROW_RE.match(data, begin)
        if match:
            return int(match.group(1))
        start = max(data.rfind(b"<row", 0, start), data.rfind(b":row", 0, start))
    return 0


_NS_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_NS_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_NS_PKG = "{http://schemas.openxmlformats.org/package/2006/relationships}"


def _sheet_part(book: zipfile.ZipFile, sheet: str | None) -> str | None:
    """The zip member holding a sheet (the first, or the one named), from the workbook's
    sheet list and its relationships."""
    # Two small parts of the workbook; expat >= 2.4 refuses entity amplification and
    # ElementTree resolves no external entities (openpyxl parses the same parts the same way).
    workbook = ElementTree.fromstring(book.read("xl/workbook.xml"))  # noqa: S314
    sheets = workbook.findall(f"{_NS_MAIN}sheets/{_NS_MAIN}sheet")
    chosen = next((s for s in sheets if sheet is None or s.get("name") == sheet), None)
    if chosen is None:
        return None
    rel_id = chosen.get(f"{_NS_REL}id")
    rels = ElementTree.fromstring(book.read("xl/_rels/workbook.xml.rels"))  # noqa: S314
    for rel in rels.findall(f"{_NS_PKG}Relationship"):
        if rel.get("Id") == rel_id:
            target = str(rel.get("Target", ""))
            return target.lstrip("/") if target.startswith("/") else f"xl/{target}"
    return None
