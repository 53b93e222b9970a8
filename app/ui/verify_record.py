"""Verification records on the verify screen (issue 23, PROTOCOL §11).

Two things, attached to a :class:`~app.ui.verify_screen.VerifyScreen` without changing how it
verifies:

* After a VERIFIED or NOT VERIFIED result, "Save verification record..." asks the service for a
  signed receipt of the same code and writes the one-page record PDF (:mod:`app.record_pdf`).
  Not in kiosk mode, which opens no file dialogs. CANNOT VERIFY has nothing to record.
* A verification record that is dropped, opened, typed by a USB scanner or seen by the camera is
  no payslip code, so the screen refuses it as such; this module then checks the receipt it
  holds against the service's published keys and says, instead of "not a payslip code",
  "Verification record: genuine, made on ... by ..." (or that it was altered).

Both talk to the service over HTTP off the GUI thread; nothing of a record is logged or kept.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jwt
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QBoxLayout, QFileDialog, QPushButton, QWidget

from app.api_errors import ApiError
from app.receipts import (
    JWKS_PATH,
    ReceiptCheck,
    check_receipt,
    load_jwks,
    looks_like_receipt,
    made_at,
    receipt_in,
    verdict_words,
)
from app.record_pdf import desk_name, page_size_for, write_record
from app.verify_flow import is_payslip_code
from service.protocol.schemas import ReceiptClaims

if TYPE_CHECKING:
    from app.ui.verify_screen import VerifyScreen

log = logging.getLogger("app.verify")

SAVE_TEXT = "Save verification record…"


def make_record(reader: Any, client: Any, path: str, desk: str, page: Any) -> str:
    """Worker thread: read the input again, get a receipt of its code, write the record."""
    reading = reader()
    payload = next((p for p in reading.payloads if is_payslip_code(p)), None)
    if payload is None:
        raise ValueError("the payslip code is no longer readable")
    receipt = client.receipt(payload).receipt
    claims = ReceiptClaims.model_validate(jwt.decode(receipt, options={"verify_signature": False}))
    write_record(path, receipt, claims, desk, page)
    return path


def record_sentence(checked: ReceiptCheck) -> str:
    """What the screen says about a scanned or dropped verification record."""
    claims = checked.claims
    if checked.state == "genuine" and claims is not None:
        headline, words = verdict_words(claims)
        facts = [f for f in (claims.issuer.name if claims.issuer else None, claims.sub) if f]
        said = f"{headline}" + (f" ({', '.join(facts)})" if facts else "")
        if claims.verified and claims.employee_name:
            said += f" for {claims.employee_name}"
        return (
            f"Verification record: genuine, made on {made_at(claims)} by {claims.verifier}. "
            f"It records: {said}. {'' if claims.verified else words}"
        ).strip()
    if checked.state == "altered":
        return f"Verification record: NOT GENUINE. {checked.reason} Do not rely on it."
    return f"Verification record: cannot be checked here. {checked.reason}"


class RecordDesk(QObject):
    """The screen's record button and record recognition.

    Signals:
        saved(str): a record PDF was written (its path).
        save_failed(str): it could not be (one plain sentence).
        record_checked(str): a scanned or dropped record was checked ("genuine", "altered",
            "cannot_check").
    """

    saved = Signal(str)
    save_failed = Signal(str)
    record_checked = Signal(str)

    def __init__(self, screen: VerifyScreen) -> None:
        super().__init__(screen)
        self.screen = screen
        self.button = QPushButton(SAVE_TEXT)
        self.button.setObjectName("saveRecordButton")
        self.button.setToolTip(
            "A one-page PDF with a receipt signed by the service, to keep on file"
        )
        self.button.clicked.connect(lambda: self.save())
        self.button.hide()
        banner = screen.card.banner
        outer = banner.layout()
        assert outer is not None
        last = outer.itemAt(outer.count() - 1)
        assert last is not None
        bottom = last.layout()
        assert isinstance(bottom, QBoxLayout)
        bottom.insertWidget(1, self.button)
        self._from_pipeline: str | None = None
        self._from_camera: str | None = None
        screen.card.shown.connect(self._shown)
        screen.verification_started.connect(self.button.hide)
        screen.result_cleared.connect(self.button.hide)
        screen.pipeline.refused.connect(self._pipeline_refused)
        screen.camera.code_read.connect(self._camera_read)
        screen.input_refused.connect(lambda _reason: QTimer.singleShot(0, self._look))

    # -- saving ---------------------------------------------------------------------------------

    def _shown(self, verdict: str) -> None:
        wanted = verdict in ("verified", "not_verified") and not self.screen.kiosk
        outcome = self.screen.card.outcome
        self.button.setVisible(wanted and outcome is not None and not outcome.disagreement)
        self.button.setEnabled(True)
        self.button.setText(SAVE_TEXT)
        _relayout(self.screen.card.banner, self.screen.card)

    def save(self, path: str | None = None) -> None:
        """Ask where (unless `path`), then get the receipt and write the record off-thread."""
        reader = self.screen.pipeline.last_reader
        if reader is None:
            return
        if path is None:
            reference = self.screen.card.outcome and self.screen.card.outcome.result
            stem = reference.service_reference[:8] if reference else "payslip"
            path, _ = QFileDialog.getSaveFileName(
                self.screen,
                "Save verification record",
                str(Path.home() / f"verification-record-{stem}.pdf"),
                "PDF (*.pdf)",
            )
            if not path:
                return
        client = self.screen.context.verifier
        desk = desk_name(self.screen.context.settings.extra)
        page = page_size_for()
        chosen = path
        self.button.setEnabled(False)
        self.button.setText("Saving…")
        self.screen.tasks.run(
            lambda: make_record(reader, client, chosen, desk, page),
            self._saved,
            self._failed,
        )

    def _saved(self, path: str) -> None:
        self.button.setText("Record saved")
        self.screen.card.set_hint(f"Verification record saved as {Path(path).name}")
        self.saved.emit(path)

    def _failed(self, exc: Exception) -> None:
        log.info("verification record not saved: %s", getattr(exc, "code", type(exc).__name__))
        self.button.setEnabled(True)
        self.button.setText(SAVE_TEXT)
        if isinstance(exc, ApiError):
            words = f"the service made no receipt ({exc.code})"
        elif isinstance(exc, OSError):
            words = "the file could not be written"
        else:
            words = "the payslip code could not be read again"
        sentence = f"The verification record was not saved: {words}."
        self.screen.card.set_hint(sentence)
        self.save_failed.emit(sentence)

    # -- recognising a record -------------------------------------------------------------------

    def _pipeline_refused(self, _outcome: object, _source: str) -> None:
        reading = getattr(self.screen.pipeline, "last_reading", None)
        self._from_pipeline = receipt_in(reading.payloads) if reading is not None else None

    def _camera_read(self, text: str) -> None:
        self._from_camera = text.strip() if looks_like_receipt(text) else None
        QTimer.singleShot(0, self._forget_camera)

    def _forget_camera(self) -> None:
        self._from_camera = None

    def _look(self) -> None:
        typed = self.screen.code_field.text().strip()
        found = (
            self._from_pipeline
            or self._from_camera
            or (typed if looks_like_receipt(typed) else None)
        )
        self._from_pipeline = None
        if found is None:
            return
        self._say("Checking the verification record…")
        url = self.screen.context.service_url.rstrip("/") + JWKS_PATH
        self.screen.tasks.run(
            lambda: check_receipt(found, load_jwks(url)),
            self._checked,
            self._not_checked,
        )

    def _checked(self, checked: ReceiptCheck) -> None:
        self._say(record_sentence(checked))
        self.record_checked.emit(checked.state)

    def _not_checked(self, exc: Exception) -> None:
        self._say(
            "Verification record: cannot be checked now (the service's keys could not be "
            "fetched). Try again in a moment."
        )
        self.record_checked.emit("cannot_check")

    def _say(self, sentence: str) -> None:
        notice = self.screen.notice
        notice.setText(sentence)
        notice.show()
        widget = notice.parentWidget()
        while widget is not None and widget is not self.screen.parentWidget():
            _relayout(widget)
            widget = widget.parentWidget()


def _relayout(*widgets: QWidget) -> None:
    """Lay out now, not on the next pass: a widget shown or grown after the card was laid out."""
    for widget in widgets:
        layout = widget.layout()
        if layout is not None:
            layout.invalidate()
            layout.activate()


def attach_records(screen: VerifyScreen) -> RecordDesk:
    """Give the verify screen its record button and record recognition."""
    return RecordDesk(screen)
