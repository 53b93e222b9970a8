"""One PDF holding every employee's payslip, split into each row's pages by the text on them.

Payroll systems print a pay run as one PDF. Each page is matched to the rows whose external id or
employee name appears in its text (pypdf's text extraction; words compared case-folded with
punctuation as spaces, so "E-0001" and "Casey  Sampleton" are found however the PDF spaces
them). A page that names exactly one row starts (or continues) that row's payslip; a page that
names nobody continues the payslip before it (page 2 of a long payslip rarely repeats the name).
A page that names several rows, the pages that continue it, and pages before the first match
belong to nobody: they are listed in plain words (page numbers and row numbers only, never the
text) and never stamped, because a badge on the wrong person's payslip is worse than none.

Ids of under four digits are not matched (they turn up in amounts and dates); the name still
is. A PDF with no text at all (a scan) is refused: there is nothing to match, and guessing by
page count would put badges on the wrong payslips.

The split PDFs are written to a private folder inside the output folder (`SPLIT_DIR`) for the
run's workers to stamp, and removed when the run ends.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.issuer.run.rows import PayrunFileError, RowInput
from app.output.files import unreadable

__all__ = [
    "SPLIT_DIR",
    "Assignment",
    "Person",
    "assign_pages",
    "page_texts",
    "people_of",
    "split_pdf",
]

SPLIT_DIR = ".combined-pdf-pages"
_WORD_RE = re.compile(r"[^\W_]+")
_Index = dict[str, list[tuple[tuple[str, ...], int, bool]]]


@dataclass(frozen=True)
class Person:
    """A row's identity for matching (the name is personal data: kept in memory only)."""

    row: int
    external_id: str
    name: str = field(repr=False)


@dataclass
class Assignment:
    """Which pages (0-based) belong to which row, and what could not be placed."""

    pages: dict[int, list[int]] = field(default_factory=dict)
    unmatched: list[int] = field(default_factory=list)
    ambiguous: dict[int, tuple[int, ...]] = field(default_factory=dict)  # page -> rows
    orphans: list[int] = field(default_factory=list)  # pages continuing an ambiguous page
    page_count: int = 0
    row_notes: dict[int, list[str]] = field(default_factory=dict)

    def summary(self) -> list[str]:
        """Plain lines for the run's summary (page and row numbers only)."""
        lines = [f"combined PDF: {self.page_count} pages, {len(self.pages)} employees found in it"]
        if self.unmatched:
            lines.append(
                f"combined PDF: {_pages(self.unmatched)} {_name_verb(self.unmatched)} no "
                "employee of the file; not stamped"
            )
        for page, rows in self.ambiguous.items():
            lines.append(
                f"combined PDF: page {page + 1} names several employees (rows "
                f"{', '.join(map(str, rows))}); not stamped"
            )
        if self.orphans:
            lines.append(
                f"combined PDF: {_pages(self.orphans)} follow a page naming several employees; "
                "not stamped"
            )
        return lines


def _pages(pages: list[int]) -> str:
    numbers = ", ".join(str(p + 1) for p in pages)
    return f"page {numbers}" if len(pages) == 1 else f"pages {numbers}"


def _name_verb(pages: list[int]) -> str:
    return "names" if len(pages) == 1 else "name"


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.casefold())


def people_of(rows: Iterable[RowInput]) -> list[Person]:
    """Each row's external id and employee name, as given in the file."""
    return [
        Person(
            raw.number,
            (raw.meta.get("external_id") or "").strip(),
            (raw.pii.get("employee_name") or "").strip(),
        )
        for raw in rows
    ]


def page_texts(path: Path) -> list[str]:
    """The text of every page. Raises PayrunFileError when the PDF cannot be read or has no
    text at all (a scan)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise PayrunFileError(f"{path.name} is password-protected; give it unprotected")
        texts = [page.extract_text() or "" for page in reader.pages]
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    except PayrunFileError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError):
        raise PayrunFileError(f"{path.name} is not a readable PDF") from None
    if not texts:
        raise PayrunFileError(f"{path.name} has no pages")
    if not any(t.strip() for t in texts):
        raise PayrunFileError(
            f"{path.name} has no text to match pages to employees (a scanned PDF?); give one "
            "PDF per employee in a folder instead"
        )
    return texts


def _index(people: list[Person]) -> _Index:
    """First word -> (all words, row, is the id) for every id and name."""
    index: _Index = {}
    for person in people:
        keys: list[tuple[tuple[str, ...], bool]] = []
        ident = tuple(_words(person.external_id))
        if ident and not (len(ident) == 1 and ident[0].isdigit() and len(ident[0]) < 4):
            keys.append((ident, True))
        name = tuple(_words(person.name))
        if name:
            keys.append((name, False))
        for words, is_id in keys:
            index.setdefault(words[0], []).append((words, person.row, is_id))
    return index


def _matches(words: list[str], index: _Index) -> set[int]:
    by_id: set[int] = set()
    by_name: set[int] = set()
    for i, word in enumerate(words):
        for key, row, is_id in index.get(word, ()):
            if tuple(words[i : i + len(key)]) == key:
                (by_id if is_id else by_name).add(row)
    both = by_id & by_name
    if both:
        return both
    return by_id | by_name


def assign_pages(texts: list[str], people: list[Person]) -> Assignment:
    """Assign every page (see the module's rules)."""
    index = _index(people)
    result = Assignment(page_count=len(texts))
    current: int | None = None  # the row the previous page belongs to
    after_ambiguous = False
    order: list[tuple[int, int | None]] = []  # (page, row or None)
    for page, text in enumerate(texts):
        rows = _matches(_words(text), index)
        if len(rows) == 1:
            current, after_ambiguous = next(iter(rows)), False
        elif len(rows) > 1:
            result.ambiguous[page] = tuple(sorted(rows))
            current, after_ambiguous = None, True
            order.append((page, None))
            continue
        if current is None:
            (result.orphans if after_ambiguous else result.unmatched).append(page)
            order.append((page, None))
            continue
        result.pages.setdefault(current, []).append(page)
        order.append((page, current))
    _note_neighbours(result, order)
    for person in people:
        if person.row not in result.pages:
            result.row_notes.setdefault(person.row, []).append(
                "no page of the combined PDF names this employee (badge only)"
            )
    return result


def _note_neighbours(result: Assignment, order: list[tuple[int, int | None]]) -> None:
    """Tell the rows on either side of each unplaced page about it, in results.csv."""
    for position, (page, row) in enumerate(order):
        if row is not None:
            continue
        if page in result.ambiguous:
            what = "names several employees"
        elif page in result.orphans:
            what = "follows a page naming several employees"
        else:
            what = "names no employee of the file"
        note = f"page {page + 1} of the combined PDF {what} and was not stamped"
        before = next((r for _, r in reversed(order[:position]) if r is not None), None)
        after = next((r for _, r in order[position + 1 :] if r is not None), None)
        for neighbour in {before, after} - {None}:
            assert neighbour is not None
            notes = result.row_notes.setdefault(neighbour, [])
            if note not in notes:
                notes.append(note)


def split_pdf(path: Path, assignment: Assignment, folder: Path) -> dict[int, str]:
    """Write each row's pages to `folder/<row>.pdf` (a private folder: payslips are personal)
    and return row -> file name, for the run to stamp as any employee's PDF."""
    import pikepdf

    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    names: dict[int, str] = {}
    try:
        with pikepdf.open(path) as source:
            for row, pages in assignment.pages.items():
                part = pikepdf.new()
                for page in pages:
                    part.pages.append(source.pages[page])
                name = f"{row:06d}.pdf"
                part.save(folder / name)
                part.close()
                names[row] = name
    except pikepdf.PdfError:
        raise PayrunFileError(f"{path.name} is not a readable PDF") from None
    except OSError as exc:
        raise PayrunFileError(unreadable(path, exc)) from None
    return names
