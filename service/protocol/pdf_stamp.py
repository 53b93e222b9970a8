"""Stamping a badge onto an existing payslip PDF, and writing the payload into its metadata.

The badge goes in as a 1-bit image, which PDF writers keep lossless (a JPEG-compressed QR code
loses the sharp edges decoders need; measured in FINDINGS.md). A badge with grey pixels is refused
rather than silently thresholded, for the same reason.

Corners are the corners of the page as a viewer shows it: inside the crop box (what is visible)
and after the page's /Rotate, with the badge drawn upright.

The badge image's own caption is sized for a screen; at the 40 mm stamp it would print at about
3 pt. So the stamp covers it and sets the caption as PDF text of at least 6 pt under the code
(issue 11); the embedded image itself stays byte-for-byte the badge.
"""

from __future__ import annotations

import io
import math

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
)

from service.protocol.barcode_text import parse_barcode
from service.protocol.pdf_metadata import (
    PdfError,
    _existing_xmp,
    _write,
    check_payload,
    damage_as_pdf_error,
    open_reader,
)

CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")
MM = 72 / 25.4
Matrix = tuple[float, float, float, float, float, float]
CAPTION = "Scan to verify this payslip"
CAPTION_PT = 6.5
"""Caption size in points on paper: at least 6 pt stays legible on a printed payslip."""
_COURIER_EM = 0.6  # every Courier glyph is 0.6 em wide, so lines can be centred exactly


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


def _badge_image(writer: PdfWriter, mono: Image.Image) -> IndirectObject:
    """The badge as a 1-bit DeviceGray image XObject: lossless (Flate), built in place (Pillow's
    PDF writer, CCITT, and parsing its output back cost ~9 ms a stamp)."""
    width, height = mono.size
    image = DecodedStreamObject()
    # Packed rows, MSB first, each padded to a byte, 1 = white: DeviceGray at 1 bit per sample.
    # numpy packs the same bytes as Pillow's tobytes() for mode "1", about ten times faster.
    image.set_data(np.packbits(np.asarray(mono, dtype=bool), axis=1).tobytes())
    image.update(
        {
            NameObject("/Type"): NameObject("/XObject"),
            NameObject("/Subtype"): NameObject("/Image"),
            NameObject("/Width"): NumberObject(width),
            NameObject("/Height"): NumberObject(height),
            NameObject("/ColorSpace"): NameObject("/DeviceGray"),
            NameObject("/BitsPerComponent"): NumberObject(1),
        }
    )
    return writer._add_object(image.flate_encode())  # streams must be indirect objects


def _caption_top(mono: Image.Image) -> int | None:
    """The first pixel row of the image's own caption: the last block of dark rows, below a
    white gap, in the bottom fifth of the badge. None when the badge has no caption."""
    dark_rows = np.flatnonzero(~np.asarray(mono, dtype=bool).all(axis=1))
    if dark_rows.size == 0:
        return None
    gaps = np.flatnonzero(np.diff(dark_rows) > 1)
    if gaps.size == 0:
        return None
    top = int(dark_rows[gaps[-1] + 1])
    return top if top > mono.height * 0.8 else None


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


def _resources(page: PageObject, kind: str) -> DictionaryObject:
    """The page's own /Resources sub-dictionary `kind` (/XObject, /Font), made if missing."""
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    if not isinstance(resources, DictionaryObject):
        resources = DictionaryObject()
        page[NameObject("/Resources")] = resources
    found = resources.get(kind)
    found = found.get_object() if found is not None else None
    if not isinstance(found, DictionaryObject):
        found = DictionaryObject()
        resources[NameObject(kind)] = found
    return found


def _draw_over(writer: PdfWriter, page: PageObject, ops: list[str]) -> None:
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
    page[NameObject("/Contents")] = ArrayObject(
        [writer._add_object(opening), *parts, writer._add_object(closing)]
    )


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
    visible edges, and write `payload` into the PDF's metadata. Returns the new PDF."""
    if corner not in CORNERS:
        raise PdfError(f"corner must be one of {', '.join(CORNERS)}")
    if not (math.isfinite(size_mm) and size_mm > 0 and math.isfinite(margin_mm) and margin_mm >= 0):
        raise PdfError("the badge size must be positive and the margin not negative")
    reader = open_reader(pdf)
    if not 0 <= page < len(reader.pages):
        raise PdfError(f"the PDF has {len(reader.pages)} page(s); page {page + 1} does not exist")
    check_payload(payload)
    mono = _bilevel(badge_png)
    width_px, height_px = mono.size
    band_top = _caption_top(mono)
    with damage_as_pdf_error("the badge could not be drawn on this PDF"):
        writer = PdfWriter(clone_from=reader)
        target = writer.pages[page]
        crop = target.cropbox
        box = (float(crop.left), float(crop.bottom), float(crop.right), float(crop.top))
        rotate = int(target.get("/Rotate", 0) or 0) % 360
        rotate = rotate if rotate in (0, 90, 180, 270) else 0  # other values are invalid
        shown_w, shown_h = box[2] - box[0], box[3] - box[1]
        if rotate in (90, 270):
            shown_w, shown_h = shown_h, shown_w
        width = size_mm * MM
        scale = width / width_px
        # The image's own caption band is covered by the printed caption, which may need more
        # room under the badge: `below` is the caption area that sticks out under the image.
        band = (height_px - band_top) * scale if band_top is not None else 0.0
        caption = CAPTION_PT * 2.6 + 2
        below = max(caption - band, 0.0)
        height = height_px * scale + below
        margin = margin_mm * MM
        if width + 2 * margin > shown_w + 1e-6 or height + 2 * margin > shown_h + 1e-6:
            raise PdfError(f"the page is too small for a {size_mm:g} mm badge")
        left = shown_w - margin - width if corner.endswith("right") else margin
        bottom = shown_h - margin - height if corner.startswith("top") else margin
        to_user = _display_to_user(rotate, box)
        placed: Matrix = (scale, 0, 0, scale, left, bottom + below)
        beneath: Matrix = (1, 0, 0, 1, left, bottom)
        images, fonts = _resources(target, "/XObject"), _resources(target, "/Font")
        image, font = _free_name(images, "PVBadge"), _free_name(fonts, "PVCaption")
        images[NameObject(image)] = _badge_image(writer, mono)
        fonts[NameObject(font)] = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Courier"),
            }
        )
        reference = parse_barcode(payload).service_reference
        caption_ops = _caption_ops(width, band + below, reference, font)
        ops = [
            f"q {_cm(_multiply(placed, to_user))} {width_px} 0 0 {height_px} 0 0 cm {image} Do Q",
            f"q {_cm(_multiply(beneath, to_user))}",
            *caption_ops,
            "Q",
        ]
        _draw_over(writer, target, ops)
    return _write(writer, _existing_xmp(reader), payload)
