"""The words a person sees on a text PDF's page, with their positions, read with pdfium.

The text layer is not what a page shows: an editor paints a white box over a figure and writes
a new one on it, and the old figure stays in the text layer. So a character counts only when
it is visible: not in an invisible render mode (3, 7), not white, inside the crop box, and not
under a filled path or an image drawn after it (page objects are drawn in content order). A page
with no visible character (a scan, glyphs drawn as outlines) is OCR'd by the caller instead.

Nothing read here leaves memory; pdfium calls are made under the reading module's lock.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from app.document.layout import Word

_Char = tuple[str, float, float, float, float]
"""A character and its box: left, bottom, right, top (PDF units, y up)."""
_INVISIBLE_MODES = (3, 7)
_PROTOTYPE = ctypes.WINFUNCTYPE if sys.platform == "win32" else ctypes.CFUNCTYPE  # type: ignore[attr-defined]
_TEXT_OBJECT = _PROTOTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(
    ctypes.cast(pdfium_c.FPDFText_GetTextObject, ctypes.c_void_p).value or 0
)
"""FPDFText_GetTextObject declared to return ``void *``: ctypes then gives a plain address, not
a pointer object to cast for every character (pdfium's own stdcall on 32-bit Windows)."""
_MAX_DEPTH = 8
"""Form XObjects nested deeper than this are not looked into."""
_WHITE = 235
"""A fill whose red, green and blue are all at least this is white on paper."""


@dataclass(frozen=True, slots=True)
class _Cover:
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


SCANNED_SHARE = 0.5
"""A page with an image over at least this share of its crop box is a scan: it is OCR'd (its
text objects, if any, are a badge's caption or an OCR layer that is not what a person sees)."""


@dataclass(frozen=True)
class PageText:
    """What a page's objects show: its visible words, and what says OCR may see more."""

    words: list[Word]
    scanned: bool
    """An image covers at least :data:`SCANNED_SHARE` of the page."""
    filled_paths: int
    """Glyphs drawn as outlines are filled paths, one or more a glyph."""


def visible_words(page: pdfium.PdfPage) -> PageText:
    """The visible words of ``page``, y growing downwards from the crop box's top."""
    crop = page.get_cropbox()
    orders: dict[int, int] = {}
    covers: list[_Cover] = []
    filled = 0
    for order, (obj, kind) in enumerate(_walk(page.raw)):
        orders[ctypes.cast(obj, ctypes.c_void_p).value or 0] = order
        path = kind == pdfium_c.FPDF_PAGEOBJ_PATH and _filled(obj)
        filled += path
        if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE or path:
            cover = _Cover(order, *_bounds(obj))
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE and cover.share_of(crop) >= SCANNED_SHARE:
                return PageText([], True, filled)
            covers.append(cover)
    textpage = page.get_textpage()
    try:
        chars = list(_visible_chars(textpage, orders, covers, crop))
    finally:
        textpage.close()
    return PageText(_words(chars, crop[3]), False, filled)


def _walk(parent: Any, form: bool = False, depth: int = 0) -> Iterator[tuple[Any, int]]:
    """Every page object in drawing order, form XObjects' contents in place (raw handles: the
    helper classes cost more than the check itself on a page of 50 objects)."""
    count = (pdfium_c.FPDFFormObj_CountObjects if form else pdfium_c.FPDFPage_CountObjects)(parent)
    get = pdfium_c.FPDFFormObj_GetObject if form else pdfium_c.FPDFPage_GetObject
    for index in range(count):
        obj = get(parent, index)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        yield obj, kind
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < _MAX_DEPTH:
            yield from _walk(obj, True, depth + 1)


def _bounds(obj: Any) -> tuple[float, float, float, float]:
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    pdfium_c.FPDFPageObj_GetBounds(obj, *map(ctypes.byref, (left, bottom, right, top)))
    return left.value, bottom.value, right.value, top.value


def _filled(obj: Any) -> bool:
    mode = ctypes.c_int()
    stroke = ctypes.c_int()
    if not pdfium_c.FPDFPath_GetDrawMode(obj, ctypes.byref(mode), ctypes.byref(stroke)):
        return False
    return bool(mode.value != pdfium_c.FPDF_FILLMODE_NONE)


def _visible_chars(
    textpage: pdfium.PdfTextPage,
    orders: dict[int, int],
    covers: list[_Cover],
    crop: tuple[float, float, float, float],
) -> Iterator[_Char]:
    """(char, left, bottom, right, top) of each visible character; a space or line end as
    ``" "`` so words can be told apart. Style is looked up once per text object."""
    raw = textpage.raw
    box = pdfium_c.FS_RECTF()
    styles: dict[int, int | None] = {}
    """Text object address -> its drawing order, or None when its text is not seen."""
    count = pdfium_c.FPDFText_CountChars(raw)
    text = _all_text(raw, count)
    handle = ctypes.cast(raw, ctypes.c_void_p)
    for index in range(count):
        char = text[index] if text is not None else chr(pdfium_c.FPDFText_GetUnicode(raw, index))
        if char.isspace() or not char.isprintable():
            yield " ", 0, 0, 0, 0
            continue
        address = _TEXT_OBJECT(handle, index) or 0
        if address not in styles:
            obj = pdfium_c.FPDFText_GetTextObject(raw, index)
            styles[address] = None if _unseen(obj) else orders.get(address, -1)
        order = styles[address]
        if order is None or not pdfium_c.FPDFText_GetLooseCharBox(raw, index, ctypes.byref(box)):
            continue
        x, y = (box.left + box.right) / 2, (box.top + box.bottom) / 2
        if not (crop[0] <= x <= crop[2] and crop[1] <= y <= crop[3]):
            continue
        for cover in covers:
            if cover.hides(order, x, y):
                break
        else:
            yield char, box.left, box.bottom, box.right, box.top


def _all_text(raw: Any, count: int) -> str | None:
    """The page's characters in one call, when each is one UTF-16 unit (else None: the caller
    asks char by char)."""
    if count <= 0:
        return ""
    buffer = ctypes.create_string_buffer((count + 1) * 2)
    written = pdfium_c.FPDFText_GetText(
        raw, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
    )
    text = buffer.raw[: max(written - 1, 0) * 2].decode("utf-16-le", errors="replace")
    return text if len(text) == count else None


def _unseen(obj: Any) -> bool:
    """Text drawn invisible (render mode 3 or 7) or in white (or fully transparent) ink."""
    if not obj:
        return False
    if pdfium_c.FPDFTextObj_GetTextRenderMode(obj) in _INVISIBLE_MODES:
        return True
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    if not pdfium_c.FPDFPageObj_GetFillColor(obj, *map(ctypes.byref, (r, g, b, a))):
        return False
    return min(r.value, g.value, b.value) >= _WHITE or a.value == 0


def _words(chars: list[_Char], top: float) -> list[Word]:
    """Characters joined into words (split at spaces, and at a jump back or down)."""
    words: list[Word] = []
    run: list[_Char] = []
    for char in [*chars, (" ", 0, 0, 0, 0)]:
        if char[0] == " " or (run and _jumps(run[-1], char)):
            if run:
                words.append(
                    Word(
                        "".join(c[0] for c in run),
                        min(c[1] for c in run),
                        top - max(c[4] for c in run),
                        max(c[3] for c in run),
                        top - min(c[2] for c in run),
                    )
                )
            run = [] if char[0] == " " else [char]
            continue
        run.append(char)
    return words


def _jumps(previous: _Char, char: _Char) -> bool:
    """The next character is not to the right on the same line (another text run)."""
    height = previous[4] - previous[2]
    return (
        char[1] < previous[1] - 0.5 * height
        or abs(char[2] - previous[2]) > 0.5 * height
        or char[1] - previous[3] > 0.6 * height
    )
