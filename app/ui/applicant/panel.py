""" "Check an applicant": several payslips of one person, one decision (PROTOCOL §10).

A page of the verify screen (not in the kiosk). Payslips come in the ways a single check takes
them: PDFs or images dropped or opened (several at once), badges scanned one after another by
the camera or a USB scanner (which types the code and Enter into the code field), or codes
pasted (several lines at once). Each input is read and verified on the task runner as soon as
it is added, with the desk's one API client; the list, the set's verdict, its problems and the
income are worked out again (by :func:`app.applicant.rules.check_set`, as the CLI does) each
time an answer arrives.

Privacy: the check lives only in this widget. Clear all, the idle timeout (the settings'
privacy timeout, restarted by every input) and leaving the page forget it; late answers of a
cleared check are dropped. Nothing is written to disk, and the log gets counts and verdicts only.
"""

from __future__ import annotations

import logging
from datetime import date
from functools import partial
from pathlib import Path

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QHideEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.api.errors import ClientCode
from app.applicant.documents import Document
from app.applicant.gather import Reader, check_input
from app.applicant.rules import SetCheck, check_set
from app.inputs.reading import InputReading, read_file
from app.shell.context import AppContext
from app.ui.applicant.record import SetRecordButton
from app.ui.applicant.table import DocumentTable, Row, checking_cells, document_cells
from app.ui.applicant.view import IncomeBox, SetBanner
from app.ui.widgets.card_parts import plain_label
from app.ui.widgets.inputs import accept_file_drag, dropped_files
from app.ui.widgets.tasks import TaskRunner
from service.protocol.vocabulary import Verdict

log = logging.getLogger("app.applicant")


class ApplicantPanel(QWidget):
    """The applicant check page. Signals: ``back()`` (return to the single check) and
    ``updated()`` (the list or the verdict changed; tests wait on it)."""

    back = Signal()
    updated = Signal()

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.setObjectName("applicantPanel")
        self.setAcceptDrops(True)
        self._generation = 0
        self._inputs: list[str] = []
        self._labels: list[str] = []
        self._documents: list[list[Document] | None] = []
        self.check: SetCheck | None = None
        self.open_button_on_screen: QPushButton | None = None
        """The verify screen's button that opens this page (set by install_applicant_check)."""
        self.idle = QTimer(self)
        self.idle.setSingleShot(True)
        self.idle.timeout.connect(self.clear_all)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(10)
        outer.addLayout(self._build_bar())
        outer.addLayout(self._build_inputs())
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        body = QWidget()
        body.setObjectName("applicantBody")
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(12)
        self.banner = SetBanner()
        column.addWidget(self.banner)
        self.record_row = QHBoxLayout()
        """Under the verdict: the record button and what became of the last save."""
        column.addLayout(self.record_row)
        self.table = DocumentTable()
        column.addWidget(self.table)
        self.income = IncomeBox()
        column.addWidget(self.income)
        column.addStretch(1)
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        self.name_field.textChanged.connect(self._name_changed)
        self.income.amount.textChanged.connect(self._touch)
        self.record = SetRecordButton(context, tasks, self.record_row, self)
        self._refresh()

    def _build_bar(self) -> QHBoxLayout:
        self.bar = bar = QHBoxLayout()
        bar.addWidget(plain_label("Check an applicant", "screenTitle"))
        bar.addStretch(1)
        self.clear_button = QPushButton("Clear all")
        self.clear_button.setToolTip("Forget every payslip of this applicant")
        self.clear_button.clicked.connect(self.clear_all)
        bar.addWidget(self.clear_button)
        self.back_button = QPushButton("Back to single check")
        self.back_button.clicked.connect(self.leave)
        bar.addWidget(self.back_button)
        return bar

    def _build_inputs(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.open_button = QPushButton("Open PDFs or images…")
        self.open_button.setObjectName("primary")
        self.open_button.clicked.connect(self.choose_files)
        row.addWidget(self.open_button)
        self.code_field = QLineEdit()
        self.code_field.setObjectName("applicantCode")
        self.code_field.setPlaceholderText("Scan a badge or paste codes, then Enter")
        self.code_field.setAccessibleName("Payslip code")
        self.code_field.returnPressed.connect(self.submit_codes)
        row.addWidget(self.code_field, 2)
        row.addWidget(plain_label("Applicant", "fieldLabel"))
        self.name_field = QLineEdit()
        self.name_field.setObjectName("applicantName")
        self.name_field.setPlaceholderText("name (optional)")
        self.name_field.setAccessibleName("Applicant's name")
        row.addWidget(self.name_field, 1)
        return row

    # -- inputs -------------------------------------------------------------------------------

    def add_files(self, paths: list[Path]) -> None:
        for path in paths:
            self._add(str(path), path.name, partial(read_file, path))

    def add_code(self, text: str) -> None:
        """One scanned or pasted code; the same code text twice in a row is a camera repeat."""
        code = text.strip()
        if not code or (self._inputs and self._inputs[-1] == code):
            return
        self._add(code, f"Code {len(self._inputs) + 1}", lambda: _text_reading(code))

    def submit_codes(self) -> None:
        """The code field's text: one code, or several pasted on separate lines."""
        for line in self.code_field.text().split():
            self.add_code(line)
        self.code_field.setText("")

    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open the applicant's payslips", "", "Payslips (*.pdf *.png *.jpg *.jpeg)"
        )
        self.add_files([Path(p) for p in paths])

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt's name
        accept_file_drag(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        if files := dropped_files(event):
            self.add_files(files)

    def _add(self, given: str, label: str, reader: Reader) -> None:
        index = len(self._inputs)
        self._inputs.append(given)
        self._labels.append(label)
        self._documents.append(None)
        generation = self._generation
        client = self.context.verifier

        def job() -> list[Document]:
            return check_input(client, index, given, reader, label)

        self.tasks.run(
            job,
            partial(self._answered, generation, index),
            partial(self._failed, generation, index),
        )
        self._touch()
        self._refresh()

    def _answered(self, generation: int, index: int, documents: list[Document]) -> None:
        if generation != self._generation:
            return  # a cleared check's late answer
        self._documents[index] = documents
        self._refresh()

    def _failed(self, generation: int, index: int, error: Exception) -> None:
        """An unforeseen failure (not a refusal, not a service answer): nothing is known about
        that payslip, so it cannot be verified; only the error's type is logged."""
        log.error("applicant input failed: %s", type(error).__name__)
        if generation != self._generation:
            return
        failed = Document(
            index,
            self._inputs[index],
            self._labels[index],
            Verdict.CANNOT_VERIFY,
            ClientCode.API_ERROR,
        )
        self._answered(generation, index, [failed])

    # -- state --------------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Changes when the set is cleared (a late answer of the old set is dropped)."""
        return self._generation

    @property
    def pending(self) -> int:
        return sum(1 for docs in self._documents if docs is None)

    def _name_changed(self) -> None:
        self._touch()
        self._refresh()

    def _touch(self) -> None:
        """Any input restarts the privacy timeout."""
        self.idle.start(max(1, int(self.context.settings.idle_timeout)) * 1000)

    def _refresh(self) -> None:
        rows: list[Row] = []
        done: list[Document] = []
        for label, docs in zip(self._labels, self._documents, strict=True):
            if docs is None:
                rows.append((checking_cells(len(rows) + 1, label), None))
                continue
            done.extend(docs)
            for doc in docs:
                rows.append((document_cells(doc, len(rows) + 1), doc.verdict))
        self.table.show_rows(rows)
        self.check = None
        if not self._inputs:
            self.banner.show_waiting()
            self.income.show_income(None, "")
        elif self.pending:
            self.banner.show_checking(len(self._inputs) - self.pending, len(self._inputs))
            self.income.show_income(None, "")
        else:
            name = self.name_field.text().strip() or None
            self.check = check_set(done, today=date.today(), applicant_name=name)
            self.banner.show_check(self.check)
            self.income.show_income(self.check.income.income, self.check.income.why_none or "")
            log.info(
                "applicant check: %d documents, %s, %d problems",
                len(done),
                self.check.verdict,
                len(self.check.problems),
            )
        self.record.show_for(self.check, self._generation, self.name_field.text().strip() or None)
        self.updated.emit()

    def clear_all(self) -> None:
        """Forget everything: the list, the name, the amount, and any answer still on its way."""
        self._generation += 1
        self._inputs.clear()
        self._labels.clear()
        self._documents.clear()
        self.idle.stop()
        # setText, not clear(): clear() is undoable, and Ctrl+Z would bring the text back.
        for field in (self.code_field, self.name_field, self.income.amount):
            field.blockSignals(True)
            field.setText("")
            field.blockSignals(False)
        self._refresh()

    def leave(self) -> None:
        self.clear_all()
        self.back.emit()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt's name
        super().hideEvent(event)
        if not event.spontaneous():  # another page was chosen (Esc, Back), not a minimise
            self.clear_all()


def _text_reading(code: str) -> InputReading:
    return InputReading(kind="text", payloads=[code])


def install_applicant_check(
    context: AppContext,
    tasks: TaskRunner,
    header: QHBoxLayout,
    pages: QStackedWidget,
    scan_page: QWidget,
) -> ApplicantPanel:
    """Add the page to the verify screen's stack and its "Check an applicant…" button to the
    header (before the settings button); Back returns to ``scan_page``."""
    panel = ApplicantPanel(context, tasks)
    pages.addWidget(panel)
    panel.open_button_on_screen = button = QPushButton("Check an applicant…")
    button.setObjectName("applicantButton")
    button.setToolTip("Several payslips of one person: one decision, and the income they prove")

    def show() -> None:
        pages.setCurrentWidget(panel)
        panel.code_field.setFocus()

    button.clicked.connect(show)
    pages.currentChanged.connect(lambda _: button.setVisible(pages.currentWidget() is not panel))
    header.insertWidget(header.count() - 1, button)
    panel.back.connect(lambda: pages.setCurrentWidget(scan_page))
    return panel
