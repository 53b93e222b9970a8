"""Label -> value, and the per-field and document statuses of PROTOCOL §13.

A label's value is the next cell on its line; when that cell is another label (a row of column
headings), or there is none, the cell below in the same column. Per field: ``matches`` when a
label shows the registered value, ``differs`` when labels show values of its kind and none is
the registered value, ``not_shown`` otherwise. Only a *sure* value may accuse: one read under a
strong label, with confidence (OCR), and not in doubt: a money value whose line also holds the
registered amount (a this-pay/YTD row read in the other order), or an OCR'd name one or two
letters from the registered one. No false alarm is worse than a miss.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from app.document.fields import (
    FIELD_BY_NAME,
    FIELDS,
    LABELS,
    NOT_NAMES,
    FieldName,
    LabelUse,
    label_key,
)
from app.document.layout import Cell, Line
from app.document.names import name_words
from app.document.values import (
    format_money,
    is_name_like,
    name_shown,
    near_name,
    parse_date,
    parse_money,
    parse_period,
)

FieldStatus = Literal["matches", "differs", "not_shown"]
DocumentStatus = Literal["matches", "altered", "not_compared"]
NO_PAGE = "no page could be read"
NOTHING_SHOWN = "none of the compared fields is shown"
NO_PAY = "neither gross nor net pay is shown"
_MAX_PREFIX_WORDS = 3
_LABEL_GAP = 2.5
"""Cells closer than this many heights may be the words of one label."""
_ALTERED = "This copy was altered: do not accept it."
NOT_COMPARED_WORDS = "Compare the printed figures with these: the page could not be compared"
"""PROTOCOL §13's words for a page that was not compared; the reason follows in brackets."""


@dataclass(frozen=True)
class Registered:
    """The registered values compared (absent ones are not compared)."""

    currency: str
    digits: int
    money: dict[FieldName, int]
    dates: dict[FieldName, date]
    name: str | None


@dataclass(frozen=True)
class Page:
    lines: list[Line]
    ocr: bool = False


@dataclass(frozen=True)
class FieldResult:
    field: FieldName
    status: FieldStatus
    registered: str
    shown: str | None
    registered_words: str
    shown_words: str | None

    def wire(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "status": self.status,
            "registered": self.registered,
            "shown": self.shown,
        }

    def sentence(self) -> str:
        words = FIELD_BY_NAME[self.field].words
        return (
            f"The page shows {words} {self.shown_words}; "
            f"the registered payslip says {self.registered_words}."
        )


@dataclass(frozen=True)
class DocumentCheck:
    status: DocumentStatus
    reason: str | None
    fields: list[FieldResult]

    def wire(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "fields": [f.wire() for f in self.fields],
        }

    def sentences(self) -> list[str]:
        """One sentence per differing field; the last one says what to do."""
        out = [f.sentence() for f in self.fields if f.status == "differs"]
        if out:
            out[-1] = f"{out[-1]} {_ALTERED}"
        return out

    @property
    def summary(self) -> str:
        if self.status == "altered":
            return " ".join(self.sentences())
        if self.status == "matches":
            return "The printed figures match the registered payslip."
        return f"{NOT_COMPARED_WORDS} ({self.reason})."


def compared_lines(check: DocumentCheck) -> list[tuple[str, str, str]]:
    """(field, registered, shown) in words for each compared field, for an altered page."""
    return [
        (
            FIELD_BY_NAME[f.field].words.capitalize(),
            f.registered_words,
            f.shown_words if f.shown_words is not None else "not shown",
        )
        for f in check.fields
    ]


def not_compared(reason: str, registered: Registered | None = None) -> DocumentCheck:
    fields = [] if registered is None else _results(registered, {})
    return DocumentCheck("not_compared", reason, fields)


@dataclass(frozen=True)
class _Seen:
    """One value shown under a label of the field."""

    text: str
    sure: bool
    doubt_line: tuple[str, ...]
    """The other cells' texts on the value's line."""
    rest: str = ""
    """The value and the cells after it on its line: a name split into cells still matches."""
    period: bool = False
    """Read under a label of both period dates: only a value holding two dates counts."""


def compare(registered: Registered, pages: list[Page]) -> DocumentCheck:
    """The document check of ``pages`` against ``registered``."""
    if not any(page.lines for page in pages):
        return not_compared(NO_PAGE, registered)
    seen: dict[FieldName, list[_Seen]] = {}
    for page in pages:
        for field, value in _label_values(page):
            seen.setdefault(field, []).append(value)
    check_fields = _results(registered, seen, ocr=any(p.ocr for p in pages))
    by_status = {f.field: f.status for f in check_fields}
    if "differs" in by_status.values():
        return DocumentCheck("altered", None, check_fields)
    if "matches" in (by_status.get("gross"), by_status.get("net")):
        return DocumentCheck("matches", None, check_fields)
    reason = NO_PAY if "matches" in by_status.values() else NOTHING_SHOWN
    return DocumentCheck("not_compared", reason, check_fields)


def shows_fields(page: Page) -> bool:
    """Whether any label on the page has a value: a text page that has none may draw its
    figures as outlines (or in images), so it is worth OCR."""
    return next(_label_values(page), None) is not None


def _split(cell: Cell) -> list[Cell]:
    """ "Net Pay: 4,280.90" as a label cell and a value cell; "Net Pay 4,280.90" too when the
    rest is a value of the label's kind (money or a date)."""
    words = cell.words
    texts = [word.text for word in words]
    for end in range(1, min(len(words), _MAX_PREFIX_WORDS + 1)):
        head = " ".join(texts[:end])
        use = LABELS.get(label_key(head))
        if use is None or use.field is None:
            continue
        if head.endswith(":") or _typed_value(use, " ".join(texts[end:])):
            return [Cell(words[:end]), Cell(words[end:])]
    return [cell]


def _typed_value(use: LabelUse, text: str) -> bool:
    if use.field == "period":
        return parse_period(text) is not None
    if use.field is None or FIELD_BY_NAME[use.field].kind == "name":
        return False
    if FIELD_BY_NAME[use.field].kind == "date":
        return parse_date(text) is not None
    return parse_money(text, 2) is not None or parse_money(text, 0) is not None


def _rows(page: Page) -> list[list[Cell]]:
    return [_merged([p for cell in line.cells for p in _split(cell)]) for line in page.lines]


def _merged(row: list[Cell]) -> list[Cell]:
    """Neighbouring cells that together are a label ("Gross | Pay", as OCR may split it) as one."""
    out: list[Cell] = []
    index = 0
    while index < len(row):
        for size in (3, 2):
            group = row[index : index + size]
            if len(group) == size and _one_label(group):
                out.append(Cell(tuple(w for c in group for w in c.words)))
                index += size
                break
        else:
            out.append(row[index])
            index += 1
    return out


def _one_label(group: list[Cell]) -> bool:
    if label_key(" ".join(c.text for c in group)) not in LABELS:
        return False
    height = max(c.y1 - c.y0 for c in group)
    return all(b.x0 - a.x1 < _LABEL_GAP * height for a, b in itertools.pairwise(group))


def _label_values(page: Page) -> Iterator[tuple[FieldName, _Seen]]:
    rows = _rows(page)
    for index, row in enumerate(rows):
        for position, cell in enumerate(row):
            use = LABELS.get(label_key(cell.text))
            if use is None or use.field is None:
                continue
            found = _value_of(rows, index, position)
            if found is None:
                continue
            value, value_row = found
            at = value_row.index(value)
            text = value.text
            if use.field == "period" and parse_period(text) is None and at + 1 < len(value_row):
                text = f"{text} to {value_row[at + 1].text}"  # OCR may drop the dash
            others = tuple(c.text for c in value_row if c is not value)
            rest = " ".join(c.text for c in value_row[at:])
            sure = value.sure and not use.weak
            seen = _Seen(text, sure, others, rest, period=use.field == "period")
            if use.field == "period":
                yield "period_start", seen
                yield "period_end", seen
            else:
                yield use.field, seen


def _value_of(rows: list[list[Cell]], index: int, position: int) -> tuple[Cell, list[Cell]] | None:
    row = rows[index]
    if position + 1 < len(row):
        following = row[position + 1]
        if label_key(following.text) not in LABELS:
            return following, row
    return _below(rows, index, row[position])


def _below(rows: list[list[Cell]], index: int, label: Cell) -> tuple[Cell, list[Cell]] | None:
    """The first cell under ``label`` whose span overlaps the label's column, within a few lines."""
    height = label.y1 - label.y0
    left, right = label.x0 - height, label.x1 + height
    for row in rows[index + 1 :]:
        if not row or min(c.y0 for c in row) - label.y1 > 4 * height:
            return None
        overlapping = [c for c in row if min(c.x1, right) - max(c.x0, left) > 0]
        if overlapping:
            best = max(overlapping, key=lambda c: min(c.x1, right) - max(c.x0, left))
            return None if label_key(best.text) in LABELS else (best, row)
    return None


def _results(
    registered: Registered, seen: dict[FieldName, list[_Seen]], ocr: bool = False
) -> list[FieldResult]:
    out: list[FieldResult] = []
    for spec in FIELDS:
        values = seen.get(spec.name, [])
        if spec.name in registered.money:
            out.append(_money(spec.name, registered, values))
        elif spec.name in registered.dates:
            out.append(_date(spec.name, registered.dates[spec.name], values))
        elif spec.kind == "name" and registered.name:
            out.append(_name(registered.name, values, ocr))
    return out


def _money(field: FieldName, registered: Registered, values: list[_Seen]) -> FieldResult:
    wanted = registered.money[field]
    digits, currency = registered.digits, registered.currency
    text = format_money(wanted, digits)
    words = f"{_grouped(wanted, digits)} {currency}"
    differing: str | None = None
    for value in values:
        amount = parse_money(value.text, digits)
        if amount == wanted:
            return FieldResult(field, "matches", text, text, words, words)
        if amount is None or not value.sure or differing is not None:
            continue
        if amount == -wanted:
            continue  # a deduction printed as a negative, "(782.00)": in doubt
        if any(parse_money(other, digits) in (wanted, -wanted) for other in value.doubt_line):
            continue  # the registered amount is on the same line: in doubt
        differing = format_money(amount, digits)
        shown_words = f"{_grouped(amount, digits)} {currency}"
    if differing is None:
        return FieldResult(field, "not_shown", text, None, words, None)
    return FieldResult(field, "differs", text, differing, words, shown_words)


def _grouped(minor: int, digits: int) -> str:
    plain = format_money(abs(minor), digits)
    whole, _, fraction = plain.partition(".")
    grouped = f"{int(whole):,}" + (f".{fraction}" if fraction else "")
    return f"-{grouped}" if minor < 0 else grouped


def _date(field: FieldName, wanted: date, values: list[_Seen]) -> FieldResult:
    text, words = wanted.isoformat(), _long(wanted)
    differing: date | None = None
    for value in values:
        shown = _date_in(field, value.text, value.period)
        if shown == wanted:
            return FieldResult(field, "matches", text, text, words, words)
        if shown is not None and value.sure and differing is None and not _swapped(shown, wanted):
            differing = shown
    if differing is None:
        return FieldResult(field, "not_shown", text, None, words, None)
    return FieldResult(field, "differs", text, differing.isoformat(), words, _long(differing))


def _swapped(shown: date, wanted: date) -> bool:
    """Month first ("11/05/2026" for 5 November) would read the registered date: in doubt."""
    return (shown.year, shown.month, shown.day) == (wanted.year, wanted.day, wanted.month)


def _date_in(field: FieldName, text: str, period_label: bool) -> date | None:
    period = parse_period(text)
    if period is not None:
        return period[0] if field == "period_start" else period[1]
    return None if period_label else parse_date(text)


def _long(day: date) -> str:
    return f"{day.day} {day:%b %Y}"


def _doubtful_name(wanted: str, shown: str, ocr: bool) -> bool:
    """A shown name that may be the registered one or no name at all: it shares a word or an
    initial with it ("J. Smith"), holds a word that names no person ("Full Time"), or is an
    OCR reading one or two letters off."""
    wanted_words, shown_words = name_words(wanted), name_words(shown)
    initials = {w[0] for w in wanted_words}
    if wanted_words & shown_words or any(len(w) == 1 and w in initials for w in shown_words):
        return True
    return bool(shown_words & NOT_NAMES) or (ocr and near_name(wanted, shown))


def _name(wanted: str, values: list[_Seen], ocr: bool) -> FieldResult:
    differing: str | None = None
    for value in values:
        text = value.text
        if not is_name_like(text) or label_key(text) in LABELS:
            continue
        if name_shown(wanted, text) or name_shown(wanted, value.rest):
            shown = text if name_shown(wanted, text) else value.rest
            return FieldResult("employee_name", "matches", wanted, shown, wanted, shown)
        if value.sure and differing is None and not _doubtful_name(wanted, text, ocr):
            differing = text
    if differing is None:
        return FieldResult("employee_name", "not_shown", wanted, None, wanted, None)
    return FieldResult("employee_name", "differs", wanted, differing, wanted, differing)
