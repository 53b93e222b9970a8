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

from dataclasses import dataclass

CELLS = 32
"""The grid's cells per side."""
MAX_PLACED = 1_000_000
"""At most this many (cover, cell) entries: a real page places a few thousand (a page-wide box
is 1,024). Past it the page is not read (:class:`TooManyCovers`), rather than slowly."""


class TooManyCovers(Exception):
    """The page's covers would fill the grid past :data:`MAX_PLACED`."""


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
        self._cells: dict[tuple[int, int], list[Cover]] = {}
        self.latest = max((cover.order for cover in covers), default=-1)
        """The last cover's place in the drawing order: a character drawn after it is seen."""
        placed = 0
        for cover in covers:
            first_column, first_row = self._cell(cover.left, cover.bottom)
            last_column, last_row = self._cell(cover.right, cover.top)
            placed += (last_column - first_column + 1) * (last_row - first_row + 1)
            if placed > MAX_PLACED:
                raise TooManyCovers
            for column in range(first_column, last_column + 1):
                for row in range(first_row, last_row + 1):
                    self._cells.setdefault((column, row), []).append(cover)
        for listed in self._cells.values():
            listed.sort(key=_drawn_last_first)

    def hides(self, order: int, x: float, y: float) -> bool:
        """Whether a cover drawn after `order` contains the point (x, y)."""
        if order >= self.latest:
            return False  # most pages: the boxes and lines are drawn before the text
        for cover in self._cells.get(self._cell(x, y), ()):
            if cover.order <= order:
                return False  # the rest were drawn before the character
            if cover.left <= x <= cover.right and cover.bottom <= y <= cover.top:
                return True
        return False

    def may_hide(self, order: int, left: float, bottom: float, right: float, top: float) -> bool:
        """Whether a cover drawn after `order` overlaps the box at all (a text object's: when
        none does, none of its characters need `hides`)."""
        if order >= self.latest:
            return False
        first_column, first_row = self._cell(left, bottom)
        last_column, last_row = self._cell(right, top)
        for column in range(first_column, last_column + 1):
            for row in range(first_row, last_row + 1):
                for cover in self._cells.get((column, row), ()):
                    if cover.order <= order:
                        break
                    if (
                        cover.left <= right
                        and left <= cover.right
                        and cover.bottom <= top
                        and bottom <= cover.top
                    ):
                        return True
        return False

    def _cell(self, x: float, y: float) -> tuple[int, int]:
        column = int((x - self._left) // self._width)
        row = int((y - self._bottom) // self._height)
        return min(max(column, 0), CELLS - 1), min(max(row, 0), CELLS - 1)


def _drawn_last_first(cover: Cover) -> int:
    return -cover.order
