"""Payloads from real files: PDFs built here (metadata, embedded badge, vector QR), images, text."""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
import pytest
import segno
from PIL import Image
from pypdf import PdfReader, PdfWriter, Transformation
from pypdf.generic import ContentStream, DecodedStreamObject

from app.inputs.reading import (
    InputError,
    PdfReading,
    read_file,
    read_image_bytes,
    read_image_file,
    read_input,
    read_pdf,
)
from service.documents.badge import render_badge_png
from service.documents.pdf_metadata import read_payload_metadata, write_payload_metadata
from service.documents.pdf_stamp import stamp_badge
from service.protocol.barcode_text import (
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v2,
    parse_barcode,
)
from service.protocol.encoding import b64url_encode

SCAN_BASE = "https://verify.example.com"
XMP_NS = "urn:payslip-verify:xmp:1.0/"


class Record:
    """A synthetic registered payslip: its reference, ciphertext and the texts that carry them."""

    def __init__(self, seed: int, size: int = 300) -> None:
        rng = np.random.default_rng(seed)
        self.reference = b64url_encode(rng.bytes(16))
        self.ciphertext = rng.bytes(size)
        self.payload = build_payload_v2(self.reference, self.ciphertext)
        self.scan_url = build_scan_url_v2(SCAN_BASE, self.reference, self.ciphertext)


A, B = Record(1), Record(2)


def blank_pdf(pages: int = 1) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(595, 842)
    return to_bytes(writer)


def to_bytes(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def with_metadata(pdf: bytes, payload: str) -> bytes:
    return write_payload_metadata(pdf, payload)


def stamped(pdf: bytes, record: Record) -> bytes:
    """The badge stamped on the page the way the issuing side does it (and its metadata)."""
    return stamp_badge(pdf, render_badge_png(record.scan_url), record.payload)


def badge_only(record: Record) -> bytes:
    """A PDF whose page shows the badge as an image but carries no payload metadata."""
    return strip_metadata(stamped(blank_pdf(), record))


def strip_metadata(pdf: bytes) -> bytes:
    """The same pages in a new document: no XMP packet, no payload in the info dictionary."""
    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf)).pages:
        writer.add_page(page)
    data = to_bytes(writer)
    assert read_payload_metadata(data) == (None, None)
    return data


def scanned_page(record: Record, extra: Record | None = None) -> bytes:
    """An A4 'scan' at 150 dpi as one bilevel image (Pillow mode "1" stores it losslessly)."""
    page = Image.new("L", (1240, 1754), 255)
    for index, item in enumerate([record] + ([extra] if extra else [])):
        code = Image.open(io.BytesIO(render_badge_png(item.scan_url))).convert("L")
        code = code.resize((360, 360 * code.height // code.width), Image.Resampling.LANCZOS)
        page.paste(code, (800 - 500 * index, 1250))
    buffer = io.BytesIO()
    page.convert("1").save(buffer, "PDF", resolution=150)
    return buffer.getvalue()


def vector_qr_pdf(text: str, page_pt: float = 595) -> bytes:
    """A page that draws the QR as filled rectangles: no image at all, only vector paths."""
    code = segno.make(text, error="M")
    module = 170 / len(code.matrix)  # points: the symbol is 6 cm wide, like a printed badge
    left, top = 60.0, 780.0
    ops = ["0 g"]
    for row, bits in enumerate(code.matrix):
        for col, bit in enumerate(bits):
            if bit:
                x, y = left + col * module, top - (row + 1) * module
                ops.append(f"{x:.2f} {y:.2f} {module:.2f} {module:.2f} re")
    ops.append("f")
    writer = PdfWriter()
    page = writer.add_blank_page(page_pt, page_pt * 842 / 595)
    stream = DecodedStreamObject()
    stream.set_data("\n".join(ops).encode("ascii"))
    page.replace_contents(ContentStream(stream, writer))
    return to_bytes(writer)


def image_pdf(
    grey: np.ndarray, alpha: np.ndarray | None = None, base: bytes | None = None
) -> bytes:
    """An image 6 cm wide near the foot of an A4 page (``base``, else blank); Pillow stores the
    grey pixels and, with ``alpha``, a soft mask."""
    picture = Image.fromarray(grey.astype(np.uint8), "L")
    if alpha is not None:
        picture = Image.merge("LA", (picture, Image.fromarray(alpha.astype(np.uint8), "L")))
    buffer = io.BytesIO()
    picture.save(buffer, "PDF", resolution=72.0)
    overlay = PdfReader(io.BytesIO(buffer.getvalue())).pages[0]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(base or blank_pdf())))
    scale = 170 / grey.shape[1]
    writer.pages[0].merge_transformed_page(
        overlay, Transformation().scale(scale, scale).translate(380, 40)
    )
    return to_bytes(writer)


def xmp_attribute_packet(payload: str) -> bytes:
    """XMP with the payload as an rdf:Description attribute, a form readers must accept."""
    return (
        '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        f'<rdf:Description rdf:about="" xmlns:pv="{XMP_NS}" pv:payload="{payload}"/>'
        "</rdf:RDF></x:xmpmeta>"
        '<?xpacket end="w"?>'
    ).encode()


# ---------------------------------------------------------------- PDFs


def test_metadata_only(tmp_path: Path) -> None:
    reading = read_pdf(with_metadata(blank_pdf(), A.payload))
    assert reading.metadata_payload == A.payload
    assert reading.metadata_source == "xmp"
    assert reading.page_payloads == []
    assert reading.rendered  # no page image held a QR, so the page was rendered and looked at
    assert not reading.disagreement
    assert reading.payloads_to_verify() == [A.payload]


def test_info_dictionary_is_the_fallback_and_xmp_wins() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(blank_pdf())))
    writer.add_metadata({"/PayslipVerifyPayload": B.payload})
    info_only = to_bytes(writer)
    reading = read_pdf(info_only)
    assert (reading.metadata_payload, reading.metadata_source) == (B.payload, "info")
    writer.xmp_metadata = xmp_attribute_packet(A.payload)
    both = read_pdf(to_bytes(writer))
    assert (both.metadata_payload, both.metadata_source) == (A.payload, "xmp")


def test_qr_image_only(tmp_path: Path) -> None:
    path = tmp_path / "badge-only.pdf"
    path.write_bytes(badge_only(A))
    reading = read_pdf(path)
    assert reading.metadata_payload is None
    assert reading.page_payloads == [A.scan_url]
    assert not reading.rendered  # the embedded image was enough
    assert reading.payloads_to_verify() == [A.scan_url]


def test_scanned_page_image() -> None:
    reading = read_pdf(scanned_page(A))
    assert reading.page_payloads == [A.scan_url]
    assert not reading.rendered


def test_metadata_and_qr_agreeing() -> None:
    reading = read_pdf(stamped(blank_pdf(), A))
    assert reading.metadata_payload == A.payload
    assert reading.page_payloads == [A.scan_url]
    assert not reading.disagreement
    assert reading.payloads_to_verify() == [A.payload]  # one record: verified once


def test_metadata_and_qr_disagreeing() -> None:
    forged = with_metadata(badge_only(B), A.payload)
    reading = read_pdf(forged)
    assert reading.metadata_payload == A.payload
    assert reading.page_payloads == [B.scan_url]
    assert reading.disagreement
    assert reading.payloads_to_verify() == [A.payload, B.scan_url]


def test_vector_qr_is_read_by_rendering() -> None:
    pdf = vector_qr_pdf(A.scan_url)
    assert len(PdfReader(io.BytesIO(pdf)).pages[0].images) == 0
    reading = read_pdf(pdf)
    assert reading.rendered
    assert reading.page_payloads == [A.scan_url]


def test_vector_qr_disagreeing_with_metadata_is_caught() -> None:
    reading = read_pdf(with_metadata(vector_qr_pdf(B.scan_url), A.payload))
    assert reading.disagreement
    assert reading.payloads_to_verify() == [A.payload, B.scan_url]


def test_page_with_two_records_and_metadata_naming_one() -> None:
    reading = read_pdf(with_metadata(scanned_page(A, extra=B), A.payload))
    assert set(reading.page_payloads) == {A.scan_url, B.scan_url}
    assert reading.disagreement
    assert reading.payloads_to_verify() == [A.payload, B.scan_url]


def test_one_page_image_holding_two_badges_yields_both() -> None:
    # A stored badge alone is read in zxing's fast pure-symbol mode; an image holding a second
    # record must still give both, so that the disagreement with the metadata is caught.
    badges = [
        cv2.imdecode(np.frombuffer(render_badge_png(r.scan_url), np.uint8), 0) for r in (A, B)
    ]
    reading = read_pdf(with_metadata(image_pdf(np.hstack(badges)), A.payload))
    assert set(reading.page_payloads) == {A.scan_url, B.scan_url}
    assert reading.disagreement and not reading.rendered


def test_same_record_in_another_form_is_no_disagreement() -> None:
    v1 = build_payload_v1(A.reference, A.ciphertext)
    reading = PdfReading(metadata_payload=v1, page_payloads=[A.scan_url, "https://example.com"])
    assert not reading.disagreement
    assert reading.payloads_to_verify() == [v1]


def test_unrelated_qr_codes_are_ignored_for_the_comparison() -> None:
    company = "https://payroll.example.com/help"
    reading = PdfReading(metadata_payload=A.payload, page_payloads=[company])
    assert not reading.disagreement
    assert reading.payloads_to_verify() == [A.payload]
    garbled = PdfReading(metadata_payload="2|garbage", page_payloads=[B.scan_url])
    assert not garbled.disagreement  # unparseable metadata: nothing to compare against
    assert garbled.payloads_to_verify() == ["2|garbage", B.scan_url]
    no_badge = PdfReading(metadata_payload=None, page_payloads=[company])
    assert no_badge.payloads_to_verify() == [company]  # let the service say why it is not one
    assert PdfReading(metadata_payload=None).payloads_to_verify() == []


def test_badge_with_a_transparent_background_is_read_from_the_image() -> None:
    # Light modules stored as transparent *black*: flattened without its mask the badge would be
    # a black square. Viewers show it on white, and so must the reader.
    grey = cv2.imdecode(np.frombuffer(render_badge_png(A.scan_url), np.uint8), 0)
    alpha = np.where(grey < 128, 255, 0).astype(np.uint8)
    reading = read_pdf(image_pdf(np.zeros_like(grey), alpha))
    assert reading.page_payloads == [A.scan_url]
    assert not reading.rendered


def test_huge_page_is_rendered_within_a_pixel_budget() -> None:
    # 200 inches square: at 300 dpi that would be 3.6 gigapixels. Nothing to find, no crash.
    reading = read_pdf(with_metadata(vector_qr_pdf(A.scan_url, page_pt=14400), A.payload))
    assert reading.rendered
    assert reading.payloads_to_verify() == [A.payload]


def test_another_qr_image_does_not_hide_a_vector_badge() -> None:
    # The only image is a help-link QR; the payslip badge is vector art: the page is rendered.
    helper = segno.make("https://payroll.example.com/help", error="M")
    grid = np.pad(np.where(np.array(helper.matrix) == 1, 0, 255), 4, constant_values=255)
    image = np.kron(grid, np.ones((6, 6))).astype(np.uint8)
    pdf = image_pdf(image, base=vector_qr_pdf(B.scan_url))
    reading = read_pdf(with_metadata(pdf, A.payload))
    assert reading.rendered
    assert set(reading.page_payloads) == {"https://payroll.example.com/help", B.scan_url}
    assert reading.disagreement


def test_multi_page_pdf_finds_the_badge_on_a_later_page() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(blank_pdf())))
    writer.append(PdfReader(io.BytesIO(badge_only(A))))
    reading = read_pdf(to_bytes(writer))
    assert reading.page_payloads == [A.scan_url]


def test_pdf_with_only_an_owner_password_is_read() -> None:
    # Protected against editing but opened by any viewer without a question: read it all.
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(with_metadata(badge_only(B), A.payload))))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    reading = read_pdf(to_bytes(writer))
    assert reading.metadata_payload == A.payload
    assert reading.page_payloads == [B.scan_url]
    assert reading.disagreement


def test_password_protected_pdf_is_an_input_error() -> None:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(stamped(blank_pdf(), A))))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    with pytest.raises(InputError, match="password"):
        read_pdf(to_bytes(writer))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello, not a PDF",
        b"%PDF-1.7\n" + bytes(range(256)) * 20,
        b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>",
    ],
    ids=["empty", "text", "binary-garbage", "no-pages"],
)
def test_damaged_pdf_is_an_input_error(data: bytes) -> None:
    with pytest.raises(InputError) as caught:
        read_pdf(data)
    assert "\n" not in str(caught.value)


def test_truncated_pdf_reads_or_fails_plainly() -> None:
    pdf = stamped(blank_pdf(), A)
    for cut in (len(pdf) // 3, len(pdf) // 2, len(pdf) - 40):
        try:
            reading = read_pdf(pdf[:cut])
        except InputError:
            continue
        assert reading.payloads_to_verify() in ([], [A.payload], [A.scan_url])


# ---------------------------------------------------------------- images and read_input


@pytest.fixture
def badge_png() -> bytes:
    return render_badge_png(A.scan_url)


def test_image_files_with_unicode_names(tmp_path: Path, badge_png: bytes) -> None:
    png = tmp_path / "Gehaltsabrechnung März 工资单.png"
    png.write_bytes(badge_png)
    assert read_image_file(png) == [A.scan_url]
    image = cv2.imdecode(np.frombuffer(badge_png, np.uint8), cv2.IMREAD_COLOR)
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 60])
    assert ok
    jpg = tmp_path / "reçu.jpeg"
    jpg.write_bytes(jpeg.tobytes())
    assert read_image_file(jpg) == [A.scan_url]


def test_image_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(InputError, match="not a readable"):
        read_image_file(broken)
    with pytest.raises(InputError, match="does not exist"):
        read_image_file(tmp_path / "absent.png")


def test_read_input_pdf_image_and_text(tmp_path: Path, badge_png: bytes) -> None:
    pdf = tmp_path / "payslip.pdf"
    pdf.write_bytes(stamped(blank_pdf(), A))
    reading = read_input(str(pdf))
    assert (reading.kind, reading.payloads, reading.disagreement) == ("pdf", [A.payload], False)
    assert reading.pdf is not None

    disguised = tmp_path / "looks-like-an-image.png"  # the content decides, not the name
    disguised.write_bytes(with_metadata(badge_only(B), A.payload))
    reading = read_input(str(disguised))
    assert (reading.kind, reading.disagreement) == ("pdf", True)
    assert reading.payloads == [A.payload, B.scan_url]

    image = tmp_path / "badge.png"
    image.write_bytes(badge_png)
    assert read_input(str(image)).payloads == [A.scan_url]
    assert read_input(str(image)).kind == "image"

    company = segno.make("https://payroll.example.com/help", error="M")
    photo = np.full((900, 1800), 255, np.uint8)
    badge = cv2.imdecode(np.frombuffer(badge_png, np.uint8), cv2.IMREAD_GRAYSCALE)
    photo[50 : 50 + badge.shape[0], 1000 : 1000 + badge.shape[1]] = badge
    photo[100:430, 100:430] = cv2.resize(
        np.kron(
            np.pad(np.where(np.array(company.matrix) == 1, 0, 255), 4, constant_values=255),
            np.ones((10, 10)),
        ).astype(np.uint8),
        (330, 330),
        interpolation=cv2.INTER_AREA,
    )
    both = tmp_path / "two-codes.png"
    cv2.imwrite(str(both), photo)
    assert set(read_image_file(both)) == {A.scan_url, "https://payroll.example.com/help"}
    assert read_input(str(both)).payloads == [A.scan_url]  # the payslip badge, not the other QR

    for text in (A.scan_url, A.payload, f"  {build_payload_v1(A.reference, A.ciphertext)}\n"):
        reading = read_input(text)
        assert reading.kind == "text"
        assert reading.payloads == [text.strip()]
        assert parse_barcode(reading.payloads[0]).service_reference == A.reference


def test_read_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_input(str(tmp_path / "missing.pdf"))
    with pytest.raises(InputError, match="folder"):
        read_input(str(tmp_path))
    with pytest.raises(InputError, match="neither a file nor"):
        read_input("hello")
    with pytest.raises(InputError, match="neither a file nor"):
        read_input("https://verify.example.com/v/too-short#2.AAAA")
    with pytest.raises(InputError, match="neither a file nor"):
        read_input("2|" + "A" * 20000)  # far too long for a file name: still just bad text
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((200, 200), 255, np.uint8))
    with pytest.raises(InputError, match="no QR code"):
        read_input(str(blank))
    empty_pdf = tmp_path / "empty.pdf"
    empty_pdf.write_bytes(blank_pdf())
    with pytest.raises(InputError, match="no payslip metadata and no QR code"):
        read_input(str(empty_pdf))


def test_read_file_is_what_the_screen_reads(tmp_path: Path, badge_png: bytes) -> None:
    """The verify screen and `app verify` read a file the same way; only a file without a code
    differs: no payloads (the screen says "no code found") instead of an error."""
    image = tmp_path / "badge.png"
    image.write_bytes(badge_png)
    assert read_file(image) == read_input(str(image))
    pdf = tmp_path / "payslip.pdf"
    pdf.write_bytes(stamped(blank_pdf(), A))
    assert read_file(pdf) == read_input(str(pdf))
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((200, 200), 255, np.uint8))
    assert (read_file(blank).kind, read_file(blank).payloads) == ("image", [])
    empty_pdf = tmp_path / "empty.pdf"
    empty_pdf.write_bytes(blank_pdf())
    assert (read_file(empty_pdf).kind, read_file(empty_pdf).payloads) == ("pdf", [])
    with pytest.raises(InputError, match="does not exist"):
        read_file(tmp_path / "missing.png")
    with pytest.raises(InputError, match="is a folder"):
        read_file(tmp_path)
    assert read_image_bytes(badge_png, "the sample").payloads == [A.scan_url]
    with pytest.raises(InputError, match="the sample is not a readable PNG or JPEG"):
        read_image_bytes(b"not an image", "the sample")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("fake.pdf", "fake.pdf is not a PDF"),
        ("FAKE.PDF", "FAKE.PDF is not a PDF"),
        ("fake.png", "fake.png is not a readable PNG or JPEG image"),
        ("fake.bin", "fake.bin is neither a PDF nor a PNG or JPEG image"),
    ],
)
def test_random_bytes_are_named_by_what_the_file_name_promised(
    tmp_path: Path, name: str, said: str
) -> None:
    """Issue 36: `fake.pdf` full of random bytes was "not a readable PNG or JPEG image"."""
    fake = tmp_path / name
    fake.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError) as raised:
        read_file(fake)
    assert str(raised.value).startswith(said)
