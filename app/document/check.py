"""The document check of one input (PROTOCOL §13): which pages, how they are read, the result.

Pages compared: those of the verified payslip. In a PDF, the page carrying its badge and the
pages after it up to the next page carrying another record's badge (a combined pay-run PDF
holds many people's payslips), at most :data:`MAX_PAGES`; pages before it only when no earlier
page carries a badge. When the code is only in the metadata: the first pages, up to another
record's badge. A page with visible text is read from its text objects (pdf_text.py); a scan,
or a page whose text shows no label with a value but which fills many paths (glyphs drawn as
outlines), is rendered at :data:`OCR_DPI` and OCR'd. An image is compared when it
is a whole page at 150 dpi or more (shorter side >= 1200 px).

Nothing of a page leaves memory. Any failure while reading a page is the check's reason
("no page could be read"), logged by exception type only: a message could quote the page.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

import cv2
import numpy as np

from app.document import ocr
from app.document.compare import (
    NO_PAGE,
    DocumentCheck,
    Page,
    Registered,
    compare,
    not_compared,
    shows_fields,
)
from app.document.covers import TooManyCovers
from app.document.fields import FieldName
from app.document.layout import lines_of
from app.document.money import minor_amount, minor_digits
from app.document.pdf_text import PageTooComplex, visible_words
from app.inputs import pdf_pages
from app.scan.decoders import Decoder, decoder_chain
from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.schemas import VerificationResult

MAX_PAGES = 4
OCR_DPI = 200
MIN_PAGE_SIDE = 1200
"""An image's shorter side, in pixels, from which it is a whole page at 150 dpi or more."""
MAX_OCR_SIDE = 2600
"""A larger image (a 600 dpi scan) is scaled down to about 300 dpi first: no better, 4x slower."""
MIN_WORDS = 3
"""A PDF page with fewer visible words than this shows nothing to compare (a blank page)."""
OUTLINES = 20
"""A text page with no label and a value, but this many filled paths or more, may draw its
glyphs as outlines: it is OCR'd (a blank stamped page, with the badge's caption, is not)."""
NO_OCR = "no page could be read: this computer has no OCR engine for page images"
SMALL_IMAGE = "the image is not a whole page at 150 dpi or more"
UNLIKE_A_PAYSLIP = (
    "the page is built unlike any payslip, with far more objects than one has: look at its "
    "figures closely"
)
TEXT_CODE = "only the code was read"
"""A code typed, pasted, scanned or seen by the camera: there is no page to compare."""
_log = logging.getLogger(__name__)


def registered_of(result: VerificationResult) -> Registered:
    non_pii: dict[str, Any] = dict(result.payslip.payslip_non_pii)
    currency = str(non_pii.get("currency", ""))
    money: dict[FieldName, int] = {}
    for field, keys in (("gross", ("gross",)), ("tax", ("paygw", "paye")), ("net", ("net",))):
        amount = next((a for k in keys if (a := minor_amount(non_pii, k)) is not None), None)
        if amount is not None:
            money[field] = amount  # type: ignore[index]
    dates: dict[FieldName, date] = {}
    for key in ("payment_date", "period_start", "period_end"):
        try:
            dates[key] = date.fromisoformat(str(non_pii[key]))
        except (KeyError, ValueError):
            continue
    return Registered(currency, minor_digits(currency), money, dates, result.employee.employee_name)


def check_pdf(
    data: bytes, result: VerificationResult, decoder: Decoder | None = None
) -> DocumentCheck:
    registered = registered_of(result)
    try:
        return _check_pdf(data, result.service_reference, registered, decoder or decoder_chain())
    except (PageTooComplex, TooManyCovers):
        # Said as such: a page padded past every payslip's size may be hiding an edit from
        # the check, so the desk is told to look harder, not that a page was unreadable.
        return not_compared(UNLIKE_A_PAYSLIP, registered)
    except Exception as exc:  # a page pdfium or the OCR engine cannot read: not compared
        _log.warning("document check failed: %s", type(exc).__name__)
        return not_compared(NO_PAGE, registered)


def check_image(data: bytes, result: VerificationResult) -> DocumentCheck:
    registered = registered_of(result)
    try:
        grey = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
        if grey is None:
            return not_compared(NO_PAGE, registered)
        if min(grey.shape[:2]) < MIN_PAGE_SIDE:
            return not_compared(SMALL_IMAGE, registered)
        if not ocr.available():
            return not_compared(NO_OCR, registered)
        page = _ocr_page(grey)
        return compare(registered, [] if page is None else [page])
    except Exception as exc:
        _log.warning("document check failed: %s", type(exc).__name__)
        return not_compared(NO_PAGE, registered)


def _ocr_page(grey: np.ndarray) -> Page | None:
    if grey.ndim == 3:
        grey = grey[:, :, 0]
    shorter = min(grey.shape[:2])
    if shorter > MAX_OCR_SIDE:
        scale = MAX_OCR_SIDE / shorter
        grey = cv2.resize(grey, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    words = ocr.read_words(np.ascontiguousarray(grey))
    return None if words is None else Page(lines_of(words), ocr=True)


def _check_pdf(
    data: bytes, reference: str, registered: Registered, decoder: Decoder
) -> DocumentCheck:
    document = pdf_pages.open_document(data)
    if document is None:
        return not_compared(NO_PAGE, registered)
    try:
        # One page is the payslip's own (the reading found its code); more may be a combined PDF.
        codes = [[]] if len(document) == 1 else pdf_pages.stored_page_texts(document, decoder)
        pages: list[Page] = []
        needed_ocr = False
        for index in pages_of(codes, reference):
            page, wants_ocr = _read_page(document, index)
            needed_ocr = needed_ocr or wants_ocr
            if page is not None:
                pages.append(page)
    finally:
        pdf_pages.close_document(document)
    if not pages and needed_ocr and not ocr.available():
        return not_compared(NO_OCR, registered)
    return compare(registered, pages)


def pages_of(codes: list[list[str]], reference: str) -> list[int]:
    """The indexes of the verified payslip's pages, given each page's QR texts."""
    refs = [{r for r in map(_reference, texts) if r is not None} for texts in codes]
    own = next((i for i, found in enumerate(refs) if reference in found), None)
    if own is None:
        start = 0
    else:
        start = own
        while start > 0 and own - start < MAX_PAGES - 1 and not any(refs[:start]):
            start -= 1
    chosen: list[int] = []
    for index in range(start, len(codes)):
        if len(chosen) == MAX_PAGES or refs[index] - {reference}:
            break
        chosen.append(index)
    return chosen


def _reference(text: str) -> str | None:
    try:
        return parse_barcode(text).service_reference
    except BarcodeTextError:
        return None


def _read_page(document: Any, index: int) -> tuple[Page | None, bool]:
    """The page read from its visible text, else by OCR; and whether it needed OCR."""
    with pdf_pages.open_page(document, index) as page:
        if page is None:
            return None, False
        seen = visible_words(page)
        text = Page(lines_of(seen.words))
        # The cheap test first: shows_fields reads every label, and compare() reads them again.
        if not seen.scanned and (seen.filled_paths < OUTLINES or shows_fields(text)):
            return (text if len(seen.words) >= MIN_WORDS else None), False
        if not ocr.available():
            return (None if seen.scanned else text), True
        grey = pdf_pages.render_grey(page, OCR_DPI) if ocr.available() else None
    if grey is None:
        return None, True
    return _ocr_page(grey), True
