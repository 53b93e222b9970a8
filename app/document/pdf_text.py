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

from app.document.covers import Cover, Covers
from app.document.layout import Word
from service.documents.pdf_stamp import Matrix, multiply

_Char = tuple[str, float, float, float, float]
"""A character and its box: left, bottom, right, top (PDF units, y up)."""
_INVISIBLE_MODES = (3, 7)
_PROTOTYPE = ctypes.WINFUNCTYPE if sys.platform == "win32" else ctypes.CFUNCTYPE  # type: ignore[attr-defined]
_TEXT_OBJECT = _PROTOTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(
    ctypes.cast(pdfium_c.FPDFText_GetTextObject, ctypes.c_void_p).value or 0
)
"""FPDFText_GetTextObject declared to return ``void *``: ctypes then gives a plain address, not
a pointer object to cast for every character (pdfium's own stdcall on 32-bit Windows)."""
_CHAR_BOX = _PROTOTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(
    ctypes.cast(pdfium_c.FPDFText_GetLooseCharBox, ctypes.c_void_p).value or 0
)
"""FPDFText_GetLooseCharBox with plain addresses, filling four floats (left, top, right, bottom)
read in one slice: the check calls it for every character of every page."""
_MAX_DEPTH = 8
"""Form XObjects nested deeper than this are not looked into."""
_WHITE = 235
"""A fill whose red, green and blue are all at least this is white on paper."""


MAX_OBJECTS = 200_000
"""More page objects than this (a real payslip has hundreds; nested form XObjects can multiply
them without end) and the page is not read: :class:`PageTooComplex`, so not compared."""
MAX_CHARS = 100_000
"""More characters than this (a dense payslip page has a few thousand): not read either."""


class PageTooComplex(Exception):
    """The page holds more than :data:`MAX_OBJECTS` objects or :data:`MAX_CHARS` characters."""


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
    covers: list[Cover] = []
    filled = 0
    for order, (obj, kind, placed) in enumerate(_walk(page.raw)):
        if order >= MAX_OBJECTS:
            raise PageTooComplex
        orders[ctypes.cast(obj, ctypes.c_void_p).value or 0] = order
        path = kind == pdfium_c.FPDF_PAGEOBJ_PATH and _filled(obj)
        filled += path
        if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE or path:
            cover = Cover(order, *_on_page(_bounds(obj), placed))
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE and cover.share_of(crop) >= SCANNED_SHARE:
                return PageText([], True, filled)
            covers.append(cover)
    textpage = page.get_textpage()
    try:
        chars = _visible_chars(textpage, orders, Covers(covers, crop), crop)
    finally:
        textpage.close()
    return PageText(_words(chars, crop[3]), False, filled)


def _walk(
    parent: Any, placed: Matrix | None = None, depth: int = 0
) -> Iterator[tuple[Any, int, Matrix | None]]:
    """Every page object in drawing order, form XObjects' contents in place, each with the
    matrix that places its own coordinates on the page (None: it is on the page itself). The
    bounds pdfium gives an object inside a form are in the form's space: a white box drawn
    inside a form moved up the page hid nothing, and page-level covers were tested against
    the wrong place. (Raw handles: the helper classes cost more than the check itself on a page
    of 50 objects.)"""
    form = placed is not None
    count = (pdfium_c.FPDFFormObj_CountObjects if form else pdfium_c.FPDFPage_CountObjects)(parent)
    get = pdfium_c.FPDFFormObj_GetObject if form else pdfium_c.FPDFPage_GetObject
    for index in range(count):
        obj = get(parent, index)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        yield obj, kind, placed
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM and depth < _MAX_DEPTH:
            inner = _matrix(obj)  # a form inside a form: its own matrix, then the outer's
            yield from _walk(obj, inner if placed is None else multiply(inner, placed), depth + 1)


def _matrix(obj: Any) -> Matrix:
    matrix = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix)):
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)


def _on_page(
    bounds: tuple[float, float, float, float], placed: Matrix | None
) -> tuple[float, float, float, float]:
    """Bounds in an object's own space as bounds on the page (the box round its corners)."""
    if placed is None:
        return bounds
    a, b, c, d, e, f = placed
    left, bottom, right, top = bounds
    xs = [a * x + c * y + e for x in (left, right) for y in (bottom, top)]
    ys = [b * x + d * y + f for x in (left, right) for y in (bottom, top)]
    return min(xs), min(ys), max(xs), max(ys)


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
    covers: Covers,
    crop: tuple[float, float, float, float],
) -> list[_Char]:
    """(char, left, bottom, right, top) of each visible character; a space or line end as
    ``" "`` so words can be told apart. Style is looked up once per text object. (A plain loop
    with its callables in locals: it runs for every character of every page checked.)"""
    raw = textpage.raw
    box = (ctypes.c_float * 4)()  # FS_RECTF: left, top, right, bottom
    box_address = ctypes.addressof(box)
    styles: dict[int, int | None] = {}
    """Text object address -> its drawing order, or None when its text is not seen."""
    count = pdfium_c.FPDFText_CountChars(raw)
    if count > MAX_CHARS:
        raise PageTooComplex
    text = _all_text(raw, count)
    if text is None:
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(raw, i)) for i in range(count))
    handle = ctypes.cast(raw, ctypes.c_void_p).value
    left, bottom, right, top = crop
    text_object, char_box, hides = _TEXT_OBJECT, _CHAR_BOX, covers.hides
    space: _Char = (" ", 0, 0, 0, 0)
    chars: list[_Char] = []
    append = chars.append
    for index, char in enumerate(text):
        if char.isspace() or not char.isprintable():
            append(space)
            continue
        address = text_object(handle, index) or 0
        if address in styles:
            style = styles[address]
        else:
            obj = pdfium_c.FPDFText_GetTextObject(raw, index)
            style = None if _unseen(obj) else orders.get(address, -1)
            styles[address] = style
        if style is None or not char_box(handle, index, box_address):
            continue
        char_left, char_top, char_right, char_bottom = box[:]
        x, y = (char_left + char_right) / 2, (char_top + char_bottom) / 2
        if not (left <= x <= right and bottom <= y <= top):
            continue
        if not hides(style, x, y):
            append((char, char_left, char_bottom, char_right, char_top))
    return chars


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
    """Characters joined into words: split at spaces, and where the next character is not to
    the right on the same line (another text run). A word's box grows as its characters come;
    the jump test is written out here because this runs for every character of every page."""
    words: list[Word] = []
    text: list[str] = []
    left = bottom = right = upper = 0.0
    last_left = last_bottom = last_right = height = 0.0
    for char, char_left, char_bottom, char_right, char_top in chars:
        if char == " ":
            if text:
                words.append(Word("".join(text), left, top - upper, right, top - bottom))
                text = []
            continue
        if text and (
            char_left < last_left - 0.5 * height
            or abs(char_bottom - last_bottom) > 0.5 * height
            or char_left - last_right > 0.6 * height
        ):
            words.append(Word("".join(text), left, top - upper, right, top - bottom))
            text = []
        if text:
            left, bottom = min(left, char_left), min(bottom, char_bottom)
            right, upper = max(right, char_right), max(upper, char_top)
        else:
            left, bottom, right, upper = char_left, char_bottom, char_right, char_top
        text.append(char)
        last_left, last_bottom, last_right = char_left, char_bottom, char_right
        height = char_top - char_bottom
    if text:
        words.append(Word("".join(text), left, top - upper, right, top - bottom))
    return words
