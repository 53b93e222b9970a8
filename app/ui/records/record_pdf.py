"""The verification record: one printable page a lender files, holding a signed receipt.

Everything on the page comes from the receipt's claims (what the service signed), so the page
and its QR code can never say different things. The verdict is shown in its colour *and* words
(a black-and-white printout still reads); the payslip figures and the employee's name only for a
VERIFIED check (a NOT VERIFIED record holds no figures, as the desk's screen shows none). What
the desk's document check found of the page is stated too (PROTOCOL §13): an altered copy's
record says NOT VERIFIED and names the changed fields only, though its receipt says VERIFIED. The
receipt itself is printed as a QR code (what `python -m app receipt check` and the verify screen
read back) and as text (typed in by hand, or copied, if the QR is ever damaged).

Drawn with Qt's own PDF writer (vector text and QR modules); A4, or Letter where the locale
measures in US units. No window is needed: it runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import segno
from PySide6.QtCore import QLocale, QMarginsF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
)

from app.document.compare import DocumentCheck
from app.document.record_words import ALTERED_WORDS, is_altered, record_rows
from app.receipts.check import claim_lines, made_at, verdict_words
from app.ui.widgets.style import INK, MUTED, PALETTES, VERDICT_TONES
from app.verify.verdicts import HEADLINES
from service.protocol.schemas import ReceiptClaims
from service.protocol.vocabulary import Verdict

DPI = 300
TEXT_CHUNK = 68
"""Receipt characters per printed line (monospace)."""


def page_size_for(locale: QLocale | None = None) -> QPageSize.PageSizeId:
    """Letter where the locale measures in US units (US, Canada's English...), else A4."""
    system = (locale or QLocale.system()).measurementSystem()
    if system == QLocale.MeasurementSystem.ImperialUSSystem:
        return QPageSize.PageSizeId.Letter
    return QPageSize.PageSizeId.A4


def desk_name(settings_extra: dict[str, object] | None = None) -> str:
    """This desk's name as its office set it (`desk_name` in the settings), else "".

    Not the computer's host name: "Made at desk vm" tells a reader of the record nothing, and
    names a machine of the office's network on paper that leaves it (issue 35)."""
    named = (settings_extra or {}).get("desk_name")
    return str(named).strip() if named else ""


def made_line(desk: str, when: str) -> str:
    """The line under a record's title: where (when the desk has a name) and when."""
    return f"Made at {desk} on {when}" if desk else f"Made on {when}"


CHECK_IT = (
    "Anyone can check it at any time, without trusting this paper: scan this page with the "
    "Verify screen of Payslip Verify, which checks the signature against the service's "
    "published keys and says whether the record is genuine or was altered."
)
"""How a reader checks a record, in the words of someone who has the app, not a developer's."""


def record_lines(claims: ReceiptClaims, altered: bool = False) -> list[tuple[str, str]]:
    """The labelled facts on the page: no figures or name unless the check said VERIFIED (and
    the page was not ``altered``: then only the changed fields, with :func:`record_rows`)."""
    hidden = (
        set()
        if claims.verified and not altered
        else {"Pay period", "Payment date", "Gross pay", "Net pay", "Employee"}
    )
    return [(label, value) for label, value in claim_lines(claims) if label not in hidden]


@contextmanager
def record_painter(
    path: str | Path, title: str, page: QPageSize.PageSizeId | None = None
) -> Iterator[tuple[QPdfWriter, QPainter]]:
    """A PDF writer on A4 or Letter (by locale, unless `page`) with 15 mm margins, and a painter
    on it; the file is finished when the block ends. One set-up for every record PDF."""
    writer = QPdfWriter(str(path))
    writer.setResolution(DPI)
    writer.setTitle(title)
    writer.setCreator("Payslip Verify")
    writer.setPageLayout(
        QPageLayout(
            QPageSize(page or page_size_for()),
            QPageLayout.Orientation.Portrait,
            QMarginsF(15, 15, 15, 15),
            QPageLayout.Unit.Millimeter,
        )
    )
    painter = QPainter()
    if not painter.begin(writer):
        raise OSError(f"{Path(path).name} cannot be written")
    try:
        yield writer, painter
    finally:
        painter.end()


def write_record(
    path: str | Path,
    receipt: str,
    claims: ReceiptClaims,
    desk: str,
    page: QPageSize.PageSizeId | None = None,
    document: DocumentCheck | None = None,
    code_only: bool = False,
) -> None:
    """Write the one-page record PDF for `receipt` (whose decoded claims are `claims`), with
    what the desk's document check found (``code_only``: a code without a page)."""
    with record_painter(path, "Payslip verification record", page) as (writer, painter):
        _draw(painter, writer.width(), receipt, claims, desk, (document, code_only))


def _mm(value: float) -> float:
    return value * DPI / 25.4


def _font(points: float, bold: bool = False, mono: bool = False) -> QFont:
    font = QFont("DejaVu Sans Mono" if mono else "DejaVu Sans")
    if mono:
        font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSizeF(points)
    font.setBold(bold)
    return font


def _draw(
    painter: QPainter,
    width: int,
    receipt: str,
    claims: ReceiptClaims,
    desk: str,
    checked: tuple[DocumentCheck | None, bool],
) -> None:
    document, code_only = checked
    altered = is_altered(document)
    y = 0.0
    painter.setPen(QColor(INK))
    painter.setFont(_font(18, bold=True))
    painter.drawText(
        QRectF(0, y, width, _mm(10)), Qt.AlignmentFlag.AlignLeft, "Payslip verification record"
    )
    y += _mm(11)
    painter.setFont(_font(9))
    painter.setPen(QColor(MUTED))
    painter.drawText(
        QRectF(0, y, width, _mm(6)),
        Qt.AlignmentFlag.AlignLeft,
        made_line(desk, made_at(claims)),
    )
    y += _mm(9)

    headline, words = verdict_words(claims)
    verdict = Verdict.VERIFIED if claims.verified and not altered else Verdict.NOT_VERIFIED
    if altered:
        headline, words = HEADLINES[verdict], ALTERED_WORDS
    colour = QColor(PALETTES[VERDICT_TONES[verdict]].strong)
    box = QRectF(0, y, width, _mm(30))
    painter.fillRect(box, colour)
    painter.setPen(QColor("#ffffff"))
    painter.setFont(_font(26, bold=True))
    painter.drawText(
        box.adjusted(_mm(6), _mm(3), -_mm(6), -_mm(14)),
        Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
        headline,
    )
    painter.setFont(_font(10))
    painter.drawText(
        box.adjusted(_mm(6), _mm(17), -_mm(6), -_mm(2)),
        Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap,
        words,
    )
    y += box.height() + _mm(7)

    label_width = _mm(40)
    for label, value in [
        *([("Desk", desk)] if desk else []),
        *[(name, text) for name, text in record_lines(claims, altered) if name != "Verdict"],
        *record_rows(document, code_only),
    ]:
        painter.setFont(_font(10, bold=True))
        painter.setPen(QColor(MUTED))
        painter.drawText(QRectF(0, y, label_width, _mm(6)), Qt.AlignmentFlag.AlignLeft, label)
        painter.setFont(_font(10.5, bold=label in ("Employee", "Net pay")))
        painter.setPen(QColor(INK))
        rect = painter.boundingRect(
            QRectF(label_width, y, width - label_width, _mm(20)),
            Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap,
            value,
        )
        painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap, value)
        y += max(_mm(7), rect.height() + _mm(1.5))

    y += _mm(4)
    qr_size = _mm(70)
    _draw_qr(painter, receipt, QRectF(0, y, qr_size, qr_size))
    text_left = qr_size + _mm(8)
    painter.setFont(_font(8, bold=True))
    painter.setPen(QColor(INK))
    painter.drawText(
        QRectF(text_left, y, width - text_left, _mm(6)),
        Qt.AlignmentFlag.AlignLeft,
        "Signed receipt (scan the code, or check the text below)",
    )
    painter.setFont(_font(6.5, mono=True))
    chunks = [receipt[i : i + TEXT_CHUNK] for i in range(0, len(receipt), TEXT_CHUNK)]
    painter.drawText(
        QRectF(text_left, y + _mm(6), width - text_left, qr_size),
        Qt.AlignmentFlag.AlignLeft,
        "\n".join(chunks),
    )
    y += qr_size + _mm(6)
    painter.setFont(_font(8))
    painter.setPen(QColor(MUTED))
    painter.drawText(
        QRectF(0, y, width, _mm(30)),
        Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap,
        "This record holds a receipt signed by the payslip verification service at "
        f"{claims.iss}. {CHECK_IT} The service keeps no copy of this record.",
    )


def _draw_qr(painter: QPainter, text: str, area: QRectF) -> None:
    """The receipt as a QR code, drawn module by module (vector, sharp at any print size)."""
    symbol = segno.make(text, error="m", micro=False)
    quiet = 4
    matrix = list(symbol.matrix)
    count = len(matrix) + 2 * quiet
    module = area.width() / count
    painter.fillRect(area, QColor("#ffffff"))
    black = QColor("#000000")
    for row, cells in enumerate(matrix):
        for column, dark in enumerate(cells):
            if dark:
                painter.fillRect(
                    QRectF(
                        area.left() + (column + quiet) * module,
                        area.top() + (row + quiet) * module,
                        module + 0.5,
                        module + 0.5,
                    ),
                    black,
                )
