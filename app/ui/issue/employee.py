"""The employee's details: the personal part of a payslip, encrypted on this computer.

Kept apart from the payslip form on purpose: these fields never go to the service in clear, only
inside the sealed badge payload, and they are cleared from the screen after issuing.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QLineEdit

from app.issuer.pii import (
    PiiTextError,
    au_address,
    au_employer_identity,
    build_pii_text,
    nz_address,
)
from app.ui.issue.field_editor import ERROR_STYLE
from app.ui.widgets.staff_style import panel

AU_PII = (
    ("employee_name", "Employee name *"),
    ("position", "Position"),
    ("department", "Department"),
    ("employer_abn", "Employer ABN"),
    ("employer_name", "Employer name"),
    ("bsb", "BSB"),
    ("account_number", "Account number"),
    ("account_name", "Account name"),
    ("line1", "Address line 1"),
    ("line2", "Address line 2"),
    ("suburb", "Suburb"),
    ("state", "State"),
    ("postcode", "Postcode"),
)
NZ_PII = (
    ("employee_name", "Employee name *"),
    ("ird_number", "IRD number"),
    ("position", "Position"),
    ("department", "Department"),
    ("employer_name", "Employer name"),
    ("account_number", "Account number"),
    ("account_name", "Account name"),
    ("line1", "Address line 1"),
    ("line2", "Address line 2"),
    ("suburb", "Suburb"),
    ("city", "City"),
    ("postcode", "Postcode"),
)


WIDE = ("employee_name", "line1", "line2")


class PiiForm(QFrame):
    """The employee's details in the format that fits the schema (AU2 or NZ2).

    The address is typed in parts and joined into the protocol's one line; AU2's employer
    identity is the ABN when given, else the employer's name. Shown as its own panel with a
    plain note that these details are encrypted here and never sent in clear.
    """

    changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.format = ""
        self.edits: dict[str, QLineEdit] = {}
        outer = panel(self, "Employee")
        self.note = QLabel(
            "Encrypted on this computer; never sent in clear. Only the badge carries these "
            "details, and they are cleared from the screen after issuing."
        )
        self.note.setObjectName("privacyNote")
        self.note.setWordWrap(True)
        outer.addWidget(self.note)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(12)
        self.grid.setVerticalSpacing(6)
        self.grid.setColumnStretch(1, 1)
        self.grid.setColumnStretch(3, 1)
        outer.addLayout(self.grid)
        self.error = QLabel("")
        self.error.setObjectName("piiError")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        outer.addWidget(self.error)

    def title(self) -> str:
        return f"Employee ({self.format})"

    def set_format(self, prefix: str) -> None:
        if prefix == self.format:
            return
        kept = {name: edit.text() for name, edit in self.edits.items()}
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
                widget.deleteLater()  # as the payslip form in single.py: never mid-signal
        self.edits = {}
        self.format = prefix
        self.setToolTip(
            "These details are encrypted here and travel only inside the badge; the service "
            "never sees them in clear."
        )
        row = column = 0
        for name, label in AU_PII if prefix == "AU2" else NZ_PII:
            edit = QLineEdit(kept.get(name, ""))
            edit.setObjectName(f"pii:{name}")
            edit.setStyleSheet("font-family: sans-serif;")
            edit.textChanged.connect(lambda _="": self.changed.emit())
            caption = QLabel(label)
            caption.setObjectName("fieldLabel")
            if name in WIDE:  # a label and a field across the whole width
                if column:
                    row, column = row + 1, 0
                self.grid.addWidget(caption, row, 0)
                self.grid.addWidget(edit, row, 1, 1, 3)
                row += 1
            else:  # two label-and-field pairs per row
                self.grid.addWidget(caption, row, column * 2)
                self.grid.addWidget(edit, row, column * 2 + 1)
                row, column = (row, 1) if column == 0 else (row + 1, 0)
            self.edits[name] = edit

    def value(self, name: str) -> str:
        edit = self.edits.get(name)
        return edit.text().strip() if edit is not None else ""

    def fields(self) -> dict[str, str]:
        v = self.value
        if self.format == "AU2":
            return {
                "employee_name": v("employee_name"),
                "position": v("position"),
                "department": v("department"),
                "employer_identity": au_employer_identity(v("employer_abn"), v("employer_name")),
                "bsb": v("bsb"),
                "account_number": v("account_number"),
                "account_name": v("account_name"),
                "address": au_address(
                    v("line1"), v("line2"), v("suburb"), v("state"), v("postcode")
                ),
            }
        return {
            "employee_name": v("employee_name"),
            "ird_number": v("ird_number"),
            "position": v("position"),
            "department": v("department"),
            "employer_name": v("employer_name"),
            "account_number": v("account_number"),
            "account_name": v("account_name"),
            "address": nz_address(v("line1"), v("line2"), v("suburb"), v("city"), v("postcode")),
        }

    def text(self) -> str:
        """The PII plaintext. Raises PiiTextError (field named, value never shown)."""
        fields = self.fields()
        if not fields["employee_name"]:
            raise PiiTextError("employee_name", "is required")
        return build_pii_text(self.format, fields)

    def set_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    def fill(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            if name in self.edits:
                self.edits[name].setText(value)

    def has_input(self) -> bool:
        return any(edit.text().strip() for edit in self.edits.values())

    def clear_values(self) -> None:
        for edit in self.edits.values():
            edit.clear()
