"""Stamps and metadata as incremental updates (issue 12): the original bytes stay a prefix, the
update is read by pypdf, pdfium, poppler and qpdf's checks alike, and a PDF qpdf has to repair is
still stamped, by a rewrite. poppler's pdftoppm and qpdf are checked when installed; under CI
(scripts/bootstrap installs both) a missing one fails the test instead.

The documents: a blank page pypdf wrote, a payslip printed by Chromium (tests/data), the same
payslip with its objects in object streams behind a cross-reference stream, and a file whose
last section is already a cross-reference stream (an earlier update).
"""

from __future__ import annotations

import io
import logging
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pypdfium2
import pytest
import zxingcpp
from PIL import Image
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    ByteStringObject,
    DictionaryObject,
    NameObject,
    TextStringObject,
)

from service.documents.badge import encode_png_1bit, render_badge_png
from service.documents.pdf_metadata import PdfError, read_payload_metadata, write_payload_metadata
from service.documents.pdf_stamp import _badge, stamp_badge
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2

DATA = Path(__file__).resolve().parents[2] / "data"
BASE = "https://verify.example.test"
REF = "Zq9_-Ab3xYdefGHIjklMNO"


def _record(size: int = 400, reference: str = REF) -> tuple[str, str, bytes]:
    """(scan URL, payload, badge PNG) of one record."""
    ciphertext = np.random.default_rng(size).bytes(size)
    url = build_scan_url_v2(BASE, reference, ciphertext)
    return url, build_payload_v2(reference, ciphertext), render_badge_png(url)


def _written(writer: PdfWriter) -> bytes:
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _blank() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    writer.add_metadata({"/Title": "Payslip November"})
    return _written(writer)


def _after_an_update() -> bytes:
    """A PDF whose last section is a cross-reference stream (pypdf writes its updates so)."""
    writer = PdfWriter(PdfReader(io.BytesIO(_blank())), incremental=True)
    writer.add_metadata({"/Author": "Payroll"})
    return _written(writer)


def _office_style() -> bytes:
    """Two pages that inherit their size and fonts from the /Pages node, as LibreOffice writes
    them (a direct /MediaBox and an indirect /Resources there, none on the pages)."""
    text = b"BT /F1 24 Tf 72 700 Td (Inherited font) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 /MediaBox [0 0 595.3 841.9]"
        b" /Resources 6 0 R >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>",
        b"<< /Type /Page /Parent 2 0 R /Contents 5 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
        b"<< /Font << /F1 7 0 R >> >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    table = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f\r\n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n\r\n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\n" % (len(objects) + 1))
    out.write(b"startxref\n%d\n%%%%EOF\n" % table)
    return out.getvalue()


DOCUMENTS: dict[str, Callable[[], bytes]] = {
    "blank": _blank,
    "office-style (inherited size and fonts)": _office_style,
    "browser": lambda: (DATA / "payslip-browser.pdf").read_bytes(),
    "object-streams": lambda: (DATA / "payslip-objstm.pdf").read_bytes(),
    "after-an-update": _after_an_update,
}


def _codes(pdf: bytes, page: int = 0) -> list[str]:
    """The QR codes on a page rendered by pdfium at 300 dpi."""
    document = pypdfium2.PdfDocument(pdf)
    try:
        grey = document[page].render(scale=300 / 72, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    return sorted(c.text for c in zxingcpp.read_barcodes(grey))


def _installed(program: str) -> bool:
    """Whether `program` is on PATH; CI runs every check, so there a missing one fails."""
    if shutil.which(program):
        return True
    if os.environ.get("CI"):
        pytest.fail(f"{program} is not installed (scripts/bootstrap installs it)")
    return False


def _poppler_codes(pdf: bytes, folder: Path) -> list[str] | None:
    """The QR codes on page 1 rendered by poppler's pdftoppm, or None when it is not installed."""
    if not _installed("pdftoppm"):
        return None
    source = folder / "stamped.pdf"
    source.write_bytes(pdf)
    subprocess.run(
        ["pdftoppm", "-r", "200", "-gray", "-singlefile", str(source), str(folder / "page")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with Image.open(folder / "page.pgm") as grey:
        return sorted(c.text for c in zxingcpp.read_barcodes(grey))


def _last_section(pdf: bytes) -> bytes:
    """What the file's last startxref points at: b"xref" for a table, else an object header."""
    offset = int(re.findall(rb"startxref\s+(\d+)", pdf)[-1])
    return pdf[offset : offset + 4]


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_stamp_appends_to_the_original_and_every_reader_takes_it(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    original = DOCUMENTS[name]()
    url, payload, png = _record()
    stamped = stamp_badge(original, png, payload, corner="top-left")
    assert stamped.startswith(original)  # not one byte of the payslip rewritten
    # The update holds the stamp only: the badge, the payload (XMP, and in hex in the info
    # dictionary) and a few small objects, whatever the document's size.
    assert len(stamped) - len(original) < len(png) + 3 * len(payload) + 4096
    # Table after table, stream after stream.
    assert (_last_section(stamped) == b"xref") == (_last_section(original) == b"xref")
    with caplog.at_level(logging.WARNING, logger="pypdf"):
        reader = PdfReader(io.BytesIO(stamped), strict=True)
        assert len(reader.pages) == len(PdfReader(io.BytesIO(original)).pages)
        assert read_payload_metadata(stamped) == (payload, payload)
    assert not caplog.records  # nothing pypdf had to guess or repair
    assert _codes(stamped) == [url]
    assert _poppler_codes(stamped, tmp_path) in (None, [url])
    if _installed("qpdf"):
        (tmp_path / "checked.pdf").write_bytes(stamped)
        check = subprocess.run(
            ["qpdf", "--check", str(tmp_path / "checked.pdf")], capture_output=True, timeout=60
        )
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_second_stamp_is_a_second_update_and_both_badges_read(name: str) -> None:
    original = DOCUMENTS[name]()
    first_url, first_payload, first_png = _record(300)
    second_url, second_payload, second_png = _record(301, "Q" * 22)
    once = stamp_badge(original, first_png, first_payload, 0, "bottom-right")
    twice = stamp_badge(once, second_png, second_payload, 0, "top-left")
    assert twice.startswith(once)
    assert _codes(twice) == sorted([first_url, second_url])
    assert read_payload_metadata(twice) == (second_payload, second_payload)


def test_the_document_keeps_its_information_identity_and_other_pages() -> None:
    writer = PdfWriter()
    for _ in range(2):
        writer.add_blank_page(595, 842)
    writer.add_metadata({"/Title": "Payslip November", "/Author": "Payroll"})
    writer._ID = ArrayObject([ByteStringObject(b"A" * 16), ByteStringObject(b"B" * 16)])
    original = _written(writer)
    url, payload, png = _record()
    stamped = stamp_badge(original, png, payload, page=1)
    reader = PdfReader(io.BytesIO(stamped))
    info = reader.metadata
    assert info is not None
    assert (info.title, info.author) == ("Payslip November", "Payroll")
    identifier = cast(ArrayObject, reader.trailer["/ID"])
    # The first ID names the document and stays; the second names this version of it.
    assert _raw(identifier[0]) == b"A" * 16 and _raw(identifier[1]) not in (b"", b"B" * 16)
    assert stamped == stamp_badge(original, png, payload, page=1)  # deterministic bytes
    assert _codes(stamped, 0) == [] and _codes(stamped, 1) == [url]


def test_resources_shared_with_another_page_or_inherited_are_left_to_it() -> None:
    """Two pages inherit one /Resources from their /Pages node: the stamped page gets its own
    copy with the badge; the other page's resources do not change."""
    writer = PdfWriter()
    for _ in range(2):
        writer.add_blank_page(595, 842)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    shared = writer._add_object(
        DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
    )
    for page in writer.pages:
        del page[NameObject("/Resources")]
    pages = cast(DictionaryObject, writer.root_object["/Pages"].get_object())
    pages[NameObject("/Resources")] = shared
    original = _written(writer)
    url, payload, png = _record()
    stamped = stamp_badge(original, png, payload)
    assert stamped.startswith(original)
    reader = PdfReader(io.BytesIO(stamped))
    first, second = (cast(dict[str, Any], page["/Resources"].get_object()) for page in reader.pages)
    assert set(first["/Font"]) == {"/F1", "/PVCaption0"} and "/PVBadge0" in first["/XObject"]
    assert set(second["/Font"]) == {"/F1"} and "/XObject" not in second
    assert _codes(stamped) == [url]


def _raw(string: Any) -> bytes:
    """The bytes of a PDF string, which pypdf decodes to text when they look like text."""
    return string.original_bytes if isinstance(string, TextStringObject) else bytes(string)


def _broken_startxref(pdf: bytes) -> bytes:
    """The same PDF with its startxref off by a few bytes: pypdf repairs it when lenient."""
    offset = int(re.findall(rb"startxref\s+(\d+)", pdf)[-1])
    head, _, tail = pdf.rpartition(b"startxref")
    return head + b"startxref" + tail.replace(str(offset).encode(), str(offset - 7).encode(), 1)


def test_a_pdf_qpdf_has_to_repair_is_rewritten_and_still_reads() -> None:
    damaged = _broken_startxref((DATA / "payslip-browser.pdf").read_bytes())
    url, payload, png = _record()
    stamped = stamp_badge(damaged, png, payload)
    assert not stamped.startswith(damaged)  # rewritten whole, with sound cross-references
    assert stamped == stamp_badge(damaged, png, payload)  # deterministic bytes here too
    PdfReader(io.BytesIO(stamped), strict=True)
    assert read_payload_metadata(stamped) == (payload, payload)
    assert _codes(stamped) == [url]
    written = write_payload_metadata(damaged, payload)
    assert read_payload_metadata(written) == (payload, payload)


@pytest.mark.parametrize("name", ["blank", "object-streams"])
def test_metadata_alone_is_an_update_too(name: str) -> None:
    original = DOCUMENTS[name]()
    _, payload, _ = _record()
    written = write_payload_metadata(original, payload)
    assert written.startswith(original)
    assert read_payload_metadata(written) == (payload, payload)
    again = write_payload_metadata(written, build_payload_v2(REF, b"\x01\x02"))
    assert read_payload_metadata(again) == (build_payload_v2(REF, b"\x01\x02"),) * 2


def test_damaged_payslips_only_ever_raise_pdf_error() -> None:
    """Random bytes changed in a stamped browser payslip: a stamp succeeds (and reads back) or
    fails with PdfError, whichever path the damage sends it down."""
    _, payload, png = _record()
    good = stamp_badge((DATA / "payslip-browser.pdf").read_bytes(), png, payload)
    rng = random.Random(12)
    for _ in range(30):
        damaged = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        try:
            stamped = stamp_badge(bytes(damaged), png, payload)
        except PdfError as exc:
            assert payload not in str(exc)
        else:
            assert read_payload_metadata(stamped)[1] == payload


@pytest.mark.parametrize("width", [203, 720])
def test_a_one_bit_png_goes_in_as_it_is_and_matches_the_decoded_path(width: int) -> None:
    """A 1-bit PNG with unfiltered rows (what the badge renderer writes) is embedded with its
    own compressed data; it must give the same pixels and caption position as decoding it."""
    rng = np.random.default_rng(width)
    pixels = np.ones((width + 40, width), dtype=bool)
    pixels[: width - 20] = rng.random((width - 20, width)) < 0.5  # the "code"
    pixels[width + 10 : width + 30, 20:-20] = False  # a caption block under a white gap
    png = encode_png_1bit(np.packbits(pixels, axis=1), width)
    other = io.BytesIO()
    Image.fromarray(pixels).convert("L").save(other, format="PNG")  # 8-bit: decoded path
    direct, decoded = _badge(png), _badge(other.getvalue())
    assert direct.caption_top == decoded.caption_top == width + 10
    assert direct.as_png and not decoded.as_png
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    _, payload, _ = _record()
    for badge in (png, other.getvalue()):
        stamped = stamp_badge(_written(writer), badge, payload)
        (embedded,) = PdfReader(io.BytesIO(stamped)).pages[0].images
        assert embedded.image is not None
        assert np.array_equal(np.asarray(embedded.image.convert("1")), pixels)


def test_stamping_needs_no_lxml() -> None:
    """pikepdf imports lxml only for its XMP helper, which the stamp does not use: the desktop
    bundle leaves lxml out. A stamp (update and rewrite) in a Python where lxml cannot load."""
    script = (
        "import sys; sys.modules['lxml'] = None\n"  # any import of lxml now fails
        "from pathlib import Path\n"
        "from tests.service.documents.test_pdf_append import DATA, _broken_startxref, _record\n"
        "from service.documents.pdf_metadata import read_payload_metadata\n"
        "from service.documents.pdf_stamp import stamp_badge\n"
        "_, payload, png = _record()\n"
        "pdf = (DATA / 'payslip-objstm.pdf').read_bytes()\n"
        "for document in (pdf, _broken_startxref(pdf)):\n"
        "    stamped = stamp_badge(document, png, payload)\n"
        "    assert read_payload_metadata(stamped) == (payload, payload)\n"
        "    print(stamped.startswith(document))\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False"]  # an update, then a rewrite


def test_a_page_that_inherits_its_size_and_fonts_keeps_them(tmp_path: Path) -> None:
    """qpdf must not copy inherited attributes down under the numbers the update takes: the
    stamped page keeps its A4 size and its font, and the other page is untouched."""
    original = _office_style()
    url, payload, png = _record()
    stamped = stamp_badge(original, png, payload, corner="top-right")
    assert stamped.startswith(original)
    reader = PdfReader(io.BytesIO(stamped), strict=True)
    for page in reader.pages:
        assert [float(v) for v in page.mediabox] == [0, 0, 595.3, 841.9]
        assert "Inherited font" in page.extract_text()
    fonts = cast(Any, reader.pages[0]["/Resources"])["/Font"]
    assert "/F1" in fonts  # the inherited font is in the stamped page's own resources
    update = stamped[len(original) :]
    assert b"\n4 0 obj" not in update  # the second page is not rewritten: it still inherits
    assert _codes(stamped) == [url]
