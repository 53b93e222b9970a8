"""Stamping a badge onto an existing payslip PDF, and writing the payload into its metadata.

The badge goes in as a 1-bit image, which PDF writers keep lossless (a JPEG-compressed QR code
loses the sharp edges decoders need; measured in FINDINGS.md).
"""

from __future__ import annotations

import io

from PIL import Image
from pypdf import PdfWriter, Transformation
from pypdf.errors import PyPdfError

from service.protocol.pdf_metadata import PdfError, _existing_xmp, _write, open_reader

CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")
MM = 72 / 25.4


def _badge_page_pdf(badge_png: bytes) -> tuple[bytes, int, int]:
    image = Image.open(io.BytesIO(badge_png))
    image.load()
    mono = image.convert("1") if image.mode != "1" else image
    out = io.BytesIO()
    mono.save(out, format="PDF", resolution=72.0)
    return out.getvalue(), mono.width, mono.height


def stamp_badge(
    pdf: bytes,
    badge_png: bytes,
    payload: str,
    page: int = 0,
    corner: str = "bottom-right",
    size_mm: float = 40.0,
    margin_mm: float = 10.0,
) -> bytes:
    if corner not in CORNERS:
        raise PdfError(f"corner must be one of {', '.join(CORNERS)}")
    reader = open_reader(pdf)
    if not 0 <= page < len(reader.pages):
        raise PdfError(f"the PDF has {len(reader.pages)} page(s); page {page + 1} does not exist")
    overlay_pdf, width_px, height_px = _badge_page_pdf(badge_png)
    overlay = open_reader(overlay_pdf).pages[0]
    writer = PdfWriter(clone_from=reader)
    target = writer.pages[page]
    box = target.mediabox
    width = size_mm * MM
    scale = width / width_px
    height = height_px * scale
    margin = margin_mm * MM
    left = float(box.left) + margin
    bottom = float(box.bottom) + margin
    if corner.endswith("right"):
        left = float(box.right) - margin - width
    if corner.startswith("top"):
        bottom = float(box.top) - margin - height
    try:
        target.merge_transformed_page(
            overlay, Transformation().scale(scale, scale).translate(left, bottom)
        )
    except (PyPdfError, ValueError, KeyError) as exc:
        raise PdfError("the badge could not be drawn on this PDF") from exc
    return _write(writer, _existing_xmp(reader), payload)
