"""Payslip pages in several layouts for the document check's tests and bench (PROTOCOL §13):
reportlab pages showing chosen values, edits as a fraudster makes them (a white box and new
text drawn over a figure with pikepdf, a page rendered to an image-only PDF or a PNG). Synthetic
data only; every page is made in memory."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, replace

import pikepdf
import pypdfium2 as pdfium
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

FONTS = ("Helvetica", "Times-Roman", "Courier", "Helvetica-Bold")


@dataclass(frozen=True)
class Shown:
    """What a page prints (text as printed)."""

    name: str = "Jane Smith"
    gross: str = "$3,846.15"
    tax: str = "782.00"
    net: str = "3,064.15 AUD"
    paid: str = "13/11/2026"
    start: str = "30/10/2026"
    end: str = "12/11/2026"
    font: str = "Helvetica"

    def altered(self, **changes: str) -> Shown:
        return replace(self, **changes)


Spot = tuple[float, float, float]
"""Where a value was drawn: x, y (baseline, PDF units) and font size."""


class _Page:
    def __init__(self, shown: Shown) -> None:
        self.buffer = io.BytesIO()
        self.canvas = Canvas(self.buffer, pagesize=A4)
        self.font = shown.font
        self.spots: dict[str, Spot] = {}
        self.canvas.setFont("Helvetica-Bold", 15)
        self.canvas.drawString(50, 790, "Example Employer Pty Ltd")
        self.canvas.setFont(self.font, 10)
        self.canvas.drawString(50, 774, "ABN 51 824 753 556  -  Payslip")

    def text(self, x: float, y: float, value: str, key: str | None = None, size: int = 10) -> None:
        self.canvas.setFont(self.font, size)
        self.canvas.drawString(x, y, value)
        if key:
            self.spots[key] = (x, y, size)

    def next_page(self) -> None:
        self.canvas.showPage()

    def done(self) -> tuple[bytes, dict[str, Spot]]:
        self.canvas.save()
        return self.buffer.getvalue(), self.spots


def label_list(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """Labels with colons in one column, values in the next."""
    p = _Page(s)
    rows = [
        ("Employee:", s.name, "name"),
        ("Position:", "Analyst", None),
        ("Pay Date:", s.paid, "paid"),
        ("Period Start:", s.start, "start"),
        ("Period End:", s.end, "end"),
        ("Gross Pay:", s.gross, "gross"),
        ("Tax Withheld:", s.tax, "tax"),
        ("Net Pay:", s.net, "net"),
    ]
    for n, (label, value, key) in enumerate(rows):
        p.text(60, 720 - 22 * n, label)
        p.text(220, 720 - 22 * n, value, key)
    _earnings(p, 480)
    return p.done()


def inline(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """ "Label: value" in one string."""
    p = _Page(s)
    for n, line in enumerate(
        [
            f"Employee Name: {s.name}",
            f"Payment Date: {s.paid}",
            f"Pay Period: {s.start} to {s.end}",
            f"Gross Earnings: {s.gross}",
            f"PAYG Withholding: {s.tax}",
            f"Net Pay: {s.net}",
        ]
    ):
        p.text(60, 720 - 20 * n, line)
    return p.done()


def headings(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """Rows of column headings with the values below them."""
    p = _Page(s)
    for x, label, value in (
        (60, "Name", s.name),
        (220, "Position", "Analyst"),
        (380, "Pay Date", s.paid),
    ):
        p.text(x, 720, label)
        p.text(x, 704, value)
    for x, label, value, key in (
        (60, "Gross Pay", s.gross, "gross"),
        (220, "Tax", s.tax, "tax"),
        (380, "Net Pay", s.net, "net"),
    ):
        p.text(x, 660, label)
        p.text(x, 644, value, key)
    p.text(60, 610, "Period")
    p.text(140, 610, f"{s.start} - {s.end}")
    return p.done()


def this_pay_ytd(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """A table: description, this pay, year to date; a totals box with the net."""
    p = _Page(s)
    p.text(60, 730, "Employee")
    p.text(160, 730, s.name.upper())
    p.text(60, 714, "Date Paid")
    p.text(160, 714, s.paid)
    for x, head in ((60, "Description"), (260, "This Pay"), (400, "YTD")):
        p.text(x, 680, head)
    for n, (label, value, ytd) in enumerate(
        (("Gross", s.gross, "34,615.35"), ("Tax", s.tax, "7,038.00"), ("Net", s.net, "27,577.35"))
    ):
        p.text(60, 662 - 18 * n, label)
        p.text(260, 662 - 18 * n, value, ("gross", "tax", "net")[n])
        p.text(400, 662 - 18 * n, ytd)
    p.canvas.rect(250, 560, 200, 30)
    p.text(260, 570, "Take Home Pay")
    p.text(380, 570, s.net)
    return p.done()


def two_pages(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """Who and when on page 1, the figures on page 2."""
    p = _Page(s)
    p.text(60, 720, "Employee:")
    p.text(200, 720, s.name)
    p.text(60, 700, "Pay Period:")
    p.text(200, 700, f"{s.start} – {s.end}")
    _earnings(p, 600)
    p.next_page()
    p.text(60, 720, "Gross Wages")
    p.text(250, 720, s.gross)
    p.text(60, 700, "Income Tax")
    p.text(250, 700, s.tax)
    p.text(60, 680, "Amount Paid")
    p.text(250, 680, s.net)
    p.text(60, 660, "Paid On")
    p.text(250, 660, s.paid)
    return p.done()


def unknown_labels(s: Shown) -> tuple[bytes, dict[str, Spot]]:
    """Labels §13 does not know: nothing is compared."""
    p = _Page(s)
    for n, (label, value) in enumerate(
        (("Staff member", s.name), ("Before tax", s.gross), ("Sent to bank", s.net))
    ):
        p.text(60, 720 - 20 * n, label)
        p.text(220, 720 - 20 * n, value)
    return p.done()


def _earnings(p: _Page, top: float) -> None:
    for n in range(6):
        p.text(60, top - 14 * n, f"Ordinary hours {n + 1}")
        p.text(260, top - 14 * n, "38.00")
        p.text(360, top - 14 * n, "45.5000")


LAYOUTS: dict[str, Callable[[Shown], tuple[bytes, dict[str, Spot]]]] = {
    "label_list": label_list,
    "inline": inline,
    "headings": headings,
    "this_pay_ytd": this_pay_ytd,
    "two_pages": two_pages,
    "unknown_labels": unknown_labels,
}


def paint_over(pdf: bytes, spot: Spot, new_text: str, page: int = 0) -> bytes:
    """What a PDF editor does: a white box over the figure at ``spot`` and new text on it, in a
    content stream added after the page's own (the old figure stays in the text layer)."""
    x, y, size = spot
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        target = doc.pages[page]
        font = pikepdf.Dictionary(Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1,
                                  BaseFont=pikepdf.Name.Helvetica)  # fmt: skip
        resources = target.obj.get("/Resources") or pikepdf.Dictionary()
        fonts = resources.get("/Font") or pikepdf.Dictionary()
        fonts["/FEdit"] = doc.make_indirect(font)
        resources["/Font"] = fonts
        target.obj["/Resources"] = resources
        escaped = new_text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = (
            f"q 1 1 1 rg {x - 2} {y - 3} 140 {size + 6} re f Q "
            f"BT /FEdit {size} Tf 0 0 0 rg {x} {y} Td ({escaped}) Tj ET"
        ).encode("latin-1")
        target.contents_add(pikepdf.Stream(doc, stream), prepend=False)
        out = io.BytesIO()
        doc.save(out)
    return out.getvalue()


def rendered_pages(pdf: bytes, dpi: int = 200) -> list[Image.Image]:
    document = pdfium.PdfDocument(pdf)
    try:
        return [page.render(scale=dpi / 72, grayscale=True).to_pil() for page in document]
    finally:
        document.close()


def image_only_pdf(pdf: bytes, dpi: int = 200) -> bytes:
    """The pages rendered and saved as a JPEG-only PDF (a scan)."""
    images = [image.convert("RGB") for image in rendered_pages(pdf, dpi)]
    out = io.BytesIO()
    images[0].save(out, format="PDF", resolution=dpi, save_all=True, append_images=images[1:],
                   quality=85)  # fmt: skip
    return out.getvalue()


def page_png(pdf: bytes, dpi: int = 200) -> bytes:
    out = io.BytesIO()
    rendered_pages(pdf, dpi)[0].save(out, format="PNG")
    return out.getvalue()
