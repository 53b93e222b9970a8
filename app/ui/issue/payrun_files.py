"""The pay-run tab's Files panel: which file to register, where its PDFs are, where results go.

Three paths with a Browse button each (the dialogs remember a folder per purpose), and the
bundled sample file one click away so a new office can try a run with invented employees. The
hint under them says what a run does with bad rows and how a stopped run carries on: people
stop runs, and must know that starting again with the same output folder registers nothing
twice.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.shell import resources
from app.shell.context import AppContext
from app.ui.widgets.folders import choose_folder, open_file
from app.ui.widgets.staff_style import label, section


class PayRunFiles(QObject):
    """The Files panel (``box``) and its three paths."""

    def __init__(self, context: AppContext, parent: QWidget) -> None:
        super().__init__(parent)
        self.context = context
        self.dialog_parent = parent
        self.box, files_layout = section("Files")
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        self.run_file = QLineEdit()
        self.run_file.setObjectName("runFile")
        self.run_file.setPlaceholderText(
            "The export from your payroll system (.csv or .xlsx), or a pay-run file (.json)"
        )
        self.run_pdf_dir = QLineEdit()
        self.run_pdf_dir.setPlaceholderText("Optional: a folder with one payslip PDF per employee")
        self.run_out_dir = QLineEdit()
        self.run_out_dir.setObjectName("runOut")
        self.run_out_dir.setPlaceholderText("Where the badges, stamped PDFs and results go")
        for row, (caption, edit, pick) in enumerate(
            (
                ("Pay-run file", self.run_file, self._pick_file),
                ("Payslip PDFs", self.run_pdf_dir, lambda: self._pick_dir(self.run_pdf_dir)),
                ("Output folder", self.run_out_dir, lambda: self._pick_dir(self.run_out_dir)),
            )
        ):
            edit.setStyleSheet("font-family: sans-serif;")
            browse = QPushButton("Browse…")
            browse.clicked.connect(pick)
            grid.addWidget(label(caption, "fieldLabel", wrap=False), row, 0)
            grid.addWidget(edit, row, 1)
            grid.addWidget(browse, row, 2)
        files_layout.addLayout(grid)
        self.combined = QCheckBox("One PDF with every payslip (we split it by employee)")
        self.combined.setObjectName("combinedPdf")
        self.combined.setToolTip(
            "Each page goes to the employee whose name or ID is on it; pages that name nobody, "
            "or several people, are listed and not stamped."
        )
        self.combined.toggled.connect(self._combined_toggled)
        files_layout.addWidget(self.combined)
        sample = QHBoxLayout()
        self.sample_button = QPushButton("Use the sample pay-run file")
        self.sample_button.setObjectName("linkButton")
        self.sample_button.clicked.connect(self.use_sample)
        sample.addWidget(self.sample_button)
        sample.addStretch(1)
        files_layout.addLayout(sample)
        self.hint = label(
            "Every row is checked first; rows with problems are listed and skipped, the rest are "
            "registered. If you stop a run (or the computer restarts), start it again with the "
            "same output folder: it carries on where it stopped and registers nothing twice.",
            "hint",
        )
        files_layout.addWidget(self.hint)
        files_layout.addStretch(1)

    def use_sample(self) -> None:
        """The bundled sample file (invented employees), and a fresh output folder beside it."""
        self.run_file.setText(str(resources.path("sample_payrun.csv")))
        if not self.run_out_dir.text().strip():
            stamp = time.strftime("%Y-%m-%d %H%M%S")
            self.run_out_dir.setText(str(Path.home() / "Payslip badges" / f"Sample run {stamp}"))

    def paths(self) -> tuple[Path | None, Path | None, Path | None]:
        """The pay-run file, the PDF folder and the output folder; None where left empty (the
        PDF folder is None when the PDF is one combined file: see `combined_pdf`)."""
        pdfs = None if self.combined.isChecked() else _path(self.run_pdf_dir)
        return _path(self.run_file), pdfs, _path(self.run_out_dir)

    def combined_pdf(self) -> Path | None:
        return _path(self.run_pdf_dir) if self.combined.isChecked() else None

    def _combined_toggled(self, combined: bool) -> None:
        self.run_pdf_dir.setPlaceholderText(
            "Optional: the one PDF with every employee's payslip"
            if combined
            else "Optional: a folder with one payslip PDF per employee"
        )

    def _pick_file(self) -> None:
        name = open_file(
            self.dialog_parent,
            self.context.settings,
            "pay-run files",
            "Choose the pay-run file",
            "Pay runs (*.csv *.xlsx *.json *.jsonl)",
        )
        if name:
            self.run_file.setText(name)

    def _pick_dir(self, edit: QLineEdit) -> None:
        if edit is self.run_pdf_dir and self.combined.isChecked():
            name = open_file(
                self.dialog_parent,
                self.context.settings,
                "payslip PDFs",
                "Choose the PDF with every payslip",
                "PDF (*.pdf)",
            )
            if name:
                edit.setText(name)
            return
        purpose = "payslip PDFs" if edit is self.run_pdf_dir else "pay-run output"
        name = choose_folder(self.dialog_parent, self.context.settings, purpose, "Choose a folder")
        if name:
            edit.setText(name)


def _path(edit: QLineEdit) -> Path | None:
    text = edit.text().strip()
    return Path(text) if text else None
