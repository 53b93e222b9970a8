"""What a PDF's pages show, read with pdfium: the images stored in them, and the pages rendered.

PDFium is not thread-safe and the applicant check reads PDFs on several threads, so every pdfium
call is made under one lock; pixels are copied out and decoded outside it, where zxing-cpp
releases the GIL and another PDF can be opened meanwhile.

A stored image is taken as pdfium decodes its stream (its filters and predictor applied, nothing
drawn): a badge stamped by this service (1-bit DeviceGray, Flate) comes out as packed rows, which
numpy expands to grey (~0.1 ms) where pdfium's own bitmap of it costs ~0.4 ms and holds the lock
while it converts (bench/applicant_bench.py). Any other image (another colour space or depth, an
image codec such as JPEG, a stencil mask) is taken as pdfium's bitmap, as before. The stream's
samples are the bitmap's pixels except for a /Decode array, which pdfium applies and the samples
do not: for DeviceGray it can only turn the picture into its negative, and the QR decoder reads
both polarities (zxing-cpp's try_invert), so the same codes are found either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import cv2
import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import zxingcpp

from app.scan.decoders import Decoder
from service.protocol.barcode_text import BarcodeTextError, parse_barcode

RENDER_DPI = 300
MAX_RENDERED_PAGES = 4  # payslips are one or two pages; rendering a long report costs seconds
MAX_RENDER_PIXELS = 40_000_000  # A3 at 300 dpi is 17 MP; a poster-sized page is rendered coarser
_PLAIN_FILTERS: tuple[list[str], ...] = ([], ["FlateDecode"])
"""Streams whose decoded data are the samples themselves (no image codec left to apply)."""
_log = logging.getLogger(__name__)
_PDFIUM = threading.Lock()
"""PDFium may be called from one thread at a time (it keeps global state)."""


@dataclass(frozen=True, slots=True)
class _Samples:
    """A DeviceGray image's decoded stream: packed rows of ``depth``-bit samples."""

    data: bytes
    width: int
    height: int
    depth: int

    def grey(self) -> np.ndarray:
        rows = np.frombuffer(self.data, np.uint8).reshape(self.height, -1)
        if self.depth == 8:
            return rows
        bits = np.unpackbits(rows, axis=1, count=self.width)
        bits *= 255  # 1 is white in DeviceGray
        return bits


@dataclass(frozen=True, slots=True)
class _Bitmap:
    """pdfium's bitmap of an image, copied out: its pixels and mode (L, BGR, BGRA or BGRX)."""

    pixels: np.ndarray
    mode: str

    def grey(self) -> np.ndarray | None:
        return _grey_on_white(self.pixels, self.mode)


_kept: tuple[bytes, pdfium.PdfDocument] | None = None
"""The document last read, left open for its document check (see :func:`keep_document`)."""
_expiry: threading.Timer | None = None
KEEP_SECONDS = 10.0
"""The longest a kept document waits for its check (which follows its reading within moments):
whatever way a verification ends, nothing of a page stays in memory longer."""


def open_document(data: bytes) -> pdfium.PdfDocument | None:
    """The PDF opened by pdfium (the one kept for exactly these bytes, when there is one), or
    None when pdfium cannot read what pypdf could."""
    global _kept
    with _PDFIUM:
        if _kept is not None and _kept[0] is data:
            document, _kept = _kept[1], None
            return document
        try:
            return pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            _log.debug("pdfium cannot open the PDF: %s", type(exc).__name__)
            return None


def close_document(document: pdfium.PdfDocument) -> None:
    with _PDFIUM:
        document.close()


def release_kept(data: bytes | None) -> None:
    """Close the document kept for `data`, when no check is going to take it: nothing of a
    page stays in memory longer than the reading that needed it."""
    global _kept
    with _PDFIUM:
        if _kept is not None and _kept[0] is data:
            document, _kept = _kept[1], None
            document.close()


def keep_document(data: bytes, document: pdfium.PdfDocument) -> None:
    """Leave `document` (opened from `data`) open for the next :func:`open_document` of the same
    bytes object: a PDF's document check, which follows its reading when its code verifies.
    pdfium caches a document's fonts, so its page loads there in ~0.06 ms instead of ~0.65 ms
    (a third of the check of a one-page text PDF). One document is kept at a time (the one kept
    before is closed), in memory only, as the bytes the caller holds anyway; the check closes
    it, the verify flow releases it when no check follows (:func:`release_kept`), and whatever
    way a verification ends otherwise, it is closed KEEP_SECONDS later."""
    global _kept, _expiry
    with _PDFIUM:
        previous, _kept = _kept, (data, document)
        if previous is not None and previous[1] is not document:
            previous[1].close()
        if _expiry is not None:
            _expiry.cancel()  # one timer at a time
        _expiry = threading.Timer(KEEP_SECONDS, _expire, (document,))
        _expiry.daemon = True
        _expiry.start()


def _expire(document: pdfium.PdfDocument) -> None:
    """KEEP_SECONDS after it was kept: closed, if no check took it (and none kept another)."""
    global _kept
    with _PDFIUM:
        if _kept is not None and _kept[1] is document:
            _kept = None
            document.close()


def stored_image_texts(document: pdfium.PdfDocument, decoder: Decoder) -> list[str]:
    """QR texts in the images stored in the pages (in forms too)."""
    texts: list[str] = []
    for index in range(len(document)):
        for pixels in _stored_images(document, index):
            texts.extend(_decode_stored_image(pixels, decoder))
    return list(dict.fromkeys(texts))


@contextlib.contextmanager
def open_page(document: pdfium.PdfDocument, index: int) -> Iterator[pdfium.PdfPage | None]:
    """Page `index` under pdfium's lock (pdfium is not thread-safe), closed afterwards; None when
    pdfium cannot load it. Only the exception's type is logged: its message could quote document
    content."""
    with _PDFIUM:
        try:
            page = document[index]
        except pdfium.PdfiumError as exc:
            _log.debug("page %d unreadable: %s", index, type(exc).__name__)
            yield None
            return
        try:
            yield page
        finally:
            page.close()


def _stored_images(document: pdfium.PdfDocument, index: int) -> Iterator[np.ndarray]:
    """The page's images in grey; one that pdfium cannot load is skipped (pypdf or rendering may
    still read it)."""
    found: list[_Samples | _Bitmap] = []
    with open_page(document, index) as page:
        if page is None:
            return
        for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]):
            try:
                found.append(_samples(obj) or _copied(obj.get_bitmap(render=False)))
            except pdfium.PdfiumError as exc:
                _log.debug("page image skipped: %s", type(exc).__name__)
    for image in found:
        grey = image.grey()
        if grey is not None:
            yield grey


def _samples(image: pdfium.PdfImage) -> _Samples | None:
    """The decoded samples of a 1- or 8-bit DeviceGray image with no image codec, else None."""
    metadata = image.get_metadata()
    depth = metadata.bits_per_pixel
    if metadata.colorspace != pdfium_c.FPDF_COLORSPACE_DEVICEGRAY or depth not in (1, 8):
        return None
    if image.get_filters() not in _PLAIN_FILTERS:
        return None
    width, height = metadata.width, metadata.height
    size = pdfium_c.FPDFImageObj_GetImageDataDecoded(image, None, 0)
    if width <= 0 or height <= 0 or size != height * ((width * depth + 7) // 8):
        return None  # not the plain rows these dimensions need: pdfium's bitmap decides
    buffer = ctypes.create_string_buffer(size)
    if pdfium_c.FPDFImageObj_GetImageDataDecoded(image, buffer, size) != size:
        return None
    return _Samples(buffer.raw, width, height, depth)


def _decode_stored_image(pixels: np.ndarray, decoder: Decoder) -> list[str]:
    """A square stored image is most often a bare QR symbol, which zxing-cpp's pure-symbol mode
    reads in about a third of the time of a search; anything else gets the full decoder: no
    code, another QR, two codes in one image (pure mode then reads nothing, so a second record
    in the image is still found and compared), or a badge with its caption under the symbol
    (what this service stamps: pure mode never reads it, and trying cost ~0.3 ms a badge)."""
    height, width = pixels.shape[:2]
    if abs(height - width) > max(height, width) // 50:
        return decoder.decode(pixels)
    try:
        found = zxingcpp.read_barcodes(
            pixels,
            formats=zxingcpp.BarcodeFormat.QRCode,  # type: ignore[arg-type]  # as in decoders.py
            is_pure=True,
        )
    except Exception:  # a C++ error on an odd image: the full decoder decides
        found = []
    texts = [barcode.text for barcode in found if barcode.valid and barcode.text]
    if len(texts) == 1 and _reference(texts[0]) is not None:
        return texts
    return decoder.decode(pixels)


def _reference(text: str) -> str | None:
    try:
        return parse_barcode(text).service_reference
    except BarcodeTextError:
        return None


def _copied(bitmap: pdfium.PdfBitmap) -> _Bitmap:
    """The bitmap's pixels copied out, and its mode; the bitmap is freed at once (under the
    caller's lock), which is safe because nothing refers to its buffer any more."""
    try:
        return _Bitmap(bitmap.to_numpy().copy(), bitmap.mode)
    finally:
        bitmap.warn_on_close = False
        bitmap.close()


def _grey_on_white(pixels: np.ndarray, mode: str) -> np.ndarray | None:
    """A pdfium bitmap (L, BGR, BGRA or BGRX) in grey; transparency flattened onto white."""
    if pixels.ndim == 2:
        return pixels
    if pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        return None
    grey = cv2.cvtColor(np.ascontiguousarray(pixels[:, :, :3]), cv2.COLOR_BGR2GRAY)
    if pixels.shape[2] == 4 and mode == "BGRA":
        alpha = pixels[:, :, 3].astype(np.uint16)
        grey = ((grey.astype(np.uint16) * alpha + 255 * (255 - alpha)) // 255).astype(np.uint8)
    return grey


def stored_page_texts(document: pdfium.PdfDocument, decoder: Decoder) -> list[list[str]]:
    """QR texts in each page's stored images, page by page (which pages carry which badge)."""
    return [
        list(
            dict.fromkeys(
                text
                for pixels in _stored_images(document, index)
                for text in _decode_stored_image(pixels, decoder)
            )
        )
        for index in range(len(document))
    ]


def render_grey(page: pdfium.PdfPage, dpi: float) -> np.ndarray | None:
    """The page rendered in grey at ``dpi`` (coarser for a poster), under the caller's lock;
    None when pdfium cannot render it."""
    try:
        width, height = page.get_size()
        scale = min(dpi / 72, (MAX_RENDER_PIXELS / max(width * height, 1)) ** 0.5)
        return _copied(page.render(scale=scale, grayscale=True)).pixels
    except pdfium.PdfiumError as exc:
        _log.debug("page not rendered: %s", type(exc).__name__)
        return None


def rendered_page_texts(document: pdfium.PdfDocument, decoder: Decoder) -> list[str]:
    """QR texts on the first pages rendered at 300 dpi (vector QRs, unusual image encodings)."""
    texts: list[str] = []
    for index in range(min(len(document), MAX_RENDERED_PAGES)):
        with open_page(document, index) as page:
            if page is None:
                continue
            try:
                width, height = page.get_size()
                scale = min(RENDER_DPI / 72, (MAX_RENDER_PIXELS / max(width * height, 1)) ** 0.5)
                pixels = _copied(page.render(scale=scale, grayscale=True)).pixels
            except pdfium.PdfiumError as exc:
                _log.debug("page %d not rendered: %s", index, type(exc).__name__)
                continue
        texts.extend(decoder.decode(pixels))
    return list(dict.fromkeys(texts))
