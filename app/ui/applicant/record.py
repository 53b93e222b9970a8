""" "Save verification record…" on the applicant check page (issues 23 and 24).

Once every payslip of the set is checked, the button asks where to save, then (on the task
runner, never on the GUI thread) asks the service for a receipt of each document that got a
verdict, with the desk's one API client, and writes one PDF for the set
(:mod:`app.ui.records.set_record_pdf`). A record is written only when every such document got its
receipt:
a record missing one payslip's evidence would file less than the desk decided on. Nothing of it
is logged (only the error's code or type) or kept; the file goes where the worker chose.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QBoxLayout, QFileDialog, QSizePolicy, QWidget

from app.applicant.documents import Document
from app.applicant.rules import SetCheck
from app.applicant.set_receipts import fetch_receipts, wants_receipt
from app.shell.context import AppContext
from app.ui.records.record_button import SAVE_TEXT, not_saved_sentence, record_button
from app.ui.records.record_pdf import desk_name, page_size_for
from app.ui.records.set_record_pdf import write_set_record
from app.ui.widgets.card_parts import plain_label
from app.ui.widgets.tasks import TaskRunner

log = logging.getLogger("app.applicant")


class ReceiptsMissing(Exception):
    """Some documents got no receipt; the message is one plain sentence."""


def make_set_record(
    client: Any,
    check: SetCheck,
    path: str,
    desk: str,
    applicant: str | None,
    page: Any,
) -> str:
    """Worker thread: a receipt for each document with a verdict, then the set's PDF."""
    receipts, missing = fetch_receipts(client, check.documents)
    if missing:
        names = ", ".join(f"{m.label} ({m.code})" for m in missing)
        raise ReceiptsMissing(f"the service made no receipt for {names}")
    write_set_record(path, check, receipts, desk, applicant, page)
    return path


def recordable(documents: Sequence[Document]) -> bool:
    return any(wants_receipt(doc) for doc in documents)


class SetRecordButton(QObject):
    """The page's record button, given what it needs rather than the page: the desk's context and
    task runner, the row under the verdict to sit in, and (through :meth:`show_for`) the set as
    it stands. Signals: ``saved(str)`` (the path) and ``save_failed(str)`` (one plain
    sentence)."""

    saved = Signal(str)
    save_failed = Signal(str)

    def __init__(
        self, context: AppContext, tasks: TaskRunner, row: QBoxLayout, parent: QWidget
    ) -> None:
        super().__init__(parent)
        self.context = context
        self.tasks = tasks
        self._dialog_parent = parent
        self.button = record_button(
            "saveSetRecordButton",
            "One PDF for this applicant: the verdict, problems, income and each payslip's "
            "receipt signed by the service, to keep on file",
            self.save,
        )
        # Under the verdict, not in the title bar: the bar's three buttons and title already fill
        # the narrowest window (1366x768 at 150 %), and a fourth widened it (issue 35).
        self.button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        row.addWidget(self.button)
        self.notice = plain_label("", "recordNotice", wrap=True)
        self.notice.hide()
        row.addWidget(self.notice, 1)
        row.addStretch(0)
        self._check: SetCheck | None = None
        self._generation = 0
        self._applicant: str | None = None
        self._saving_generation: int | None = None

    def show_for(self, check: SetCheck | None, generation: int, applicant: str | None) -> None:
        """The set changed: ``check`` is its decision (None while incomplete), ``generation``
        the page's count of fresh starts (a save of an older set says nothing on this one)."""
        self._check, self._generation, self._applicant = check, generation, applicant
        self.button.setVisible(check is not None and recordable(check.documents))
        if self._saving_generation != generation:  # not saving this set now
            self._saving_generation = None
            self.button.setEnabled(True)
            self.button.setText(SAVE_TEXT)
            self.notice.hide()

    def save(self, path: str | None = None) -> None:
        """Ask where (unless `path`), then get the receipts and write the record off-thread."""
        check = self._check
        if check is None or self._saving_generation is not None:
            return
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self._dialog_parent,
                "Save the applicant's verification record",
                str(Path.home() / "verification-record-applicant.pdf"),
                "PDF (*.pdf)",
            )
            if not path:
                return
        client = self.context.verifier
        desk = desk_name(self.context.settings.extra)
        applicant = self._applicant
        page = page_size_for()
        chosen = path
        self._saving_generation = generation = self._generation
        self.button.setEnabled(False)
        self.button.setText("Saving…")
        self.tasks.run(
            lambda: make_set_record(client, check, chosen, desk, applicant, page),
            lambda done: self._saved(generation, done),
            lambda exc: self._failed(generation, exc),
        )

    def _saved(self, generation: int, path: str) -> None:
        if generation == self._generation:
            self._saving_generation = None
            self.button.setEnabled(True)
            self.button.setText("Record saved")
            self._say(f"Verification record saved as {Path(path).name}")
        self.saved.emit(path)

    def _failed(self, generation: int, exc: Exception) -> None:
        log.info("applicant record not saved: %s", getattr(exc, "code", type(exc).__name__))
        missing = isinstance(exc, ReceiptsMissing)
        sentence = not_saved_sentence(
            exc, str(exc) if missing else "something went wrong while making it"
        )
        if generation == self._generation:
            self._saving_generation = None
            self.button.setEnabled(True)
            self.button.setText(SAVE_TEXT)
            self._say(sentence)
        self.save_failed.emit(sentence)

    def _say(self, sentence: str) -> None:
        self.notice.setText(sentence)
        self.notice.show()
