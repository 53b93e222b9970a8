"""The QR badge (PROTOCOL §3): a two-segment QR of the v2 scan URL, rendered the same everywhere.

The service (registerAndBuildBarcode) and the issuer library call the same function, so a badge
made locally and one returned by the service for the same record are pixel-identical. The error
correction level is chosen for the 720 px badge and reused at every width, so every size carries
the same symbol. Output is a 1-bit PNG with no metadata: deterministic bytes, and stored
losslessly when stamped into a PDF.
"""

from __future__ import annotations

import io
import re
from typing import Any

import segno
from PIL import Image, ImageDraw, ImageFont

from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.encoding import base32_encode

WIDTHS = (480, 720, 960, 1440)
REFERENCE_WIDTH = 720
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


def _make(prefix: str, b32: str, level: str) -> segno.QRCode | None:
    try:
        segments: Any = [(prefix, segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)]
        return segno.make(  # segno accepts (text, mode) segments; its stubs say otherwise
            segments,
            error=level,
            boost_error=False,
            micro=False,
        )
    except segno.DataOverflowError:
        return None
    except ValueError:  # segno's own messages quote the data: never pass them on
        raise BadgeError("the scan URL cannot be encoded as a QR code") from None


def module_px(qr: segno.QRCode, width: int = REFERENCE_WIDTH) -> float:
    """PROTOCOL §3's module width: the QR area's width over the modules plus both quiet zones."""
    modules = qr.symbol_size(border=0)[0]
    return width / (modules + 2 * QUIET_ZONE)


def choose_error_level(prefix: str, b32: str) -> str:
    """M when every module is then >= 3 px wide at 720 px, else L; else the data cannot fit."""
    return _symbol(prefix, b32)[0]


def _symbol(prefix: str, b32: str) -> tuple[str, segno.QRCode]:
    for level in ("M", "L"):
        qr = _make(prefix, b32, level)
        if qr is not None and module_px(qr) >= MIN_MODULE_PX:
            return level, qr
    raise BadgeError(
        "the encrypted data is too large for a readable badge (it needs modules under 3 px at "
        "720 px); shorten the personal data"
    )


def _matrix(scan_url: str) -> list[list[bool]]:
    prefix, b32 = _split(scan_url)
    _, qr = _symbol(prefix, b32)
    return [[bool(cell) for cell in row] for row in qr.matrix]


def _caption(reference: str) -> str:
    return f"{CAPTION} · Ref {reference}" if reference else CAPTION


def _reference_of(scan_url: str) -> str:
    path = scan_url.split("#", 1)[0]
    return path.rsplit("/v/", 1)[-1] if "/v/" in path else ""


def render_badge_png(scan_url: str, width: int = REFERENCE_WIDTH) -> bytes:
    """The badge as a 1-bit PNG `width` px wide: the QR square (integer pixels per module,
    centred, quiet zone of at least 4 modules) over a one-line caption band."""
    if width not in WIDTHS:
        raise BadgeError(f"badge width must be one of {', '.join(map(str, WIDTHS))} px")
    matrix = _matrix(scan_url)
    modules = len(matrix)
    scale = max(1, width // (modules + 2 * QUIET_ZONE))
    offset = (width - scale * modules) // 2
    band = max(28, width // 14)
    image = Image.new("1", (width, width + band), 1)
    cells = bytes(0 if dark else 255 for row in matrix for dark in row)
    symbol = Image.frombytes("L", (modules, modules), cells).convert("1")
    image.paste(symbol.resize((modules * scale,) * 2, Image.Resampling.NEAREST), (offset, offset))
    draw = ImageDraw.Draw(image)
    text = _caption(_reference_of(scan_url))
    size = max(12, band // 2)
    while True:
        font = ImageFont.load_default(size=size)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        if right - left <= width * 0.92 or size <= 8:
            break
        size -= 1
    draw.text(
        ((width - (right - left)) // 2 - left, width + (band - (bottom - top)) // 2 - top),
        text,
        fill=0,
        font=font,
    )
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def render_badge_svg(scan_url: str) -> str:
    """The same symbol as SVG (4 user units per module, no caption), for vector layouts."""
    prefix, b32 = _split(scan_url)
    _, qr = _symbol(prefix, b32)
    out = io.BytesIO()
    # An opaque white background: a transparent quiet zone vanishes on a dark page.
    qr.save(out, kind="svg", border=QUIET_ZONE, scale=4, xmldecl=False, svgns=True, light="#fff")
    return out.getvalue().decode("utf-8")
