"""The applicant check's verification record: one PDF for the set, each payslip's receipt on it.

The single check's record (:mod:`app.ui.records.record_pdf`) proves what one check said; a lender
who decided on an applicant's payslips files one record for the decision. It holds the set's verdict
(its colour and words), every problem in one sentence, the income the set proves and the applicant's
name if one was given, then one block per document: its verdict, reference, issuer, period and
amounts, and its signed receipt as a QR code and as text. It spans as many pages as it needs (A4, or
Letter where the locale measures in US units), a block never split over two.

What each block says of a payslip comes from its receipt's signed claims (as on the single
record), so a block and its QR code cannot say different things; a NOT VERIFIED block shows no
figures and no employee name. A block also states the document check of its page (PROTOCOL §13):
an altered copy's block says NOT VERIFIED and names only the changed fields, registered and
shown, though its receipt says VERIFIED. A document with no verdict (no payslip code, or not
checked) has no receipt and says so. The set's verdict, problems and income are the desk's own
working from those checks; the receipts are what anyone can check later.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPageSize, QPainter, QPdfWriter

from app.applicant.documents import Document
from app.applicant.report import SET_WORDS, income_lines
from app.applicant.rules import SetCheck
from app.applicant.set_receipts import DocumentReceipt
from app.document.record_words import is_altered, record_rows
from app.receipts.check import verdict_words
from app.ui.records.record_pdf import (
    CHECK_IT,
    _draw_qr,
    _font,
    _mm,
    made_line,
    record_lines,
    record_painter,
)
from app.ui.widgets.style import INK, MUTED, PALETTES, VERDICT_TONES
from app.verify.verdicts import HEADLINES
from service.protocol.vocabulary import Verdict

QR_MM = 55
TEXT_CHUNK = 118
"""Receipt characters per printed line under a block (monospace, full width)."""
_ALIGN_WRAP = Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap


class _Pages:
    """A painter on a PDF writer that knows where the next line goes and turns the page."""

    def __init__(self, writer: QPdfWriter, painter: QPainter) -> None:
        self.writer = writer
        self.painter = painter
        self.width = float(writer.width())
        self.height = float(writer.height())
        self.y = 0.0

    def room_for(self, height: float) -> None:
        if self.y > 0 and self.y + height > self.height:
            self.writer.newPage()
            self.y = 0.0

    def text_height(self, text: str, points: float, width: float, bold: bool = False) -> float:
        self.painter.setFont(_font(points, bold=bold))
        rect = self.painter.boundingRect(QRectF(0, 0, width, self.height), _ALIGN_WRAP, text)
        return rect.height()

    def line(
        self,
        text: str,
        points: float = 10,
        *,
        bold: bool = False,
        colour: str = INK,
        left: float = 0.0,
        width: float | None = None,
        after: float = 1.5,
    ) -> None:
        """Wrapped text at the current place; the page turns first if it does not fit."""
        room = (width or self.width) - left
        height = self.text_height(text, points, room, bold)
        self.room_for(height)
        self.painter.setFont(_font(points, bold=bold))
        self.painter.setPen(QColor(colour))
        self.painter.drawText(QRectF(left, self.y, room, height), _ALIGN_WRAP, text)
        self.y += height + _mm(after)


def write_set_record(
    path: str | Path,
    check: SetCheck,
    receipts: Sequence[DocumentReceipt],
    desk: str,
    applicant_name: str | None = None,
    page: QPageSize.PageSizeId | None = None,
) -> None:
    """Write the set's record PDF; ``receipts`` are the documents' receipts (by position)."""
    with record_painter(path, "Applicant verification record", page) as (writer, painter):
        pages = _Pages(writer, painter)
        _draw_summary(pages, check, desk, applicant_name)
        by_position = {r.position: r for r in receipts}
        for position, doc in enumerate(check.documents):
            _draw_document(pages, position, doc, by_position.get(position))
        _draw_footer(pages, receipts)


def _draw_summary(pages: _Pages, check: SetCheck, desk: str, applicant: str | None) -> None:
    now = datetime.now().astimezone().strftime("%-d %b %Y %H:%M %Z").strip()
    pages.line("Applicant verification record", 18, bold=True, after=2)
    pages.line(made_line(desk, now), 9, colour=MUTED, after=3)
    if applicant:
        pages.line(f"Applicant: {applicant}", 12, bold=True, after=3)
    words, instruction = SET_WORDS[check.verdict]
    colour = QColor(PALETTES[VERDICT_TONES[check.verdict]].strong)
    text = f"{words} {instruction}"
    box_height = _mm(14) + pages.text_height(text, 10, pages.width - _mm(12)) + _mm(4)
    pages.room_for(box_height)
    painter = pages.painter
    box = QRectF(0, pages.y, pages.width, box_height)
    painter.fillRect(box, colour)
    painter.setPen(QColor("#ffffff"))
    painter.setFont(_font(22, bold=True))
    headline_area = box.adjusted(_mm(6), _mm(2), -_mm(6), 0)
    painter.drawText(headline_area, Qt.AlignmentFlag.AlignLeft, HEADLINES[check.verdict])
    painter.setFont(_font(10))
    painter.drawText(box.adjusted(_mm(6), _mm(14), -_mm(6), -_mm(2)), _ALIGN_WRAP, text)
    pages.y += box_height + _mm(5)

    count = len(check.documents)
    pages.line(f"Payslips checked: {count}", 11, bold=True, after=2)
    if check.problems:
        pages.line("Problems", 11, bold=True, after=1)
        for problem in check.problems:
            pages.line(f"•  {problem.message}", 10, left=_mm(3))
    else:
        pages.line("Problems: none.", 10)
    pages.y += _mm(2)
    pages.line("Income (from the VERIFIED payslips only)", 11, bold=True, after=1)
    income = check.income.income
    if income is None:
        pages.line(f"None proved: {check.income.why_none}", 10, left=_mm(3))
    else:
        for text in income_lines(income):
            pages.line(text, 10, left=_mm(3))
    pages.y += _mm(4)


def _document_facts(doc: Document, receipt: DocumentReceipt | None) -> tuple[str, list[str]]:
    """The block's heading and its facts: from the receipt's claims when there is one."""
    if receipt is None:
        if doc.verdict is None:
            return f"{doc.label}: no payslip code", [
                "No payslip code was found in it; nothing was checked, so there is no receipt."
            ]
        return f"{doc.label}: {HEADLINES[doc.verdict]}", [
            "It could not be checked, so there is no receipt for it."
        ]
    claims = receipt.claims
    headline, _ = verdict_words(claims)
    altered = is_altered(doc.document)
    if altered:  # the receipt says VERIFIED; the page was altered (PROTOCOL §13)
        headline = HEADLINES[Verdict.NOT_VERIFIED]
    rows = [*record_lines(claims, altered), *record_rows(doc.document)]
    return f"{doc.label}: {headline}", [f"{label}: {value}" for label, value in rows]


def _draw_document(
    pages: _Pages, position: int, doc: Document, receipt: DocumentReceipt | None
) -> None:
    heading, facts = _document_facts(doc, receipt)
    heading = f"#{position + 1} {heading}"  # as the problems name it
    facts_width = pages.width - (_mm(QR_MM + 5) if receipt else 0)
    facts_height = pages.text_height(heading, 11, facts_width, True) + _mm(2)
    facts_height += sum(pages.text_height(f, 8.5, facts_width) + _mm(0.8) for f in facts)
    chunks: list[str] = []
    text_height = 0.0
    if receipt is not None:
        text = receipt.receipt
        chunks = [text[i : i + TEXT_CHUNK] for i in range(0, len(text), TEXT_CHUNK)]
        text_height = len(chunks) * _mm(2.6) + _mm(6)
    qr = _mm(QR_MM) if receipt else 0.0
    block = max(facts_height, qr) + text_height + _mm(6)
    pages.room_for(block)
    painter = pages.painter
    top = pages.y
    painter.fillRect(QRectF(0, top, pages.width, _mm(0.4)), QColor(MUTED))
    pages.y += _mm(2)
    verdict = doc.verdict or Verdict.CANNOT_VERIFY
    if receipt is not None:
        good = receipt.claims.verified and not is_altered(doc.document)
        verdict = Verdict.VERIFIED if good else Verdict.NOT_VERIFIED
    pages.line(
        heading,
        11,
        bold=True,
        colour=PALETTES[VERDICT_TONES[verdict]].strong if doc.verdict else INK,
        width=facts_width,
    )
    for fact in facts:
        pages.line(fact, 8.5, width=facts_width, after=0.8)
    if receipt is None:
        pages.y += _mm(4)
        return
    _draw_qr(painter, receipt.receipt, QRectF(pages.width - qr, top + _mm(2), qr, qr))
    pages.y = max(pages.y, top + _mm(2) + qr) + _mm(1)
    painter.setFont(_font(7, bold=True))
    painter.setPen(QColor(INK))
    painter.drawText(
        QRectF(0, pages.y, pages.width, _mm(5)),
        Qt.AlignmentFlag.AlignLeft,
        "Signed receipt of this payslip's check (scan the code, or check this text):",
    )
    pages.y += _mm(4)
    painter.setFont(_font(6, mono=True))
    painter.drawText(
        QRectF(0, pages.y, pages.width, len(chunks) * _mm(2.6) + _mm(2)),
        Qt.AlignmentFlag.AlignLeft,
        "\n".join(chunks),
    )
    pages.y += len(chunks) * _mm(2.6) + _mm(5)


def _draw_footer(pages: _Pages, receipts: Sequence[DocumentReceipt]) -> None:
    service = receipts[0].claims.iss if receipts else "the payslip verification service"
    pages.y += _mm(2)
    pages.line(
        f"Each receipt on this record is signed by the payslip verification service at {service} "
        f"and says what that service found for one payslip. {CHECK_IT} The set's verdict, "
        "problems and income above are the desk's working from those checks. The service keeps "
        "no copy of this record.",
        8,
        colour=MUTED,
    )
