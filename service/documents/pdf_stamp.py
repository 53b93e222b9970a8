"""Stamping a badge onto an existing payslip PDF, and writing the payload into its metadata.

The badge goes in as a 1-bit image, which PDF writers keep lossless (a JPEG-compressed QR code
loses the sharp edges decoders need; measured in FINDINGS.md). A badge with grey pixels is refused
rather than silently thresholded, for the same reason.

Corners are the corners of the page as a viewer shows it: inside the crop box (what is visible)
and after the page's /Rotate, with the badge drawn upright.

The badge image's own caption is sized for a screen; at the 40 mm stamp it would print at about
3 pt. So the stamp covers it and sets the caption as PDF text of at least 6 pt under the code
(issue 11); the embedded image itself stays byte-for-byte the badge.

A stamp is an incremental update where the PDF allows it (`pdf_append`, parsed by qpdf through
pikepdf): under a millisecond for a typical payslip, object streams or not, instead of the ~20 ms
pypdf took to rewrite one (README, "Stamping PDFs (issue 12)"). The drawing edits the document in
memory with pikepdf objects; `pdf_metadata.edit` writes it as an update, or whole.
"""

from __future__ import annotations

import io
import math
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pikepdf
from pikepdf import Array, Dictionary, Name
from PIL import Image, UnidentifiedImageError

from service.documents.pdf_append import Objects
from service.documents.pdf_metadata import PdfError, check_payload, edit, set_metadata
from service.protocol.barcode_text import parse_barcode

CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")
MM = 72 / 25.4
Matrix = tuple[float, float, float, float, float, float]
CAPTION = "Scan to verify this payslip"
CAPTION_PT = 6.5
"""Caption size in points on paper: at least 6 pt stays legible on a printed payslip."""
_COURIER_EM = 0.6  # every Courier glyph is 0.6 em wide, so lines can be centred exactly
_MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485  # Pillow's decompression-bomb limit


def _bilevel(badge_png: bytes) -> Image.Image:
    """The badge as mode "1", refusing anything that is not already pure black and white."""
    try:
        image = Image.open(io.BytesIO(badge_png))
        image.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise PdfError("the badge is not a readable PNG image") from exc
    if image.mode == "1":
        return image
    grey = image.convert("L")
    pixels = image.width * image.height
    opaque = "A" not in image.getbands() or image.getchannel("A").histogram()[255] == pixels
    if sum(grey.histogram()[1:255]) or not opaque:
        raise PdfError("the badge must be a black-and-white (1-bit) image to stay lossless")
    return grey.point(lambda v: 255 if v else 0, mode="1")


@dataclass(frozen=True)
class _Badge:
    """The badge ready for the page: its size in pixels, the first row of its own caption (None
    when it has none) and its 1-bit DeviceGray pixels, Flate-compressed: with the PNG predictor
    (`as_png`: the PNG's own zlib data) or as packed rows."""

    width: int
    height: int
    caption_top: int | None
    data: bytes
    as_png: bool

    def image(self, objects: Objects) -> pikepdf.Object:
        """The badge as a new image XObject (lossless Flate); returns its reference."""
        entries: dict[str, Any] = {
            "/Type": Name.XObject,
            "/Subtype": Name.Image,
            "/Width": self.width,
            "/Height": self.height,
            "/ColorSpace": Name.DeviceGray,
            "/BitsPerComponent": 1,
            "/Filter": Name.FlateDecode,
        }
        if self.as_png:
            entries["/DecodeParms"] = Dictionary(
                Predictor=15, Colors=1, BitsPerComponent=1, Columns=self.width
            )
        return objects.add_stream(self.data, entries)


def _badge(badge_png: bytes) -> _Badge:
    """The badge PNG ready to embed. A 1-bit greyscale PNG with unfiltered rows (what
    `render_badge_png` writes) goes in as it is: its zlib data is a valid FlateDecode stream under
    the PNG predictor (PDF 7.4.4.4), so nothing is decoded or compressed again (re-compressing
    cost 0.6 ms a stamp). Any other black-and-white image is converted and packed."""
    found = _png_rows(badge_png)
    if found is not None:
        width, height, data, rows = found
        dark: np.ndarray = rows != 255
        if width % 8:  # the last byte's padding bits are not pixels
            dark[:, -1] = (rows[:, -1] | ((1 << (8 - width % 8)) - 1)) != 255
        return _Badge(width, height, _caption_top(dark.any(axis=1)), data, as_png=True)
    mono = _bilevel(badge_png)
    pixels = np.asarray(mono, dtype=bool)
    # Packed rows, MSB first, each padded to a byte, 1 = white: DeviceGray at 1 bit per sample.
    # numpy packs the same bytes as Pillow's tobytes() for mode "1", about ten times faster.
    packed = zlib.compress(np.packbits(pixels, axis=1).tobytes())
    return _Badge(mono.width, mono.height, _caption_top(~pixels.all(axis=1)), packed, as_png=False)


def _png_rows(png: bytes) -> tuple[int, int, bytes, np.ndarray] | None:
    """(width, height, zlib data, packed pixel rows) of a PNG that is 1-bit greyscale, not
    interlaced, with every row unfiltered; None for any other PNG (Pillow's path takes it)."""
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    position, header, chunks = 8, b"", []
    while position + 8 <= len(png):
        length, kind = struct.unpack_from(">I4s", png, position)
        body = png[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        elif kind == b"IEND":
            break
    if len(header) != 13 or not chunks:
        return None
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if (depth, colour, interlace) != (1, 0, 0) or not 0 < width * height <= _MAX_PIXELS:
        return None
    data = b"".join(chunks)
    stride = (width + 7) // 8 + 1
    try:
        raw = zlib.decompress(data)
    except zlib.error:
        return None
    if len(raw) != height * stride:
        return None
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, stride)
    if rows[:, 0].any():  # a filtered row: undoing filters is Pillow's job
        return None
    return width, height, data, rows[:, 1:]


def _caption_top(dark_rows: np.ndarray | np.bool_) -> int | None:
    """The first pixel row of the image's own caption, given which rows hold a dark pixel: the
    last block of dark rows, below a white gap, in the bottom fifth of the badge. None when the
    badge has no caption."""
    dark = np.flatnonzero(dark_rows)
    if dark.size == 0:
        return None
    gaps = np.flatnonzero(np.diff(dark) > 1)
    if gaps.size == 0:
        return None
    top = int(dark[gaps[-1] + 1])
    return top if top > np.size(dark_rows) * 0.8 else None


def _caption_ops(width: float, height: float, reference: str, font: str) -> list[str]:
    """Drawing operators for a `width` x `height` pt box: white, with the caption's lines
    centred, top down, in the Courier font resource named `font`."""
    lines = [CAPTION, f"Ref {reference}"] if reference else [CAPTION]
    ops = [f"q 1 g 0 0 {width:.3f} {height:.3f} re f Q", "0 g"]
    y = height - CAPTION_PT * 1.1
    for line in lines:
        x = max((width - len(line) * _COURIER_EM * CAPTION_PT) / 2, 0)
        ops.append(f"BT {font} {CAPTION_PT} Tf {x:.3f} {y:.3f} Td ({line}) Tj ET")
        y -= CAPTION_PT * 1.25
    return ops


def _cm(matrix: Matrix) -> str:
    return " ".join(f"{v:.6f}".rstrip("0").rstrip(".") or "0" for v in matrix) + " cm"


def _free_name(names: pikepdf.Object, stem: str) -> str:
    """A resource name the page does not use yet (a page stamped before keeps its badge)."""
    n = 0
    while f"/{stem}{n}" in names:
        n += 1
    return f"/{stem}{n}"


def inherited(page: pikepdf.Object, key: str) -> pikepdf.Object | None:
    """A page attribute from the page or the nearest /Pages node above it (ISO 32000-1 §7.7.3.4:
    /Resources, /MediaBox, /CropBox and /Rotate are inheritable; office suites put them on the
    /Pages node). Read from the tree because the update opens the PDF without qpdf copying them
    down to the pages; a damaged tree that loops stops after 64 levels."""
    node: object = page
    for _ in range(64):
        if not isinstance(node, Dictionary):
            return None
        value = node.get(key)
        if value is not None:
            return value
        node = node.get("/Parent")
    return None


def _add_resource(page: pikepdf.Object, kind: str, stem: str, value: pikepdf.Object) -> str:
    """Put `value` into the page's /Resources sub-dictionary `kind` (/XObject, /Font) under a
    free name and return the name. The page gets its own copies of both dictionaries: one shared
    with other pages (or inherited) stays as it was."""
    resources = inherited(page, "/Resources")
    resources = resources.copy() if isinstance(resources, Dictionary) else Dictionary()
    found = resources.get(kind)
    found = found.copy() if isinstance(found, Dictionary) else Dictionary()
    name = _free_name(found, stem)
    found[name] = value
    resources[kind] = found
    page.Resources = resources
    return name


def _draw_over(objects: Objects, page: pikepdf.Object, ops: list[str]) -> None:
    """Draw `ops` over the page's content, which is wrapped in q/Q so that a graphics state it
    leaves changed cannot move or recolour the stamp. The existing content is not parsed (a
    merge of pages parses both content streams, the larger part of a stamp's time)."""
    opening = objects.add_stream(b"q", {})
    closing = objects.add_stream(("Q\n" + "\n".join(ops)).encode("ascii"), {})
    existing = page.get("/Contents")
    if isinstance(existing, Array):
        parts = list(existing)
    elif existing is None:
        parts = []
    else:
        parts = [existing]
    page.Contents = Array([opening, *parts, closing])


def _display_to_user(rotate: int, box: tuple[float, float, float, float]) -> Matrix:
    """The matrix from viewer coordinates (origin bottom-left of the shown page) to user space.

    /Rotate turns the page clockwise for display, so user space is the display turned back.
    """
    x0, y0, x1, y1 = box
    if rotate == 90:
        return (0, 1, -1, 0, x1, y0)
    if rotate == 180:
        return (-1, 0, 0, -1, x1, y1)
    if rotate == 270:
        return (0, -1, 1, 0, x0, y1)
    return (1, 0, 0, 1, x0, y0)


def multiply(first: Matrix, then: Matrix) -> Matrix:
    """PDF matrices (row-vector convention): apply `first`, then `then`."""
    a, b, c, d, e, f = first
    a2, b2, c2, d2, e2, f2 = then
    return (
        a * a2 + b * c2,
        a * b2 + b * d2,
        c * a2 + d * c2,
        c * b2 + d * d2,
        e * a2 + f * c2 + e2,
        e * b2 + f * d2 + f2,
    )


def stamp_badge(
    pdf: bytes,
    badge_png: bytes,
    payload: str,
    page: int = 0,
    corner: str = "bottom-right",
    size_mm: float = 40.0,
    margin_mm: float = 10.0,
) -> bytes:
    """Draw the badge `size_mm` wide in `corner` of page `page` (0-based), `margin_mm` from the
    visible edges, and write `payload` into the PDF's metadata. Returns the new PDF.

    A PDF that qpdf reads without repairing anything gets an incremental update: its bytes stay
    as they were and the page, catalog and information dictionary are appended in new versions
    with the badge (`pdf_append`). Any other is repaired by qpdf and rewritten whole."""
    if corner not in CORNERS:
        raise PdfError(f"corner must be one of {', '.join(CORNERS)}")
    if not (math.isfinite(size_mm) and size_mm > 0 and math.isfinite(margin_mm) and margin_mm >= 0):
        raise PdfError("the badge size must be positive and the margin not negative")
    check_payload(payload)
    place = _Placement(_badge(badge_png), payload, corner, size_mm, margin_mm)

    def change(doc: pikepdf.Pdf, objects: Objects) -> None:
        pages = len(doc.pages)
        if not 0 <= page < pages:
            raise PdfError(f"the PDF has {pages} page(s); page {page + 1} does not exist")
        place.draw(objects, doc.pages[page].obj)
        set_metadata(doc, objects, payload)

    return edit(pdf, change, "the badge could not be drawn on this PDF")


@dataclass(frozen=True)
class _Placement:
    """Where and how one badge goes on a page."""

    badge: _Badge
    payload: str
    corner: str
    size_mm: float
    margin_mm: float

    def draw(self, objects: Objects, page: pikepdf.Object) -> None:
        """Add the badge and its caption to `page` (changed in place)."""
        badge = self.badge
        shown = inherited(page, "/CropBox") or inherited(page, "/MediaBox")
        if shown is None:
            raise PdfError("the page has no /MediaBox")
        x0, y0, x1, y1 = (float(v) for v in shown)
        box = (x0, y0, x1, y1)
        rotate = int(inherited(page, "/Rotate") or 0) % 360
        rotate = rotate if rotate in (0, 90, 180, 270) else 0  # other values are invalid
        shown_w, shown_h = box[2] - box[0], box[3] - box[1]
        if rotate in (90, 270):
            shown_w, shown_h = shown_h, shown_w
        width = self.size_mm * MM
        scale = width / badge.width
        # The image's own caption band is covered by the printed caption, which may need more
        # room under the badge: `below` is the caption area that sticks out under the image.
        band_top = badge.caption_top
        band = (badge.height - band_top) * scale if band_top is not None else 0.0
        caption = CAPTION_PT * 2.6 + 2
        below = max(caption - band, 0.0)
        height = badge.height * scale + below
        margin = self.margin_mm * MM
        if width + 2 * margin > shown_w + 1e-6 or height + 2 * margin > shown_h + 1e-6:
            raise PdfError(f"the page is too small for a {self.size_mm:g} mm badge")
        left = shown_w - margin - width if self.corner.endswith("right") else margin
        bottom = shown_h - margin - height if self.corner.startswith("top") else margin
        to_user = _display_to_user(rotate, box)
        placed: Matrix = (scale, 0, 0, scale, left, bottom + below)
        beneath: Matrix = (1, 0, 0, 1, left, bottom)
        image = _add_resource(page, "/XObject", "PVBadge", badge.image(objects))
        font = _add_resource(page, "/Font", "PVCaption", _courier())
        reference = parse_barcode(self.payload).service_reference
        ops = [
            f"q {_cm(multiply(placed, to_user))} {badge.width} 0 0 {badge.height} 0 0 cm "
            f"{image} Do Q",
            f"q {_cm(multiply(beneath, to_user))}",
            *_caption_ops(width, band + below, reference, font),
            "Q",
        ]
        _draw_over(objects, page, ops)
        objects.changed(page)


def _courier() -> pikepdf.Object:
    return Dictionary(Type=Name.Font, Subtype=Name.Type1, BaseFont=Name.Courier)
