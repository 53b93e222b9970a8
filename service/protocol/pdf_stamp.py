"""Stamping a badge onto an existing payslip PDF, and writing the payload into its metadata.

The badge goes in as a 1-bit image, which PDF writers keep lossless (a JPEG-compressed QR code
loses the sharp edges decoders need; measured in FINDINGS.md). A badge with grey pixels is refused
rather than silently thresholded, for the same reason.

Corners are the corners of the page as a viewer shows it: inside the crop box (what is visible)
and after the page's /Rotate, with the badge drawn upright.
"""

from __future__ import annotations

import io
import math

from PIL import Image, UnidentifiedImageError
from pypdf import PdfWriter, Transformation

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


def _badge_page_pdf(badge_png: bytes) -> tuple[bytes, int, int]:
    """A one-page PDF (1 pt per pixel) holding only the badge; Pillow stores mode "1" lossless."""
    mono = _bilevel(badge_png)
    out = io.BytesIO()
    mono.save(out, format="PDF", resolution=72.0)
    return out.getvalue(), mono.width, mono.height


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
    overlay_pdf, width_px, height_px = _badge_page_pdf(badge_png)
    overlay = open_reader(overlay_pdf).pages[0]
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
        height = height_px * scale
        margin = margin_mm * MM
        if width + 2 * margin > shown_w + 1e-6 or height + 2 * margin > shown_h + 1e-6:
            raise PdfError(f"the page is too small for a {size_mm:g} mm badge")
        left = shown_w - margin - width if corner.endswith("right") else margin
        bottom = shown_h - margin - height if corner.startswith("top") else margin
        placed: Matrix = (scale, 0, 0, scale, left, bottom)
        ctm = _multiply(placed, _display_to_user(rotate, box))
        target.merge_transformed_page(overlay, Transformation(ctm=ctm))
    return _write(writer, _existing_xmp(reader), payload)
