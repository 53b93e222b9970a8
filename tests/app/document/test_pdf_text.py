"""What a person sees on a text PDF's page (PROTOCOL §13): white text, invisible text (render
mode 3), text outside the crop box and text under a later image or filled box do not count;
what is drawn over them does. Real PDFs made with reportlab and pikepdf."""

from __future__ import annotations

import io

import pikepdf
import pypdfium2 as pdfium
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen.canvas import Canvas

from app.document.pdf_text import visible_words
from testbed.payslip_pages import Shown, image_only_pdf, label_list


def _words(pdf: bytes) -> list[str] | None:
    """The visible words' texts, or None for a scanned page."""
    document = pdfium.PdfDocument(pdf)
    try:
        page = document[0]
        try:
            words = visible_words(page)
        finally:
            page.close()
    finally:
        document.close()
    return None if words.scanned else [w.text for w in words.words]


def _page_with_hidden_text() -> bytes:
    buffer = io.BytesIO()
    c = Canvas(buffer, pagesize=A4)
    c.setFont("Helvetica", 10)
    c.drawString(60, 700, "Shown 1,111.11")
    c.setFillColorRGB(1, 1, 1)
    c.drawString(60, 680, "White 2,222.22")
    c.setFillColorRGB(0, 0, 0)
    c.saveState()  # the render mode is graphics state: it outlives the text object
    text = c.beginText(60, 660)
    text.setTextRenderMode(3)
    text.textLine("Invisible 3,333.33")
    c.drawText(text)
    c.restoreState()
    c.drawString(60, 640, "Covered 4,444.44")
    c.drawImage(ImageReader(Image.new("RGB", (20, 5), "white")), 55, 635, 150, 16)
    c.drawString(60, 620, "Boxed 5,555.55")
    c.setFillColorRGB(0.9, 0.9, 0.2)
    c.rect(55, 615, 150, 16, stroke=0, fill=1)
    c.setFillColorRGB(0, 0, 0)
    c.drawString(60, 620, "Over 6,666.66")
    c.drawString(60, 40, "Cropped 7,777.77")
    c.rect(300, 400, 200, 100, stroke=1, fill=0)  # a frame drawn later hides nothing
    c.save()
    with pikepdf.open(io.BytesIO(buffer.getvalue())) as doc:
        doc.pages[0].obj["/CropBox"] = pikepdf.Array([0, 100, 595, 842])
        out = io.BytesIO()
        doc.save(out)
    return out.getvalue()


def test_only_what_a_person_sees_counts() -> None:
    words = _words(_page_with_hidden_text())
    assert words == ["Shown", "1,111.11", "Over", "6,666.66"]


def test_a_stamped_text_page_reads_in_order_and_a_scan_asks_for_ocr() -> None:
    pdf, _ = label_list(Shown())
    words = _words(pdf)
    assert words is not None
    assert words[words.index("Net") : words.index("Net") + 4] == ["Net", "Pay:", "3,064.15", "AUD"]
    assert _words(image_only_pdf(pdf, dpi=72)) is None


def _form_page(*, text_in_form: bool) -> bytes:
    """Text and a white box over it, one of them drawn inside a form XObject moved 400 pt up
    the page (its own coordinates are not the page's)."""
    buffer = io.BytesIO()
    c = Canvas(buffer, pagesize=(612, 792))
    if text_in_form:
        c.beginForm("genuine", lowerx=0, lowery=0, upperx=612, uppery=792)
        c.setFont("Helvetica", 12)
        c.drawString(100, 300, "Net Pay: 4,280.90")
        c.endForm()
        c.saveState()
        c.translate(0, 400)
        c.doForm("genuine")
        c.restoreState()
        c.setFillColorRGB(1, 1, 1)
        c.rect(90, 690, 200, 30, stroke=0, fill=1)  # on the page, over the text at y=700
    else:
        c.setFont("Helvetica", 12)
        c.drawString(100, 700, "Net Pay: 4,280.90")
        c.beginForm("box", lowerx=0, lowery=0, upperx=612, uppery=792)
        c.setFillColorRGB(1, 1, 1)
        c.rect(90, 290, 200, 30, stroke=0, fill=1)
        c.endForm()
        c.saveState()
        c.translate(0, 400)
        c.doForm("box")  # the box lands at y=690..720, over the text
        c.restoreState()
    c.setFillColorRGB(0, 0, 0)
    c.drawString(100, 100, "Shown 1,111.11")
    c.showPage()
    c.save()
    return buffer.getvalue()


def test_what_a_moved_form_hides_or_holds_is_placed_on_the_page() -> None:
    assert _words(_form_page(text_in_form=True)) == ["Shown", "1,111.11"]
    assert _words(_form_page(text_in_form=False)) == ["Shown", "1,111.11"]


def test_a_cover_with_no_place_hides_nothing_and_the_page_is_still_read() -> None:
    """A path under a matrix that overflows has NaN bounds: it is passed over, as the plain
    comparison did, instead of failing the whole page."""
    page, _ = label_list(Shown())
    stream = b"q 1 1 1 rg " + b"1000000 0 0 1000000 0 0 cm " * 7 + b"0 0 1 1 re f Q"
    with pikepdf.open(io.BytesIO(page)) as document:
        document.pages[0].contents_add(pikepdf.Stream(document, stream), prepend=False)
        out = io.BytesIO()
        document.save(out)
    words = _words(out.getvalue())
    assert words is not None and len(words) == len(_words(page) or [])
