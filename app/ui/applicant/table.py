"""The applicant check's list of payslips: one row per document, numbered as the problems name
them ("#2 march.pdf"), tinted in its verdict's colours, with the employee's name and employer.

The table must fit the narrowest window the desk runs in (910 logical pixels wide: 1366x768 at
150 %) without widening it, and without a sideways scroll bar where the words can wrap: each
column gets the width of its contents when they fit; when they do not, the columns whose words
can wrap (payslip, name, employer, period, amounts) give up width in proportion to what they
have to spare, and their rows grow taller instead (issue 35). Every text is a table item (never
rich text): payslip fields come from an issuer.
"""

from __future__ import annotations

from datetime import date

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from app.applicant.documents import Document
from app.document.money import format_minor
from app.ui.widgets.style import PALETTES, VERDICT_TONES
from app.verify.presentation import long_date
from app.verify.verdicts import HEADLINES
from service.protocol.vocabulary import Verdict

COLUMNS = ("#", "Payslip", "Verdict", "Name", "Employer", "Paid", "Pay period", "Gross", "Net")
VERDICT_COLUMN = 2
MONEY_COLUMNS = (7, 8)
WRAPPING_COLUMNS = (1, 2, 3, 4, 5, 6, 7, 8)
"""Columns that give up width when the window is narrow; their words wrap onto more lines."""
CELL_PADDING = 16
"""Pixels a cell adds around its text (the item's margins and the grid line)."""
Row = tuple[list[str], Verdict | None]
"""One table row: its cells and the verdict it is coloured by (None: not yet, or no code)."""


def period_text(start: date | None, end: date | None) -> str:
    """ "1 Oct – 14 Oct 2026": the year once when both ends share it."""
    if end is None:
        return long_date(start.isoformat()) if start else ""
    last = long_date(end.isoformat())
    if start is None:
        return last
    first = start.strftime("%-d %b") if start.year == end.year else long_date(start.isoformat())
    return f"{first} – {last}"


def document_cells(doc: Document, position: int) -> list[str]:
    """A document's cells; only a VERIFIED one has figures, a name and an employer."""
    verdict = HEADLINES[doc.verdict] if doc.verdict else "NO PAYSLIP CODE"
    p = doc.payslip
    if p is None:
        return [f"#{position}", doc.label, verdict, "", "", "", "", "", ""]
    money = [
        format_minor(v, p.currency) if v is not None else "" for v in (p.gross_minor, p.net_minor)
    ]
    paid = long_date(p.payment_date.isoformat()) if p.payment_date else ""
    period = period_text(p.period_start, p.period_end)
    who = p.employee_name or ""
    return [f"#{position}", doc.label, verdict, who, p.issuer_name, paid, period, *money]


def checking_cells(position: int, label: str) -> list[str]:
    return [f"#{position}", label, "Checking…", *[""] * (len(COLUMNS) - 3)]


def share_widths(natural: list[int], least: list[int], wraps: list[bool], room: int) -> list[int]:
    """Column widths for ``room`` pixels: the natural ones when they fit; else the wrapping
    columns shrink, each in proportion to its slack (natural - least), never below ``least``."""
    if sum(natural) <= room:
        return natural
    fixed = sum(n for n, w in zip(natural, wraps, strict=True) if not w)
    slack = sum(n - m for n, m, w in zip(natural, least, wraps, strict=True) if w)
    floor = sum(m for m, w in zip(least, wraps, strict=True) if w)
    spare = max(0, room - fixed - floor)
    out = []
    for n, m, w in zip(natural, least, wraps, strict=True):
        out.append(m + (n - m) * spare // slack if w and slack else n)
    return out


class DocumentTable(QTableWidget):
    """One row per payslip in input order; rows still being checked say so. A row is tinted in
    its verdict's colours, as the single check's card is; the verdict cell is in its strong
    colour and bold, so the colour is never the only cue."""

    def __init__(self) -> None:
        super().__init__(0, len(COLUMNS))
        self.setObjectName("applicantDocuments")
        self.setAccessibleName("Payslips of this applicant")
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setWordWrap(True)
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.verticalHeader().setVisible(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        header.setStretchLastSection(False)

    def show_rows(self, rows: list[Row]) -> None:
        self.setRowCount(len(rows))
        for r, (cells, verdict) in enumerate(rows):
            palette = PALETTES[VERDICT_TONES[verdict]] if verdict is not None else None
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in MONEY_COLUMNS:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if palette is not None:
                    item.setBackground(QColor(palette.tint))
                    if c == VERDICT_COLUMN:
                        item.setForeground(QColor(palette.strong))
                        font = item.font()
                        font.setBold(True)
                        item.setFont(font)
                self.setItem(r, c, item)
        self.fit()

    def fit(self) -> None:
        """Share the width among the columns, then make rows as tall as their wrapped words and
        the table as tall as its rows (the page scrolls, not the table)."""
        header = self.horizontalHeader()
        count = self.columnCount()
        natural = [
            max(self.sizeHintForColumn(c), header.sectionSizeHint(c)) + 2 for c in range(count)
        ]
        wraps = [c in WRAPPING_COLUMNS for c in range(count)]
        least = [
            min(n, self._longest_word(c)) if w else n
            for c, (n, w) in enumerate(zip(natural, wraps, strict=True))
        ]
        room = self.viewport().width()
        widths = share_widths(natural, least, wraps, room)
        if sum(widths) < room:  # room to spare goes to the payslip's name
            widths[1] += room - sum(widths)
        for c, width in enumerate(widths):
            header.resizeSection(c, width)
        self.resizeRowsToContents()
        rows = sum(self.rowHeight(r) for r in range(self.rowCount()))
        scroll = self.horizontalScrollBar()
        extra = scroll.sizeHint().height() if sum(widths) > room else 0
        self.setFixedHeight(header.height() + rows + extra + 2 * self.frameWidth())

    def _longest_word(self, column: int) -> int:
        """The widest word of a column, in its own font (words do not break: a file name stays
        whole; "NOT VERIFIED" is bold)."""
        header = self.horizontalHeader()
        widths = [header.sectionSizeHint(column) - CELL_PADDING]  # the header does not wrap
        for row in range(self.rowCount()):
            item = self.item(row, column)
            if item is not None:
                metrics = QFontMetrics(item.font())
                widths += [metrics.horizontalAdvance(word) for word in item.text().split()]
        return max(widths) + CELL_PADDING

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit()
