"""The stamped badge's caption is real PDF text of at least 6 pt (issue 11): the caption inside
the badge image would print at about 3 pt at the 40 mm stamp size."""

from __future__ import annotations

import io

import numpy as np
import pypdfium2
import pytest
import zxingcpp
from pypdf import PdfReader
from pypdf.generic import ContentStream

from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import CAPTION, CORNERS, MM, stamp_badge
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from testbed.factories import blank_pdf

REFERENCE = "WWWWmmmmQQQQ0000abcd_-"  # the widest characters a reference can hold


def _stamped(corner: str) -> tuple[bytes, str]:
    ciphertext = np.random.default_rng(7).bytes(400)
    url = build_scan_url_v2("https://verify.example.com", REFERENCE, ciphertext)
    payload = build_payload_v2(REFERENCE, ciphertext)
    return stamp_badge(blank_pdf(), render_badge_png(url), payload, corner=corner), url


def _font_sizes(pdf: bytes) -> list[float]:
    page = PdfReader(io.BytesIO(pdf)).pages[0]
    stream = ContentStream(page.get_contents(), page.pdf)
    return [float(operands[1]) for operands, op in stream.operations if op == b"Tf"]


@pytest.mark.parametrize("corner", CORNERS)
def test_caption_prints_at_six_points_or_more_and_the_code_still_reads(corner: str) -> None:
    stamped, url = _stamped(corner)
    sizes = _font_sizes(stamped)
    assert sizes and min(sizes) >= 6.0
    document = pypdfium2.PdfDocument(stamped)
    try:
        page = document[0]
        text = page.get_textpage()
        words = text.get_text_range()
        assert CAPTION in words and f"Ref {REFERENCE}" in words
        # The whole caption sits on the page, at least the stamp's 10 mm margin from its edges.
        boxes = [text.get_charbox(i) for i in range(text.count_chars()) if words[i].strip()]
        left = min(b[0] for b in boxes)
        bottom = min(b[1] for b in boxes)
        right = max(b[2] for b in boxes)
        top = max(b[3] for b in boxes)
        assert left >= 10 * MM - 1 and bottom >= 10 * MM - 1
        assert right <= 595 - 10 * MM + 1 and top <= 842 - 10 * MM + 1
        grey = np.asarray(page.render(scale=300 / 72, grayscale=True).to_pil().convert("L"))
    finally:
        document.close()
    (found,) = zxingcpp.read_barcodes(grey, formats=zxingcpp.BarcodeFormat.QRCode)
    assert found.text == url
