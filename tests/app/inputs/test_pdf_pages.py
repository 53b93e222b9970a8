"""Page images taken from the decoded stream are the very pixels pdfium's bitmap has, for every
kind of image that path takes; the rest still go through pdfium's bitmap; and a badge is read
whichever way it is stored."""

from __future__ import annotations

import io
import zlib

import cv2
import numpy as np
import pikepdf
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from pikepdf import Array, Dictionary, Name

from app.inputs import pdf_pages
from app.inputs.reading import read_pdf
from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.encoding import b64url_encode

rng = np.random.default_rng(24)
REFERENCE = b64url_encode(rng.bytes(16))
CIPHERTEXT = rng.bytes(300)
SCAN_URL = build_scan_url_v2("https://verify.example.com", REFERENCE, CIPHERTEXT)
PAYLOAD = build_payload_v2(REFERENCE, CIPHERTEXT)


def badge_grey() -> np.ndarray:
    """The badge this service draws, as 0/255 grey pixels."""
    return cv2.imdecode(np.frombuffer(render_badge_png(SCAN_URL), np.uint8), 0)


def stamped() -> bytes:
    """A blank page with the badge stamped the way the issuing side does it."""
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(595, 842))
    buffer = io.BytesIO()
    pdf.save(buffer)
    return stamp_badge(buffer.getvalue(), render_badge_png(SCAN_URL), PAYLOAD)


def image_page(data: bytes, **entries: object) -> bytes:
    """A page drawing one image XObject with these stream bytes and dictionary entries."""
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(595, 842))
    image = pikepdf.Stream(pdf, data)
    image["/Type"], image["/Subtype"] = Name.XObject, Name.Image
    for key, value in entries.items():
        image[f"/{key}"] = value
    page = pdf.pages[0]
    page.Resources = Dictionary(XObject=Dictionary(Im0=image))
    page.Contents = pikepdf.Stream(pdf, b"q 170 0 0 182 380 40 cm /Im0 Do Q")
    buffer = io.BytesIO()
    pdf.save(buffer, compress_streams=False)  # the stream goes in exactly as given
    return buffer.getvalue()


def one_bit(grey: np.ndarray, *, png_rows: bool = False, negative: bool = False) -> bytes:
    """1-bit DeviceGray, Flate; with the PNG predictor (a filter byte per row) if asked; as its
    negative under /Decode [1 0] if asked (the same picture on the page)."""
    bits = grey >= 128
    rows = np.packbits(~bits if negative else bits, axis=1)
    height, width = grey.shape
    entries: dict[str, object] = {
        "Width": width,
        "Height": height,
        "ColorSpace": Name.DeviceGray,
        "BitsPerComponent": 1,
        "Filter": Name.FlateDecode,
    }
    if png_rows:
        rows = np.hstack([np.zeros((height, 1), np.uint8), rows])
        entries["DecodeParms"] = Dictionary(
            Predictor=15, Colors=1, BitsPerComponent=1, Columns=width
        )
    if negative:
        entries["Decode"] = Array([1, 0])
    return image_page(zlib.compress(rows.tobytes()), **entries)


def eight_bit(grey: np.ndarray, *, tiff_predictor: bool = False) -> bytes:
    height, width = grey.shape
    entries: dict[str, object] = {
        "Width": width,
        "Height": height,
        "ColorSpace": Name.DeviceGray,
        "BitsPerComponent": 8,
        "Filter": Name.FlateDecode,
    }
    samples = grey
    if tiff_predictor:  # each sample stored as the difference to its left neighbour
        samples = np.diff(grey, axis=1, prepend=np.zeros((height, 1), np.uint8))
        entries["DecodeParms"] = Dictionary(
            Predictor=2, Colors=1, BitsPerComponent=8, Columns=width
        )
    return image_page(zlib.compress(samples.astype(np.uint8).tobytes()), **entries)


def taken_and_pdfiums(pdf: bytes) -> tuple[list[np.ndarray], list[np.ndarray], bool]:
    """The page's images as pdf_pages takes them, as pdfium's bitmaps, and whether every one
    was taken from its decoded stream."""
    document = pdfium.PdfDocument(pdf)
    try:
        taken = list(pdf_pages._stored_images(document, 0))
        page = document[0]
        bitmaps, from_stream = [], True
        for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]):
            from_stream = from_stream and pdf_pages._samples(obj) is not None
            bitmap = obj.get_bitmap(render=False)
            bitmaps.append(bitmap.to_numpy().copy())
            bitmap.warn_on_close = False
            bitmap.close()
        page.close()
    finally:
        document.close()
    return taken, bitmaps, from_stream


@pytest.mark.parametrize(
    "pdf",
    [
        pytest.param(stamped, id="stamped"),
        pytest.param(lambda: one_bit(badge_grey()), id="1-bit packed rows"),
        pytest.param(lambda: one_bit(badge_grey(), png_rows=True), id="1-bit PNG predictor"),
        pytest.param(lambda: one_bit(badge_grey()[:, :713]), id="1-bit, width not a multiple of 8"),
        pytest.param(
            lambda: eight_bit(rng.integers(0, 256, (61, 47)).astype(np.uint8)), id="8-bit"
        ),
        pytest.param(
            lambda: eight_bit(rng.integers(0, 256, (61, 47)).astype(np.uint8), tiff_predictor=True),
            id="8-bit TIFF predictor",
        ),
    ],
)
def test_samples_taken_from_the_stream_are_pdfiums_pixels(pdf: object) -> None:
    assert callable(pdf)
    taken, bitmaps, from_stream = taken_and_pdfiums(pdf())
    assert from_stream and bitmaps and len(taken) == len(bitmaps)
    for mine, theirs in zip(taken, bitmaps, strict=True):
        assert theirs.ndim == 2  # grey as stored: the case the stream path stands in for
        assert mine.dtype == np.uint8 and np.array_equal(mine, theirs)


def test_a_badge_stored_as_its_negative_under_a_decode_array_is_read() -> None:
    # pdfium applies /Decode to its bitmap and the stream's samples do not: the picture taken is
    # the negative, which the decoder reads all the same.
    pdf = one_bit(badge_grey(), negative=True)
    taken, bitmaps, from_stream = taken_and_pdfiums(pdf)
    assert from_stream and len(taken) == 1 and len(bitmaps) == 1
    assert np.array_equal(taken[0], 255 - np.asarray(badge_grey() >= 128, np.uint8) * 255)
    assert read_pdf(pdf).page_payloads == [SCAN_URL]


def test_images_the_stream_path_does_not_take_still_come_from_pdfiums_bitmap() -> None:
    # A stencil mask (no colour space) and an RGB image: pdfium's bitmap, as before.
    grey = badge_grey()
    rows = np.packbits(grey < 128, axis=1)  # a stencil paints its 1 bits
    height, width = grey.shape
    mask = image_page(
        zlib.compress(rows.tobytes()),
        Width=width,
        Height=height,
        ImageMask=True,
        BitsPerComponent=1,
        Filter=Name.FlateDecode,
    )
    rgb = image_page(
        zlib.compress(np.repeat(grey[:, :, None], 3, axis=2).tobytes()),
        Width=width,
        Height=height,
        ColorSpace=Name.DeviceRGB,
        BitsPerComponent=8,
        Filter=Name.FlateDecode,
    )
    for pdf in (mask, rgb):
        document = pdfium.PdfDocument(pdf)
        page = document[0]
        (image,) = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE])
        assert pdf_pages._samples(image) is None
        page.close()
        document.close()
        assert read_pdf(pdf).page_payloads == [SCAN_URL]


@pytest.mark.parametrize("depth", [1, 8])
@pytest.mark.parametrize("square", [False, True], ids=["badge with caption", "bare symbol"])
def test_a_badge_stored_either_way_is_read_from_its_image(depth: int, square: bool) -> None:
    # The captioned badge goes to the full decoder; a square bare symbol to pure mode first.
    grey = badge_grey()
    grey = grey[: grey.shape[1]] if square else grey
    pdf = one_bit(grey) if depth == 1 else eight_bit(grey)
    reading = read_pdf(pdf)
    assert reading.page_payloads == [SCAN_URL]
    assert not reading.rendered
