"""The QR badge (PROTOCOL §3): a two-segment QR of the v2 scan URL, rendered the same everywhere.

The service (registerAndBuildBarcode) and the issuer library call the same function, so a badge
made locally and one returned by the service for the same record are pixel-identical. The error
correction level is chosen for the 720 px badge and reused at every width, so every size carries
the same symbol. Output is a 1-bit PNG with no metadata: deterministic bytes, and stored
losslessly when stamped into a PDF.

Speed (issue 12): the symbol comes from `qr_symbol` (numpy, about half a millisecond; segno's own
`make` takes 20-200 ms, three quarters of it choosing the mask) and the PNG is drawn from the
module matrix with numpy and zlib, about a millisecond for a typical badge in all. The README's
benchmark section compares the options that were measured.
"""

from __future__ import annotations

import io
import math
import re
import string
import struct
import zlib
from functools import lru_cache
from typing import Any

import numpy as np
import segno
from PIL import Image, ImageDraw, ImageFont

from service.documents.qr_symbol import (
    SEGMENT_ALPHANUMERIC,
    SEGMENT_BYTE,
    QrOverflow,
    Symbol,
    build_symbol,
)
from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.encoding import base32_encode

WIDTHS = (480, 720, 960, 1440)
REFERENCE_WIDTH = 720
#: The badge width the spec names for registerAndBuildBarcode (the issuer's default).
BADGE_WIDTH = REFERENCE_WIDTH
MIN_MODULE_PX = 3.0
QUIET_ZONE = 4
CAPTION = "Scan to verify this payslip"
_BASE32 = re.compile(r"[A-Z2-7]+")


class BadgeError(ValueError):
    """The payload cannot be drawn as a readable badge. The message never quotes the payload."""


def _split(scan_url: str) -> tuple[str, str]:
    """Split into the byte-mode prefix (through `#2.`) and the alphanumeric Base32 part.

    The text must also be a scan URL v2 that readers accept (canonical Base32, a 22-character
    reference, no surrounding whitespace): a badge readers would reject is worse than no badge.
    Messages never quote the text, because it carries the ciphertext.
    """
    prefix, marker, b32 = scan_url.partition("#2.")
    if not marker or not b32:
        raise BadgeError("not a version 2 scan URL")
    if not _BASE32.fullmatch(b32):
        raise BadgeError("the scan URL's ciphertext is not upper-case Base32")
    try:
        parsed = parse_barcode(scan_url)
    except BarcodeTextError as exc:  # its messages never quote the text either
        raise BadgeError(f"not a readable version 2 scan URL: {exc}") from None
    if (
        parsed.version != 2
        or scan_url != scan_url.strip()
        or base32_encode(parsed.ciphertext) != b32
    ):
        raise BadgeError("not a version 2 scan URL")
    return prefix + marker, b32


def _symbol(prefix: str, b32: str) -> tuple[str, Symbol]:
    """The EC ladder: M when every module is then >= 3 px wide at 720 px, else L; else fail."""
    segments = ((SEGMENT_BYTE, prefix), (SEGMENT_ALPHANUMERIC, b32))
    for level in ("M", "L"):
        try:
            symbol = build_symbol(segments, level)
        except QrOverflow:
            continue
        if module_px(symbol.size) >= MIN_MODULE_PX:
            return level, symbol
    raise BadgeError(
        "the encrypted data is too large for a readable badge (it needs modules under 3 px at "
        "720 px); shorten the personal data"
    )


def module_px(modules: int, width: int = REFERENCE_WIDTH) -> float:
    """PROTOCOL §3's module width: the QR area's width over the modules plus both quiet zones."""
    return width / (modules + 2 * QUIET_ZONE)


def choose_error_level(prefix: str, b32: str) -> str:
    """M when every module is then >= 3 px wide at 720 px, else L; else the data cannot fit."""
    return _symbol(prefix, b32)[0]


def badge_symbol(scan_url: str) -> Symbol:
    """The QR symbol a badge of `scan_url` carries (the same at every width)."""
    return _symbol(*_split(scan_url))[1]


def _caption(reference: str) -> str:
    return f"{CAPTION} · Ref {reference}" if reference else CAPTION


def _reference_of(scan_url: str) -> str:
    path = scan_url.split("#", 1)[0]
    return path.rsplit("/v/", 1)[-1] if "/v/" in path else ""


@lru_cache(maxsize=32)
def _font(size: int) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=size)
    assert isinstance(font, ImageFont.FreeTypeFont)  # Pillow >= 10.1 with FreeType
    return font


#: Characters a reference is made of (base64url); the caption's size fits the widest of them.
_REFERENCE_CHARS = string.ascii_letters + string.digits + "-_"


@lru_cache(maxsize=8)
def _caption_size(width: int) -> int:
    """One font size per badge width: the largest at which a caption with the widest possible
    reference fits 92% of the width (so the size never depends on the reference)."""
    band = max(28, width // 14)
    size = max(12, band // 2)
    while size > 8:
        font = _font(size)
        widest = max(_REFERENCE_CHARS, key=font.getlength)
        if font.getlength(_caption(widest * 22)) <= width * 0.92:
            break
        size -= 1
    return size


@lru_cache(maxsize=2048)
def _glyph(size: int, char: str) -> tuple[np.ndarray, int, int, float]:
    """(its pixels, True = white; left and top offsets from the pen on the baseline; advance) of
    one glyph, drawn by Pillow once and reused: a whole caption drawn by FreeType costs ~1-2 ms
    a badge."""
    font = _font(size)
    left, top, right, bottom = (int(v) for v in font.getbbox(char, anchor="ls"))
    advance = font.getlength(char)
    if right <= left or bottom <= top:
        return np.zeros((0, 0), dtype=bool), 0, 0, advance
    image = Image.new("1", (right - left, bottom - top), 1)
    ImageDraw.Draw(image).text((-left, -top), char, font=font, fill=0, anchor="ls")
    return np.asarray(image, dtype=bool).copy(), left, top, advance


def _draw(
    band: np.ndarray, glyphs: list[tuple[np.ndarray, int, int, float]], pen: float, baseline: int
) -> float:
    """Draw glyphs into `band` (True = white) from the pen position on the baseline; returns
    the pen position after them. Each glyph sits at a whole pixel, floor(pen + 0.5) plus its
    offset (not round(): banker's rounding would not survive a shift by whole pixels)."""
    height, width = band.shape
    for light, left, top, advance in glyphs:
        x, y = math.floor(pen + 0.5) + left, baseline + top
        pen += advance
        if light.size == 0:
            continue
        h, w = light.shape
        if x >= 0 and y >= 0 and x + w <= width and y + h <= height:
            band[y : y + h, x : x + w] &= light
            continue
        y0, x0 = max(y, 0), max(x, 0)  # clipped at the band's edges
        y1, x1 = min(y + h, height), min(x + w, width)
        if y1 > y0 and x1 > x0:
            band[y0:y1, x0:x1] &= light[y0 - y : y1 - y, x0 - x : x1 - x]
    return pen


def _baseline(width: int) -> int:
    """The caption's baseline in its band under a badge `width` px wide."""
    ascent, descent = _font(_caption_size(width)).getmetrics()
    return (_band_height(width) - (ascent + descent)) // 2 + ascent


def _band_height(width: int) -> int:
    return max(28, width // 14)


_PREFIX = _caption("x")[:-1]  # the caption up to the reference: the same on every badge
_MARGIN = 16  # room for glyphs that reach left of their pen position


@lru_cache(maxsize=8)
def _prefix_strip(width: int) -> tuple[np.ndarray, float]:
    """The caption's constant start drawn once per width from pen position `_MARGIN`, and the
    advance it takes: later pasted at a whole pixel, so identical to drawing it in place."""
    glyphs = [_glyph(_caption_size(width), char) for char in _PREFIX]
    advance = sum(g[3] for g in glyphs)
    strip = np.ones((_band_height(width), int(advance) + 2 * _MARGIN), dtype=bool)
    _draw(strip, glyphs, float(_MARGIN), _baseline(width))
    return strip, advance


def _caption_band(text: str, width: int) -> np.ndarray:
    """The caption band (True = white) under a badge `width` px wide, centred, drawn from
    cached glyphs (and the cached constant start) at whole-pixel pen positions."""
    band = np.ones((_band_height(width), width), dtype=bool)
    size = _caption_size(width)
    if text.startswith(_PREFIX):
        strip, prefix_advance = _prefix_strip(width)
        rest = [_glyph(size, char) for char in text[len(_PREFIX) :]]
        total = prefix_advance + sum(g[3] for g in rest)
        start = (width - round(total)) // 2
        x0 = start - _MARGIN
        lo, hi = max(x0, 0), min(x0 + strip.shape[1], width)
        band[:, lo:hi] &= strip[:, lo - x0 : hi - x0]
        _draw(band, rest, start + prefix_advance, _baseline(width))
        return band
    glyphs = [_glyph(size, char) for char in text]
    _draw(band, glyphs, float((width - round(sum(g[3] for g in glyphs))) // 2), _baseline(width))
    return band


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png_1bit(packed: np.ndarray, width: int) -> bytes:
    """A 1-bit greyscale PNG from packed rows (`np.packbits` of True = white, `width` pixels a
    row)."""
    raw = np.zeros((packed.shape[0], packed.shape[1] + 1), dtype=np.uint8)
    raw[:, 1:] = packed
    return _png(raw, width)


def _png(raw: np.ndarray, width: int) -> bytes:
    """The PNG of `raw`: packed 1-bit rows each led by its filter byte (0). IHDR, one IDAT, IEND
    and nothing else (no time or text chunks), zlib level 1 (four times faster than level 6
    here, and these images compress well at any level): deterministic bytes."""
    header = struct.pack(">IIBBBBB", width, raw.shape[0], 1, 0, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(raw.data, 1)),
            _png_chunk(b"IEND", b""),
        )
    )


def render_badge_png(scan_url: str, width: int = REFERENCE_WIDTH) -> bytes:
    """The badge as a 1-bit PNG `width` px wide: the QR square (integer pixels per module,
    centred, quiet zone of at least 4 modules) over a one-line caption band.

    Drawn straight from the module matrix with numpy into the PNG's raw rows: one packed pixel
    row per module row, repeated `scale` times (no per-pixel Python); then zlib."""
    if width not in WIDTHS:
        raise BadgeError(f"badge width must be one of {', '.join(map(str, WIDTHS))} px")
    symbol = badge_symbol(scan_url)
    modules = symbol.size
    scale = max(1, width // (modules + 2 * QUIET_ZONE))
    offset = (width - scale * modules) // 2
    rows = np.ones((modules, width), dtype=bool)
    rows[:, offset : offset + scale * modules] = np.repeat(~symbol.modules, scale, axis=1)
    band = _caption_band(_caption(_reference_of(scan_url)), width)
    raw = np.empty((width + band.shape[0], (width + 7) // 8 + 1), dtype=np.uint8)
    raw[:, 0] = 0  # filter: none
    raw[:width, 1:] = np.packbits(np.ones(width, dtype=bool))  # quiet zone rows: white
    raw[offset : offset + scale * modules, 1:] = np.repeat(np.packbits(rows, axis=1), scale, axis=0)
    raw[width:, 1:] = np.packbits(band, axis=1)
    return _png(raw, width)


def render_badge_svg(scan_url: str) -> str:
    """The same symbol as SVG (4 user units per module, no caption), for vector layouts.

    segno writes the SVG, told the version, level and mask the badge's symbol has, so it holds
    the very same modules (the tests compare them)."""
    prefix, b32 = _split(scan_url)
    level, symbol = _symbol(prefix, b32)
    segments: Any = [(prefix, segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)]
    qr = segno.make(  # segno accepts (text, mode) segments; its stubs say otherwise
        segments,
        error=level,
        version=symbol.version,
        mask=symbol.mask,
        boost_error=False,
        micro=False,
    )
    out = io.BytesIO()
    # An opaque white background: a transparent quiet zone vanishes on a dark page.
    qr.save(out, kind="svg", border=QUIET_ZONE, scale=4, xmldecl=False, svgns=True, light="#fff")
    return out.getvalue().decode("utf-8")
