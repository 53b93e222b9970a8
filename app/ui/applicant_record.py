""" "Save verification record…" on the applicant check page (issues 23 and 24).

Once every payslip of the set is checked, the button asks where to save, then (on the task
runner, never on the GUI thread) asks the service for a receipt of each document that got a
verdict, with the desk's one API client, and writes one PDF for the set
(:mod:`app.receipts.set_record_pdf`). A record is written only when every such document got its
receipt:
a record missing one payslip's evidence would file less than the desk decided on. Nothing of it
is logged (only the error's code or type) or kept; the file goes where the worker chose.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QSizePolicy

from app.applicant.documents import Document
from app.applicant.rules import SetCheck
from app.applicant.set_receipts import fetch_receipts, wants_receipt
from app.receipts.record_pdf import desk_name, page_size_for
from app.receipts.set_record_pdf import write_set_record
from app.ui.card_parts import plain_label
from app.ui.record_button import SAVE_TEXT, not_saved_sentence, record_button

if TYPE_CHECKING:
    from app.ui.applicant_panel import ApplicantPanel

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
    """The page's record button. Signals: ``saved(str)`` (the path) and ``save_failed(str)``
    (one plain sentence)."""

    saved = Signal(str)
    save_failed = Signal(str)

    def __init__(self, panel: ApplicantPanel) -> None:
        super().__init__(panel)
        self.panel = panel
        self.button = record_button(
            "saveSetRecordButton",
            "One PDF for this applicant: the verdict, problems, income and each payslip's "
            "receipt signed by the service, to keep on file",
            self.save,
        )
        # Under the verdict, not in the title bar: the bar's three buttons and title already fill
        # the narrowest window (1366x768 at 150 %), and a fourth widened it (issue 35).
        self.button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        panel.record_row.addWidget(self.button)
        self.notice = plain_label("", "recordNotice", wrap=True)
        self.notice.hide()
        panel.record_row.addWidget(self.notice, 1)
        panel.record_row.addStretch(0)
        self._saving_generation: int | None = None
        panel.updated.connect(self._refresh)

    def _refresh(self) -> None:
        check = self.panel.check
        show = check is not None and recordable(check.documents)
        self.button.setVisible(show)
        if self._saving_generation != self.panel.generation:  # not saving this set now
            self._saving_generation = None
            self.button.setEnabled(True)
            self.button.setText(SAVE_TEXT)
            self.notice.hide()

    def save(self, path: str | None = None) -> None:
        """Ask where (unless `path`), then get the receipts and write the record off-thread."""
        check = self.panel.check
        if check is None or self._saving_generation is not None:
            return
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self.panel,
                "Save the applicant's verification record",
                str(Path.home() / "verification-record-applicant.pdf"),
                "PDF (*.pdf)",
            )
            if not path:
                return
        context = self.panel.context
        client = context.verifier
        desk = desk_name(context.settings.extra)
        applicant = self.panel.name_field.text().strip() or None
        page = page_size_for()
        chosen = path
        self._saving_generation = generation = self.panel.generation
        self.button.setEnabled(False)
        self.button.setText("Saving…")
        self.panel.tasks.run(
            lambda: make_set_record(client, check, chosen, desk, applicant, page),
            lambda done: self._saved(generation, done),
            lambda exc: self._failed(generation, exc),
        )

    def _saved(self, generation: int, path: str) -> None:
        if generation == self.panel.generation:
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
        if generation == self.panel.generation:
            self._saving_generation = None
            self.button.setEnabled(True)
            self.button.setText(SAVE_TEXT)
            self._say(sentence)
        self.save_failed.emit(sentence)

    def _say(self, sentence: str) -> None:
        self.notice.setText(sentence)
        self.notice.show()


def attach_set_record(panel: ApplicantPanel) -> SetRecordButton:
    """Give the applicant check page its record button."""
    return SetRecordButton(panel)
