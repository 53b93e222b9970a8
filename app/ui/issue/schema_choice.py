"""Which payslip format the "One payslip" tab fills in, chosen as a country.

A payroll officer thinks "Australia", not "au.payslip.v2": the list names countries, and the
format's id is only in the tooltip. The older formats (amounts in whole cents, for payroll
systems not yet updated) stay out of the list until "More" is ticked, so nobody picks one by
accident; the one in use stays listed even when "More" is unticked again.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout

from app.ui.issue.field_editor import compact_combo
from app.ui.widgets.staff_style import label
from service.protocol.vocabulary import PayslipSchema

#: Country first, in words; the older formats only under "More formats".
SCHEMA_LABELS = {
    PayslipSchema.AU_V2: "Australia",
    PayslipSchema.NZ_V2: "New Zealand",
    PayslipSchema.AU_V1: "Australia — older format (amounts in whole cents)",
    PayslipSchema.NZ_V1: "New Zealand — older format (amounts in whole cents)",
}
CURRENT = (PayslipSchema.AU_V2, PayslipSchema.NZ_V2)
OLDER = (PayslipSchema.AU_V1, PayslipSchema.NZ_V1)


class SchemaChoice(QObject):
    """The "Country" row (``row``): the list (``combo``) and its "More" box (``more``).

    Signals: `changed(str)` with the chosen schema id.
    """

    changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.row = QHBoxLayout()
        self.row.addWidget(label("Country", "fieldLabel", wrap=False))
        self.combo = QComboBox()
        compact_combo(self.combo)
        self.combo.setObjectName("schema")
        for schema in CURRENT:
            self._add(schema)
        self.row.addWidget(self.combo, 1)
        self.more = QCheckBox("More")
        self.more.setToolTip("Older payslip formats, for payroll systems not yet updated")
        self.row.addWidget(self.more)
        self.combo.currentIndexChanged.connect(lambda _=0: self.changed.emit(self.schema))
        self.more.toggled.connect(self._show_older)

    @property
    def schema(self) -> str:
        return str(self.combo.currentData())

    def set_schema(self, schema: str) -> None:
        if schema in OLDER:
            self.more.setChecked(True)
        self.combo.setCurrentIndex(self.combo.findData(schema))

    def _add(self, schema: str) -> None:
        # The plain text as the item's data: `findData` compares it with the text callers pass.
        self.combo.addItem(SCHEMA_LABELS[PayslipSchema(schema)], str(schema))
        self.combo.setItemData(
            self.combo.count() - 1, f"Format {schema}", Qt.ItemDataRole.ToolTipRole
        )

    def _show_older(self, shown: bool) -> None:
        current = self.schema
        self.combo.blockSignals(True)
        for schema in OLDER:
            index = self.combo.findData(schema)
            if shown and index < 0:
                self._add(schema)
            elif not shown and index >= 0 and schema != current:
                self.combo.removeItem(index)
        self.combo.blockSignals(False)
