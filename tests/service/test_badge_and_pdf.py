"""Badges decode to the exact scan URL at every size; PDFs carry the payload and a clean badge."""

from __future__ import annotations

import io
import os

import cv2
import numpy as np
import pypdfium2
import pytest
import zxingcpp
from PIL import Image
from pypdf import PdfReader, PdfWriter

from service.protocol.badge import (
    WIDTHS,
    BadgeError,
    choose_error_level,
    render_badge_png,
    render_badge_svg,
)
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.encoding import base32_encode
from service.protocol.pdf_metadata import PdfError, read_payload_metadata, write_payload_metadata
from service.protocol.pdf_stamp import stamp_badge

BASE = "https://verify.example.test"


def _decode(png: bytes) -> list[str]:
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    return [r.text for r in zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)]


def _url(size: int) -> str:
    return build_scan_url_v2(BASE, "Ab_-" * 5 + "xy", os.urandom(size))


@pytest.mark.parametrize("size", [16, 150, 600, 1500, 2164])
def test_badges_decode_to_the_exact_scan_url(size: int) -> None:
    url = _url(size)
    assert _decode(render_badge_png(url)) == [url]


def test_error_correction_ladder() -> None:
    small, large = _url(150), _url(2164)
    assert choose_error_level(*_parts(small)) == "M"
    assert choose_error_level(*_parts(large)) == "L"
    with pytest.raises(BadgeError) as caught:
        render_badge_png(_url(3000))
    assert "payslip" in str(caught.value) or "badge" in str(caught.value)


def _parts(url: str) -> tuple[str, str]:
    prefix, _, b32 = url.partition("#2.")
    return prefix + "#2.", b32


@pytest.mark.parametrize("width", WIDTHS)
def test_every_width_decodes_and_is_one_bit_and_deterministic(width: int) -> None:
    url = _url(600)
    png = render_badge_png(url, width)
    assert png == render_badge_png(url, width)
    image = Image.open(io.BytesIO(png))
    assert image.mode == "1" and image.width == width
    assert _decode(png) == [url]


def test_other_widths_and_non_v2_texts_are_refused() -> None:
    with pytest.raises(BadgeError):
        render_badge_png(_url(100), 500)
    with pytest.raises(BadgeError):
        render_badge_png(f"{BASE}/v/{'A' * 22}")


def test_svg_holds_the_same_symbol() -> None:
    svg = render_badge_svg(_url(300))
    assert svg.startswith("<svg") and "path" in svg


def _blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_metadata_round_trip_keeps_other_info() -> None:
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    writer.add_metadata({"/Title": "Payslip November"})
    out = io.BytesIO()
    writer.write(out)
    payload = build_payload_v2("A" * 22, b"\x01\x02\x03")
    stamped = write_payload_metadata(out.getvalue(), payload)
    assert read_payload_metadata(stamped) == (payload, payload)
    assert PdfReader(io.BytesIO(stamped)).metadata["/Title"] == "Payslip November"
    replaced = write_payload_metadata(stamped, build_payload_v2("B" * 22, b"\x04"))
    assert read_payload_metadata(replaced)[0] == build_payload_v2("B" * 22, b"\x04")


def test_xmp_property_as_an_attribute_is_read() -> None:
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.xmp_metadata = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        b'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        b'xmlns:pv="urn:payslip-verify:xmp:1.0/" pv:payload="2|AAAAAAAAAAAAAAAAAAAAAA|AE"/>'
        b"</rdf:RDF></x:xmpmeta>"
    )
    out = io.BytesIO()
    writer.write(out)
    assert read_payload_metadata(out.getvalue()) == ("2|AAAAAAAAAAAAAAAAAAAAAA|AE", None)


@pytest.mark.parametrize("corner", ["top-left", "top-right", "bottom-left", "bottom-right"])
def test_stamped_badge_is_lossless_and_readable(corner: str) -> None:
    ciphertext = os.urandom(400)
    url = build_scan_url_v2(BASE, "C" * 22, ciphertext)
    payload = f"2|{'C' * 22}|{base32_encode(ciphertext)}"
    png = render_badge_png(url)
    stamped = stamp_badge(_blank_pdf(), png, payload, corner=corner)
    assert read_payload_metadata(stamped) == (payload, payload)
    (embedded,) = PdfReader(io.BytesIO(stamped)).pages[0].images
    assert embedded.image.convert("1").tobytes() == Image.open(io.BytesIO(png)).tobytes()
    page = pypdfium2.PdfDocument(stamped)[0]
    bitmap = page.render(scale=300 / 72).to_numpy()
    grey = cv2.cvtColor(bitmap, cv2.COLOR_BGR2GRAY) if bitmap.ndim == 3 else bitmap
    texts = [r.text for r in zxingcpp.read_barcodes(grey, formats=zxingcpp.BarcodeFormat.QRCode)]
    assert texts == [url]


def test_encrypted_and_damaged_pdfs_are_refused_plainly() -> None:
    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(PdfError, match="encrypted"):
        stamp_badge(out.getvalue(), render_badge_png(_url(50)), "2|x|y")
    with pytest.raises(PdfError, match="damaged"):
        read_payload_metadata(b"%PDF-1.7\nthis is not really a pdf")
    with pytest.raises(PdfError, match="page 3"):
        stamp_badge(_blank_pdf(), render_badge_png(_url(50)), "2|x|y", page=2)
