"""The pay-run tab's "Columns" panel, shown when the chosen file is a payroll system's export.

On the left, every header of the export beside the field it will fill (a picker per header:
the suggested field, another one, or "Ignore this column"); the country (which decides the
format) and how the export writes dates. On the right, the first rows as they will be
registered, with each problem in plain words, refreshed whenever a picker changes. A header
nobody has placed yet is shown in the preview as the one thing to do.

When the same set of headers was confirmed before (a run was checked or registered with it),
the panel opens on the preview with the columns folded away: next fortnight's export needs no
mapping at all. The work (reading headers, the preview) runs on the tab's worker threads.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.issuer.export.field_words import COMMON_FIELDS
from app.issuer.export.mapping import DATE_FORMATS, IGNORE, ExportMapping, MappingError
from app.issuer.export.preview import ExportLook, PreviewRow, mapping_from
from app.issuer.fields import field_index
from app.ui.widgets.staff_style import label, section, set_status
from service.protocol.vocabulary import PayslipSchema

SCHEMAS = (
    ("Australia", PayslipSchema.AU_V2),
    ("New Zealand", PayslipSchema.NZ_V2),
    ("Australia, whole cents (older format)", PayslipSchema.AU_V1),
    ("New Zealand, whole cents (older format)", PayslipSchema.NZ_V1),
)
DATE_EXAMPLES = {
    "DD/MM/YYYY": "13/11/2026",
    "YYYY-MM-DD": "2026-11-13",
    "MM/DD/YYYY": "11/13/2026",
    "D MMM YYYY": "13 Nov 2026",
}
NOT_PLACED = "— choose a field —"
_AU_ONLY = {"pii.bsb", "pii.employer_identity", "paygw", "ytd_paygw"}
_NZ_ONLY = {"pii.ird_number", "pii.employer_name", "paye", "ytd_paye"}


def field_choices(schema: str) -> list[tuple[str, str]]:
    """(target, words) for a schema: the common fields first, then its other simple fields."""
    nz = schema.startswith("nz.")
    skip = _AU_ONLY if nz else _NZ_ONLY
    choices = [(t, words) for t, words in COMMON_FIELDS if t not in skip]
    taken = {t for t, _ in choices}
    for path, spec in field_index(schema).items():
        if "." in path or spec.kind in ("object", "array"):
            continue
        target = path.removesuffix("_cents") if spec.kind == "cents" else path
        if target not in taken:
            taken.add(target)
            choices.append((target, spec.label))
    return choices


def _grouped(amount: str) -> str:
    """`3846.15` -> `3,846.15` (digits as registered, grouped for reading)."""
    whole, dot, part = amount.partition(".")
    sign = "-" if whole.startswith("-") else ""
    digits = whole.lstrip("-")
    if not digits.isdigit():
        return amount
    return f"{sign}{int(digits):,}{dot}{part}"


def _day(iso: str) -> str:
    """`2026-11-13` -> `13 Nov 2026`: no day/month order to misread."""
    try:
        return dt.date.fromisoformat(iso).strftime("%-d %b %Y")
    except ValueError:
        return iso


class ExportColumns(QObject):
    """The panel (`box`). Emits `changed` when the user changes the mapping."""

    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.box, layout = section("Columns of your payroll export")
        self.box.setObjectName("exportColumns")
        self.look: ExportLook | None = None
        self._base: dict[str, Any] = {}
        self._filling = False
        self.intro = label("", "hint")
        layout.addWidget(self.intro)
        # Columns above the preview, not beside it: side by side they need about 980 px, more
        # than a 1366x768 screen at 150 % gives the Issue screen (its scroll area would then
        # scroll sideways).
        body = QVBoxLayout()
        body.setSpacing(12)
        layout.addLayout(body, 1)

        left = QVBoxLayout()
        options = QGridLayout()
        self.country = QComboBox()
        for words, schema in SCHEMAS:
            self.country.addItem(words, str(schema))  # the word, as the mapping file holds it
        self.dates = QComboBox()
        for fmt in DATE_FORMATS:
            self.dates.addItem(f"{DATE_EXAMPLES[fmt]}  ({fmt})", fmt)
        options.addWidget(label("Country", "fieldLabel", wrap=False), 0, 0)
        options.addWidget(self.country, 0, 1)
        options.addWidget(label("Dates look like", "fieldLabel", wrap=False), 1, 0)
        options.addWidget(self.dates, 1, 1)
        options.setColumnStretch(1, 1)
        left.addLayout(options)
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("exportHeaders")
        self.table.setHorizontalHeaderLabels(["Column in your export", "Goes into"])
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setMinimumHeight(260)  # about seven columns in view without scrolling
        left.addWidget(self.table, 1)
        self.columns_widget = QWidget()
        self.columns_widget.setLayout(left)
        left.setContentsMargins(0, 0, 0, 0)
        body.addWidget(self.columns_widget, 1)

        right = QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        preview_head = QHBoxLayout()
        preview_head.addWidget(
            label("FIRST ROWS, AS THEY WILL BE REGISTERED", "sectionTitle", wrap=False)
        )
        preview_head.addStretch(1)
        self.change_button = QPushButton("Change columns")
        self.change_button.setCheckable(True)
        self.change_button.setObjectName("linkButton")
        preview_head.addWidget(self.change_button)
        right.addLayout(preview_head)
        self.preview = QTableWidget(0, 6)
        self.preview.setObjectName("exportPreview")
        self.preview.setHorizontalHeaderLabels(
            ["Row", "Employee", "Employee ID", "Paid on", "Gross / Net", "Problems"]
        )
        self.preview.verticalHeader().setVisible(False)
        self.preview.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview.setWordWrap(True)
        phead = self.preview.horizontalHeader()
        for column in range(5):
            phead.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        phead.setStretchLastSection(True)
        right.addWidget(self.preview, 1)
        self.status = label("", "statusOk")
        right.addWidget(self.status)
        body.addLayout(right, 2)

        self.country.currentIndexChanged.connect(self._country_changed)
        self.dates.currentIndexChanged.connect(self._edited)
        self.change_button.toggled.connect(self.columns_widget.setVisible)
        self.box.hide()

    # ------------------------------------------------------------------ filling

    def show_look(self, look: ExportLook) -> None:
        """Show a freshly chosen file (hidden when it is in our own layout)."""
        self.look = look
        if not look.is_export:
            self.box.hide()
            return
        self._base = {k: v for k, v in look.mapping.items() if k != "columns"}
        self._filling = True
        try:
            schema = look.mapping.get("schema") or "au.payslip.v2"
            self.country.setCurrentIndex(max(self.country.findData(schema), 0))
            fmt = look.mapping.get("date_format") or "DD/MM/YYYY"
            self.dates.setCurrentIndex(max(self.dates.findData(fmt), 0))
            self._fill_pickers(look.mapping.get("columns", {}))
        finally:
            self._filling = False
        unplaced = sum(1 for t in look.mapping.get("columns", {}).values() if t is None)
        if look.remembered:
            self.intro.setText(
                "These columns are set up as you confirmed them last time. Check the first rows, "
                "then register."
            )
        else:
            self.intro.setText(
                "Each column of your export goes into a payslip field. We suggested one for "
                + (
                    "each column. "
                    if not unplaced
                    else f"most columns; choose one (or “Ignore”) for the {unplaced} left. "
                )
                + "Your choice is remembered for the next export with the same columns."
            )
        self.change_button.setChecked(not look.remembered)
        self.columns_widget.setVisible(not look.remembered)
        self.change_button.setVisible(look.remembered)

    def _fill_pickers(self, columns: dict[str, str | None]) -> None:
        schema = str(self.country.currentData())
        choices = field_choices(schema)
        self.table.setRowCount(len(columns))
        for row, (header, target) in enumerate(columns.items()):
            item = QTableWidgetItem(header)
            self.table.setItem(row, 0, item)
            picker = QComboBox()
            picker.setObjectName("fieldPicker")
            picker.addItem(NOT_PLACED, None)
            picker.addItem("Ignore this column", IGNORE)
            for value, words in choices:
                picker.addItem(words, value)
            if target is not None and picker.findData(target) < 0:
                picker.addItem(target, target)  # a field outside the list (earnings.0.amount)
            picker.setCurrentIndex(max(picker.findData(target), 0) if target else 0)
            picker.currentIndexChanged.connect(self._edited)
            self.table.setCellWidget(row, 1, picker)
        self.table.resizeRowsToContents()

    def picker(self, header: str) -> QComboBox:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and item.text() == header:
                widget = self.table.cellWidget(row, 1)
                assert isinstance(widget, QComboBox)
                return widget
        raise KeyError(header)

    def columns(self) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            widget = self.table.cellWidget(row, 1)
            if item is not None and isinstance(widget, QComboBox):
                found[item.text()] = widget.currentData()
        return found

    def mapping(self) -> ExportMapping:
        """The mapping the pickers make. Raises MappingError (plain text)."""
        schema = str(self.country.currentData())
        base = {**self._base, "schema": schema, "date_format": self.dates.currentData()}
        columns = self.columns()
        if "currency" not in columns.values():
            base["defaults"] = {
                **base.get("defaults", {}),
                "currency": "NZD" if schema.startswith("nz.") else "AUD",
            }
        return mapping_from(columns, base)

    def unplaced(self) -> list[str]:
        return [h for h, t in self.columns().items() if t is None]

    # ------------------------------------------------------------------ preview

    def show_preview(self, rows: list[PreviewRow] | str) -> None:
        """The first rows, or a sentence saying why there is no preview yet."""
        if isinstance(rows, str):
            self.preview.setRowCount(0)
            set_status(self.status, rows, error=True)
            return
        self.preview.setRowCount(len(rows))
        for index, row in enumerate(rows):
            money = f"{_grouped(row.gross)} / {_grouped(row.net)}" if row.gross else ""
            problems = "\n".join(row.problems) if row.problems else "Ready"
            paid = _day(row.payment_date)
            for column, text in enumerate(
                (str(row.number), row.name, row.external_id, paid, money, problems)
            ):
                self.preview.setItem(index, column, QTableWidgetItem(text))
        self.preview.resizeRowsToContents()
        bad = sum(1 for r in rows if r.problems)
        if bad:
            set_status(
                self.status,
                f"{bad} of the first {len(rows)} rows have problems (see the right-hand column).",
                error=True,
            )
        else:
            set_status(self.status, f"The first {len(rows)} rows are ready.")

    # ------------------------------------------------------------------ edits

    def _country_changed(self) -> None:
        if self._filling:
            return
        self._filling = True
        try:
            self._fill_pickers(self.columns())
        finally:
            self._filling = False
        self._edited()

    def _edited(self) -> None:
        if not self._filling:
            self.changed.emit()


__all__ = ["ExportColumns", "MappingError", "field_choices"]
