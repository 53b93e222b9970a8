"""PDF metadata (PROTOCOL §3) and badge stamping: round trips, readers' leniency, refusals.

Stamped PDFs are checked the two ways the app reads them: the embedded image pulled out with pypdf
(must be pixel-identical to the badge, i.e. lossless) and the page rendered with pypdfium2 at
300 dpi; both must decode to the exact scan URL.
"""

from __future__ import annotations

import io
import random

import numpy as np
import pypdfium2
import pytest
import zxingcpp
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject, RectangleObject

from service.documents.badge import render_badge_png
from service.documents.pdf_metadata import PdfError, read_payload_metadata, write_payload_metadata
from service.documents.pdf_stamp import CORNERS, stamp_badge
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2

BASE = "https://verify.example.test"
REF = "Zq9_-Ab3xYdefGHIjklMNO"
NS = "urn:payslip-verify:xmp:1.0/"
A4 = (595.0, 842.0)


def _ciphertext(size: int) -> bytes:
    return np.random.default_rng(size).bytes(size)


def _record(size: int = 400) -> tuple[str, str]:
    """(scan URL, payload) of one record."""
    ciphertext = _ciphertext(size)
    return build_scan_url_v2(BASE, REF, ciphertext), build_payload_v2(REF, ciphertext)


def _pdf(
    pages: int = 1,
    *,
    rotate: int = 0,
    crop: tuple[float, ...] | None = None,
    size: tuple[float, float] = A4,
    title: str | None = None,
    xmp: bytes | None = None,
) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        page = writer.add_blank_page(*size)
        if rotate:
            page.rotation = rotate
        if crop:
            page.cropbox = RectangleObject(crop)
    if title:
        writer.add_metadata({"/Title": title})
    if xmp is not None:
        writer.xmp_metadata = xmp
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _pillow_pdf() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (600, 800), "white").save(out, format="PDF", resolution=72.0)
    return out.getvalue()


def _decode(image: Image.Image | np.ndarray) -> list[zxingcpp.Barcode]:
    return list(zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode))


def _render(pdf: bytes, page: int = 0) -> np.ndarray:
    document = pypdfium2.PdfDocument(pdf)
    try:
        bitmap = document[page].render(scale=300 / 72, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    return np.asarray(bitmap)


# -- metadata ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_pdf, _pillow_pdf])
def test_round_trip_writes_xmp_element_and_info_key(make: object) -> None:
    _, payload = _record()
    pdf = write_payload_metadata(make(), payload)  # type: ignore[operator]
    assert read_payload_metadata(pdf) == (payload, payload)
    reader = PdfReader(io.BytesIO(pdf))
    stream = reader.trailer["/Root"]["/Metadata"].get_object()
    assert stream["/Type"] == "/Metadata" and stream["/Subtype"] == "/XML"
    xmp = stream.get_data().decode("utf-8")
    assert f'xmlns:pv="{NS}"' in xmp and f"<pv:payload>{payload}</pv:payload>" in xmp
    assert reader.xmp_metadata is not None
    assert reader.xmp_metadata.get_element("", NS, "payload")  # pypdf's own reader finds it
    assert reader.metadata is not None and reader.metadata["/PayslipVerifyPayload"] == payload


def test_existing_info_entries_and_xmp_properties_are_kept_and_ours_replaced() -> None:
    xmp = (
        b'<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        b'<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        b"<dc:format>application/pdf</dc:format></rdf:Description></rdf:RDF></x:xmpmeta>"
        b'<?xpacket end="w"?>'
    )
    first = build_payload_v2(REF, b"\x01\x02\x03")
    second = build_payload_v2(REF, b"\x04\x05")
    pdf = write_payload_metadata(_pdf(title="Payslip November", xmp=xmp), first)
    pdf = write_payload_metadata(pdf, second)
    assert read_payload_metadata(pdf) == (second, second)
    reader = PdfReader(io.BytesIO(pdf))
    assert reader.metadata is not None and reader.metadata["/Title"] == "Payslip November"
    packet = reader.trailer["/Root"]["/Metadata"].get_object().get_data()
    assert b"application/pdf" in packet and packet.count(b"payload>") == 2  # one element


def test_attribute_form_and_either_place_alone_are_read() -> None:
    attribute_xmp = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        b'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" '
        b'xmlns:psv="' + NS.encode() + b'" psv:payload="2|' + REF.encode() + b'|AE"/>'
        b"</rdf:RDF></x:xmpmeta>"
    )
    assert read_payload_metadata(_pdf(xmp=attribute_xmp)) == (f"2|{REF}|AE", None)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_pdf())))
    writer.add_metadata({"/PayslipVerifyPayload": f"1|{REF}|AQ"})
    out = io.BytesIO()
    writer.write(out)
    assert read_payload_metadata(out.getvalue()) == (None, f"1|{REF}|AQ")
    assert read_payload_metadata(_pdf()) == (None, None)


def test_xmp_with_a_dtd_is_ignored_not_expanded() -> None:
    xmp = (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "2|AAAAAAAAAAAAAAAAAAAAAA|AE">]>'
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        b'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        b'xmlns:pv="' + NS.encode() + b'"><pv:payload>&a;</pv:payload></rdf:Description>'
        b"</rdf:RDF></x:xmpmeta>"
    )
    assert read_payload_metadata(_pdf(xmp=xmp)) == (None, None)
    _, payload = _record(20)
    assert read_payload_metadata(write_payload_metadata(_pdf(xmp=xmp), payload)) == (
        payload,
        payload,
    )


@pytest.mark.parametrize(
    "payload",
    [
        "Jane Citizen|Payroll officer",  # plaintext is never written
        f"{BASE}/v/{REF}#2.AE",  # a scan URL is not the bare payload
        f" 2|{REF}|AE",
        f"2|{REF}|ae",
        "",
    ],
)
def test_only_a_bare_payload_is_written(payload: str) -> None:
    with pytest.raises(PdfError, match="payload"):
        write_payload_metadata(_pdf(), payload)
    with pytest.raises(PdfError, match="payload"):
        stamp_badge(_pdf(), render_badge_png(_record(20)[0]), payload)


def _encrypted() -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_pdf())))
    writer.encrypt("", owner_password="owner")  # even an empty user password is refused
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_encrypted_pdfs_are_refused_plainly() -> None:
    url, payload = _record()
    for call in (
        lambda pdf: read_payload_metadata(pdf),
        lambda pdf: write_payload_metadata(pdf, payload),
        lambda pdf: stamp_badge(pdf, render_badge_png(url), payload),
    ):
        with pytest.raises(PdfError, match="encrypted"):
            call(_encrypted())


def test_damaged_pdfs_only_ever_raise_pdf_error() -> None:
    url, payload = _record()
    good = stamp_badge(_pdf(), render_badge_png(url), payload)
    png = render_badge_png(url)
    rng = random.Random(7)
    samples = [b"", b"not a pdf", b"%PDF-1.7\n%%EOF", good[: len(good) // 2]]
    for _ in range(40):
        damaged = bytearray(good)
        for _ in range(rng.randint(1, 12)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        samples.append(bytes(damaged))
    for sample in samples:
        for call in (
            lambda pdf: read_payload_metadata(pdf),
            lambda pdf: write_payload_metadata(pdf, payload),
            lambda pdf: stamp_badge(pdf, png, payload),
        ):
            try:
                call(sample)
            except PdfError as exc:
                assert payload not in str(exc)


# -- stamping ---------------------------------------------------------------------------------


def _where(grey: np.ndarray) -> tuple[str, str]:
    """Which half of the page, vertically and horizontally, holds the dark pixels."""
    rows, cols = np.nonzero(grey < 128)
    vertical = "top" if rows.mean() < grey.shape[0] / 2 else "bottom"
    horizontal = "left" if cols.mean() < grey.shape[1] / 2 else "right"
    return vertical, horizontal


@pytest.mark.parametrize("corner", CORNERS)
def test_stamped_badge_is_lossless_readable_and_in_its_corner(corner: str) -> None:
    url, payload = _record(600)
    png = render_badge_png(url)
    stamped = stamp_badge(_pdf(), png, payload, corner=corner)
    assert read_payload_metadata(stamped) == (payload, payload)
    (embedded,) = PdfReader(io.BytesIO(stamped)).pages[0].images
    badge = Image.open(io.BytesIO(png))
    extracted = embedded.image
    assert extracted.size == badge.size
    assert np.array_equal(np.asarray(extracted.convert("L")), np.asarray(badge.convert("L")))
    assert [r.text for r in _decode(extracted.convert("L"))] == [url]
    page = _render(stamped)
    (found,) = _decode(page)
    assert found.text == url
    assert "-".join(_where(page)) == corner


def test_the_largest_payload_reads_from_a_300_dpi_render_at_40_mm() -> None:
    url, payload = _record(2164)
    stamped = stamp_badge(_pdf(), render_badge_png(url), payload)
    assert [r.text for r in _decode(_render(stamped))] == [url]


@pytest.mark.parametrize("rotate", [90, 180, 270])
def test_rotated_pages_get_the_badge_upright_in_the_corner_a_viewer_shows(rotate: int) -> None:
    url, payload = _record()
    stamped = stamp_badge(_pdf(rotate=rotate), render_badge_png(url), payload, corner="top-left")
    page = _render(stamped)
    assert page.shape[1] > page.shape[0] if rotate != 180 else page.shape[0] > page.shape[1]
    (found,) = _decode(page)
    assert found.text == url and found.orientation == 0
    assert _where(page) == ("top", "left")


def test_the_badge_lands_inside_the_crop_box_on_the_chosen_page() -> None:
    url, payload = _record()
    pdf = _pdf(2, crop=(100, 100, 495, 742))
    stamped = stamp_badge(pdf, render_badge_png(url), payload, page=1, corner="bottom-right")
    assert [r.text for r in _decode(_render(stamped, 1))] == [url]
    assert _decode(_render(stamped, 0)) == []
    assert _where(_render(stamped, 1)) == ("bottom", "right")


def test_refusals_are_plain() -> None:
    url, payload = _record()
    png = render_badge_png(url)
    with pytest.raises(PdfError, match="too small"):
        stamp_badge(_pdf(size=(100, 100)), png, payload)
    with pytest.raises(PdfError, match="page 2 does not exist"):
        stamp_badge(_pdf(), png, payload, page=1)
    with pytest.raises(PdfError, match="corner"):
        stamp_badge(_pdf(), png, payload, corner="middle")
    with pytest.raises(PdfError, match="size"):
        stamp_badge(_pdf(), png, payload, size_mm=0)
    with pytest.raises(PdfError, match="not a readable PNG"):
        stamp_badge(_pdf(), b"\x89PNG broken", payload)
    grey = Image.open(io.BytesIO(png)).convert("L")
    grey.putpixel((0, 0), 128)
    out = io.BytesIO()
    grey.save(out, format="PNG")
    with pytest.raises(PdfError, match="black-and-white"):
        stamp_badge(_pdf(), out.getvalue(), payload)


def test_a_black_and_white_badge_in_another_mode_is_stored_losslessly() -> None:
    url, payload = _record()
    png = render_badge_png(url)
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("P").save(out, format="PNG")
    stamped = stamp_badge(_pdf(), out.getvalue(), payload)
    (embedded,) = PdfReader(io.BytesIO(stamped)).pages[0].images
    assert embedded.image.convert("1").tobytes() == Image.open(io.BytesIO(png)).tobytes()


def test_other_page_content_and_resources_survive() -> None:
    url, payload = _record()
    writer = PdfWriter()
    page = writer.add_blank_page(*A4)
    page[NameObject("/Foo")] = NameObject("/Bar")
    out = io.BytesIO()
    writer.write(out)
    stamped = stamp_badge(out.getvalue(), render_badge_png(url), payload)
    assert PdfReader(io.BytesIO(stamped)).pages[0]["/Foo"] == "/Bar"


def _page_with_dirty_graphics_state() -> bytes:
    """Content that scales, recolours and never restores its graphics state (no q/Q), as some
    payroll systems' PDF writers leave it: a stamp must not inherit any of that."""
    writer = PdfWriter()
    page = writer.add_blank_page(*A4)
    stream = DecodedStreamObject()
    stream.set_data(b"0.5 0 0 0.5 0 0 cm 0.8 g 0 0 100 100 re f 1 0 0 1 300 300 cm")
    page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_stamp_is_not_moved_by_content_that_leaves_its_graphics_state_changed() -> None:
    url, payload = _record()
    stamped = stamp_badge(_page_with_dirty_graphics_state(), render_badge_png(url), payload)
    pixels = _render(stamped)
    height, width = pixels.shape
    corner = pixels[height // 2 :, width // 2 :]  # bottom-right quarter, where it belongs
    assert [b.text for b in _decode(corner)] == [url]


def test_a_page_stamped_twice_keeps_both_badges() -> None:
    first_url, first_payload = _record(300)
    other = _ciphertext(301)
    second_url = build_scan_url_v2(BASE, "Q" * 22, other)
    once = stamp_badge(_pdf(), render_badge_png(first_url), first_payload, 0, "bottom-right")
    twice = stamp_badge(
        once, render_badge_png(second_url), build_payload_v2("Q" * 22, other), 0, "top-left"
    )
    assert {b.text for b in _decode(_render(twice))} == {first_url, second_url}
