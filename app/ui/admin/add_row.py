"""The Admin screen's "Add" section: a name and the two buttons that create a client with it.

Its own widget so the screen holds the actions only; the screen connects the buttons."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.ui.widgets.staff_style import section


class AddRow(QWidget):
    def __init__(self) -> None:
        super().__init__()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        box, box_layout = section("Add")
        row = QHBoxLayout()
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("Name, e.g. “Harbour Payroll Pty Ltd” or “Front desk 2”")
        self.name_edit.setObjectName("adminName")
        self.name_edit.setStyleSheet("font-family: sans-serif;")
        self.create_issuer_button = QPushButton("Add payroll provider")
        self.create_issuer_button.setToolTip("Creates an issuer: it can register payslips.")
        self.create_verifier_button = QPushButton("Add front desk")
        self.create_verifier_button.setToolTip("Creates a verifier: it can check payslips.")
        row.addWidget(self.name_edit, 1)
        row.addWidget(self.create_issuer_button)
        row.addWidget(self.create_verifier_button)
        box_layout.addLayout(row)
        outer.addWidget(box)
