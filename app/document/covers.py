"""What may hide a character on a text PDF's page: the filled paths and images drawn after it,
found by where they lie.

A character is hidden when a cover drawn later contains its centre (pdf_text.py). Testing every
character against every cover is quadratic: a 14 KiB page with 40,000 small filled squares took
23 s of CPU to read, and the desk waited on "Checking the document…" all that time. The covers
are therefore indexed in a grid over the crop box: a character is tested only against the covers
of its own cell, listed in drawing order from the last, so the search stops at the first cover
drawn before the character.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CELLS = 32
"""The grid's cells per side."""
MAX_PLACED = 1_000_000
"""At most this many (cover, cell) entries: a real page places a few thousand (a page-wide box
is 1,024). Past it the page is not read (:class:`TooManyCovers`), rather than slowly."""


MAX_TESTS = 5_000_000
"""At most this many (character, cover) tests for a page (a real page makes a few thousand):
all covers can be heaped in one cell, where every character would test each of them."""


class TooManyCovers(Exception):
    """The page's covers would fill the grid past :data:`MAX_PLACED`, or take more than
    :data:`MAX_TESTS` tests."""


@dataclass(frozen=True, slots=True)
class Cover:
    """A filled path or an image: its place in the drawing order and its bounds (PDF units)."""

    order: int
    left: float
    bottom: float
    right: float
    top: float

    def hides(self, order: int, x: float, y: float) -> bool:
        return order < self.order and self.left <= x <= self.right and self.bottom <= y <= self.top

    def share_of(self, crop: tuple[float, float, float, float]) -> float:
        left, bottom, right, top = crop
        width = max(0.0, min(self.right, right) - max(self.left, left))
        height = max(0.0, min(self.top, top) - max(self.bottom, bottom))
        return width * height / max((right - left) * (top - bottom), 1e-6)


class Covers:
    """The page's covers indexed by grid cell; `hides` answers as testing each cover would."""

    def __init__(self, covers: list[Cover], crop: tuple[float, float, float, float]) -> None:
        self._left, self._bottom = crop[0], crop[1]
        self._width = max((crop[2] - crop[0]) / CELLS, 1e-6)
        self._height = max((crop[3] - crop[1]) / CELLS, 1e-6)
        self._cells: dict[int, list[Cover]] = {}
        """Cell (column * CELLS + row) -> its covers, drawn last first."""
        self.latest = max((cover.order for cover in covers), default=-1)
        """The last cover's place in the drawing order: a character drawn after it is seen."""
        self._tests_left = MAX_TESTS
        placed = 0
        for cover in covers:
            if math.isnan(cover.left + cover.bottom + cover.right + cover.top):
                continue  # a degenerate matrix: no point is inside (as the plain test found)
            first_column, first_row = self._cell(cover.left, cover.bottom)
            last_column, last_row = self._cell(cover.right, cover.top)
            placed += (last_column - first_column + 1) * (last_row - first_row + 1)
            if placed > MAX_PLACED:
                raise TooManyCovers
            for column in range(first_column, last_column + 1):
                for row in range(first_row, last_row + 1):
                    self._cells.setdefault(column * CELLS + row, []).append(cover)
        for listed in self._cells.values():
            listed.sort(key=_drawn_last_first)

    def hides(self, order: int, x: float, y: float) -> bool:
        """Whether a cover drawn after `order` contains the point (x, y)."""
        if order >= self.latest:
            return False  # most pages: the boxes and lines are drawn before the text
        # The point's cell, written out (this runs for every character): a character's centre
        # is inside the crop box, so only the far edges need bringing in.
        column = min(int((x - self._left) / self._width), CELLS - 1)
        row = min(int((y - self._bottom) / self._height), CELLS - 1)
        listed = self._cells.get(max(column, 0) * CELLS + max(row, 0), ())
        self._tests_left -= len(listed)
        if self._tests_left < 0:
            raise TooManyCovers  # covers heaped on the characters: not read, rather than slowly
        for cover in listed:
            if cover.order <= order:
                return False  # the rest were drawn before the character
            if cover.left <= x <= cover.right and cover.bottom <= y <= cover.top:
                return True
        return False

    def _cell(self, x: float, y: float) -> tuple[int, int]:
        # Clamped before the division: an infinite bound (a huge matrix) is the grid's edge.
        column = (min(max(x - self._left, 0.0), CELLS * self._width)) // self._width
        row = (min(max(y - self._bottom, 0.0), CELLS * self._height)) // self._height
        return min(int(column), CELLS - 1), min(int(row), CELLS - 1)


def _drawn_last_first(cover: Cover) -> int:
    return -cover.order
