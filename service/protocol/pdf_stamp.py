"""Stamping a badge onto an existing payslip PDF, and writing the payload into its metadata.

The badge goes in as a 1-bit image, which PDF writers keep lossless (a JPEG-compressed QR code
loses the sharp edges decoders need; measured in FINDINGS.md). A badge with grey pixels is refused
rather than silently thresholded, for the same reason.

Corners are the corners of the page as a viewer shows it: inside the crop box (what is visible)
and after the page's /Rotate, with the badge drawn upright.

The badge image's own caption is sized for a screen; at the 40 mm stamp it would print at about
3 pt. So the stamp covers it and sets the caption as PDF text of at least 6 pt under the code
(issue 11); the embedded image itself stays byte-for-byte the badge.

A stamp is an incremental update where the PDF allows it (`pdf_append`): about 1 ms instead of
the ~20 ms pypdf takes to rewrite a typical payslip (README, "Stamping PDFs (issue 12)").
"""

from __future__ import annotations

import io
import math
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError
from pypdf import PageObject, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    IndirectObject,
    NameObject,
    NumberObject,
    PdfObject,
    StreamObject,
)

from service.protocol.barcode_text import parse_barcode
from service.protocol.pdf_append import Update, open_strict
from service.protocol.pdf_metadata import (
    _DAMAGE,
    PdfError,
    _existing_xmp,
    _write,
    check_payload,
    damage_as_pdf_error,
    open_reader,
    update_metadata,
)

CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")
MM = 72 / 25.4
Matrix = tuple[float, float, float, float, float, float]
CAPTION = "Scan to verify this payslip"
CAPTION_PT = 6.5
"""Caption size in points on paper: at least 6 pt stays legible on a printed payslip."""
_COURIER_EM = 0.6  # every Courier glyph is 0.6 em wide, so lines can be centred exactly
_MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485  # Pillow's decompression-bomb limit
_Add = Callable[[PdfObject], IndirectObject]
"""Makes an object indirect in the document being written and returns its reference."""


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
    when it has none) and its image XObject, a 1-bit DeviceGray stream (lossless Flate)."""

    width: int
    height: int
    caption_top: int | None
    image: StreamObject


def _badge(badge_png: bytes) -> _Badge:
    """The badge PNG as an image XObject. A 1-bit greyscale PNG with unfiltered rows (what
    `render_badge_png` writes) goes in as it is: its zlib data is a valid FlateDecode stream under
    the PNG predictor (PDF 7.4.4.4), so nothing is decoded or compressed again (re-compressing
    cost 0.6 ms a stamp). Any other black-and-white image is converted and packed."""
    found = _png_rows(badge_png)
    if found is not None:
        width, height, data, rows = found
        dark: np.ndarray = rows != 255
        if width % 8:  # the last byte's padding bits are not pixels
            dark[:, -1] = (rows[:, -1] | ((1 << (8 - width % 8)) - 1)) != 255
        image = StreamObject.initialize_from_dictionary(
            {
                **_image_entries(width, height),
                NameObject("/Filter"): NameObject("/FlateDecode"),
                NameObject("/DecodeParms"): DictionaryObject(
                    {
                        NameObject("/Predictor"): NumberObject(15),
                        NameObject("/Colors"): NumberObject(1),
                        NameObject("/BitsPerComponent"): NumberObject(1),
                        NameObject("/Columns"): NumberObject(width),
                    }
                ),
                "__streamdata__": data,
            }
        )
        return _Badge(width, height, _caption_top(dark.any(axis=1)), image)
    mono = _bilevel(badge_png)
    pixels = np.asarray(mono, dtype=bool)
    raw = DecodedStreamObject()
    # Packed rows, MSB first, each padded to a byte, 1 = white: DeviceGray at 1 bit per sample.
    # numpy packs the same bytes as Pillow's tobytes() for mode "1", about ten times faster.
    raw.set_data(np.packbits(pixels, axis=1).tobytes())
    raw.update(_image_entries(mono.width, mono.height))
    return _Badge(mono.width, mono.height, _caption_top(~pixels.all(axis=1)), raw.flate_encode())


def _image_entries(width: int, height: int) -> dict[Any, Any]:
    return {
        NameObject("/Type"): NameObject("/XObject"),
        NameObject("/Subtype"): NameObject("/Image"),
        NameObject("/Width"): NumberObject(width),
        NameObject("/Height"): NumberObject(height),
        NameObject("/ColorSpace"): NameObject("/DeviceGray"),
        NameObject("/BitsPerComponent"): NumberObject(1),
    }


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


def _free_name(names: DictionaryObject, stem: str) -> str:
    """A resource name the page does not use yet (a page stamped before keeps its badge)."""
    n = 0
    while f"/{stem}{n}" in names:
        n += 1
    return f"/{stem}{n}"


def _add_resource(page: DictionaryObject, kind: str, stem: str, value: PdfObject) -> str:
    """Put `value` into the page's /Resources sub-dictionary `kind` (/XObject, /Font) under a
    free name and return the name. The page gets its own copies of both dictionaries: one shared
    with other pages (or inherited) stays as it was."""
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    resources = DictionaryObject(resources if isinstance(resources, DictionaryObject) else {})
    found = resources.get(kind)
    found = found.get_object() if found is not None else None
    found = DictionaryObject(found if isinstance(found, DictionaryObject) else {})
    name = _free_name(found, stem)
    found[NameObject(name)] = value
    resources[NameObject(kind)] = found
    page[NameObject("/Resources")] = resources
    return name


def _draw_over(add: _Add, page: DictionaryObject, ops: list[str]) -> None:
    """Draw `ops` over the page's content, which is wrapped in q/Q so that a graphics state it
    leaves changed cannot move or recolour the stamp. The existing content is not parsed (a
    merge of pages parses both content streams, the larger part of a stamp's time)."""
    opening, closing = DecodedStreamObject(), DecodedStreamObject()
    opening.set_data(b"q")
    closing.set_data(("Q\n" + "\n".join(ops)).encode("ascii"))
    existing = page.get("/Contents")
    existing = existing.get_object() if existing is not None else None
    if isinstance(existing, ArrayObject):
        parts = list(existing)
    elif existing is None:
        parts = []
    else:
        parts = [page.raw_get("/Contents")]
    page[NameObject("/Contents")] = ArrayObject([add(opening), *parts, add(closing)])


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


def _multiply(first: Matrix, then: Matrix) -> Matrix:
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

    A PDF that pypdf reads strictly gets an incremental update: its bytes stay as they were and
    the page, catalog and information dictionary are appended in new versions with the badge
    (`pdf_append`). Any other (one pypdf has to repair) is rewritten whole, as before."""
    if corner not in CORNERS:
        raise PdfError(f"corner must be one of {', '.join(CORNERS)}")
    if not (math.isfinite(size_mm) and size_mm > 0 and math.isfinite(margin_mm) and margin_mm >= 0):
        raise PdfError("the badge size must be positive and the margin not negative")
    strict = open_strict(pdf)
    reader = strict if strict is not None else open_reader(pdf)
    if not 0 <= page < len(reader.pages):
        raise PdfError(f"the PDF has {len(reader.pages)} page(s); page {page + 1} does not exist")
    check_payload(payload)
    badge = _badge(badge_png)
    place = _Placement(badge, payload, corner, size_mm, margin_mm)
    if strict is not None:
        try:
            update = Update(pdf, strict)
            target = strict.pages[page]
            edited = DictionaryObject(target)
            place.draw(target, edited, update.add)
            assert target.indirect_reference is not None  # a page read from a file has one
            update.replace(target.indirect_reference, edited)
            update_metadata(update, strict, payload)
            return update.to_bytes()
        except PdfError:
            raise
        except _DAMAGE:  # damage a strict reader met only now: rewrite it whole after all
            reader = open_reader(pdf)
    with damage_as_pdf_error("the badge could not be drawn on this PDF"):
        writer = PdfWriter(clone_from=reader)
        target = writer.pages[page]
        place.draw(target, target, writer._add_object)
    return _write(writer, _existing_xmp(reader), payload)


@dataclass(frozen=True)
class _Placement:
    """Where and how one badge goes on a page: the drawing both ways of writing share."""

    badge: _Badge
    payload: str
    corner: str
    size_mm: float
    margin_mm: float

    def draw(self, page: PageObject, edited: DictionaryObject, add: _Add) -> None:
        """Add the badge and its caption to `edited`, the version of `page` that is written
        (`page` itself when the whole document is rewritten)."""
        badge = self.badge
        crop = page.cropbox
        box = (float(crop.left), float(crop.bottom), float(crop.right), float(crop.top))
        rotate = int(page.get("/Rotate", 0) or 0) % 360
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
        image = _add_resource(edited, "/XObject", "PVBadge", add(badge.image))
        font = _add_resource(edited, "/Font", "PVCaption", _courier())
        reference = parse_barcode(self.payload).service_reference
        ops = [
            f"q {_cm(_multiply(placed, to_user))} {badge.width} 0 0 {badge.height} 0 0 cm "
            f"{image} Do Q",
            f"q {_cm(_multiply(beneath, to_user))}",
            *_caption_ops(width, band + below, reference, font),
            "Q",
        ]
        _draw_over(add, edited, ops)


def _courier() -> DictionaryObject:
    return DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Courier"),
        }
    )
