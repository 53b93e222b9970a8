"""Words with positions grouped into lines and cells, the same way for text PDFs and OCR.

A *line* is words whose vertical centres are within half a word's height; a *cell* is a run of
words on a line with gaps under about one word height (a column gap is wider than a space,
"4 280.90" stays one cell). Coordinates are page units with y growing downwards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import median

CELL_GAP = 1.0
"""A gap wider than this many word heights starts a new cell."""


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    sure: bool = True
    """False for an OCR word read with low confidence: it may confirm, never accuse."""

    @property
    def height(self) -> float:
        return max(self.y1 - self.y0, 1e-6)

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass(frozen=True, slots=True)
class Cell:
    words: tuple[Word, ...]
    text: str = field(init=False, repr=False, compare=False)
    """The words joined by spaces, once: the comparison reads a cell's text many times."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", " ".join(w.text for w in self.words))

    @property
    def x0(self) -> float:
        return min(w.x0 for w in self.words)

    @property
    def x1(self) -> float:
        return max(w.x1 for w in self.words)

    @property
    def y0(self) -> float:
        return min(w.y0 for w in self.words)

    @property
    def y1(self) -> float:
        return max(w.y1 for w in self.words)

    @property
    def sure(self) -> bool:
        return all(w.sure for w in self.words)


@dataclass(slots=True)
class Line:
    cells: list[Cell] = field(default_factory=list)

    @property
    def height(self) -> float:
        return median(w.height for c in self.cells for w in c.words)

    @property
    def y0(self) -> float:
        return min(c.y0 for c in self.cells)


def lines_of(words: Iterable[Word]) -> list[Line]:
    """The page's lines top to bottom, each with its cells left to right."""
    rows: list[list[Word]] = []
    middle = height = 0.0  # the current row's first word's: a row is one baseline's words
    for word in sorted(words, key=lambda w: (w.middle, w.x0)):
        if not word.text.strip():
            continue
        if rows and abs(word.middle - middle) <= 0.5 * min(word.height, height):
            rows[-1].append(word)
            continue
        rows.append([word])
        middle, height = word.middle, word.height
    return [Line(_cells(sorted(row, key=lambda w: w.x0))) for row in rows]


def _cells(row: list[Word]) -> list[Cell]:
    """The row split at gaps wider than :data:`CELL_GAP` of its tallest word: OCR boxes a word
    by its own glyphs ("on" is half as tall as "Pay"), so a short word must not make a space
    look like a column gap."""
    unit = max(w.height for w in row)
    cells: list[list[Word]] = [[row[0]]]
    for word in row[1:]:
        previous = cells[-1][-1]
        gap = word.x0 - previous.x1
        if gap > CELL_GAP * unit:
            cells.append([word])
        else:
            cells[-1].append(word)
    return [Cell(tuple(c)) for c in cells]
