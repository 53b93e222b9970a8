"""The verify screen: scan, drop, open or paste a payslip code, and read the verdict at a glance.

Inputs: the camera (its own thread), image files and PDFs (open dialog or drop), typed or pasted
text, and a USB scanner, which "types" the code: into the code field that is typed text,
anywhere else :class:`~app.ui.verify.wedge_scanner.WedgeScanner` hands the burst to
:meth:`VerifyScreen.scanned`. A text is classified once, here at the edge
(:func:`app.inputs.classify.classify`): a payslip code goes to the pipeline as it is, anything
else is refused locally (nothing is sent, no verdict), and a verification record's receipt in it
is handed to the record desk. Files are read by the pipeline, off the GUI thread, which drops
answers that arrive after the operator moved on. This module decides what each input leads to
and wires the parts: pipeline, result page, camera feed, service line, scan page, record desk.

A result holds: it stays for ``settings.idle_timeout`` seconds (countdown on the card) or until
Next/Esc. Camera reads meanwhile are ignored (the card says another code is in view), so a
verdict never changes behind the operator's back; only a deliberate act (a drop, Try again,
Next) starts a new check. Then every widget that held the result is deleted and the camera may
accept the same code again. Only outcome states, error codes and request ids are logged.

Fail fast: no answer ends in CANNOT VERIFY within :data:`~app.shell.context.VERIFY_DEADLINE`
seconds (the client's deadline, backed by the pipeline's watchdog); a light health poll shows
whether the service is reachable before anyone scans.

Kiosk mode: larger type, verify only, no file dialogs (they open the file system to whoever
stands at the kiosk), settings behind the operator PIN, fully keyboard operable: the code field
has the focus while scanning, Next has it while a result shows, Esc clears.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
    QHideEvent,
    QKeySequence,
    QResizeEvent,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.api.errors import ClientCode
from app.inputs.classify import PayslipCode, classify
from app.inputs.reading import read_file
from app.receipts.check import receipts_on
from app.shell.context import AppContext
from app.ui.applicant.panel import install_applicant_check
from app.ui.pin_dialog import PinGuard, ask_pin
from app.ui.verify.camera import CameraFeed
from app.ui.verify.camera_worker import CAMERA_LOST_MESSAGE, CameraScanner, SourceOpener
from app.ui.verify.health import ServiceHealth
from app.ui.verify.pipeline import Given, VerifyPipeline
from app.ui.verify.record import RecordDesk
from app.ui.verify.result import SCANNED_HINT, ResultPage
from app.ui.verify.scan_page import ScanPage, inputs_sentence
from app.ui.verify.settings_dialog import edit_settings
from app.ui.verify.verdict_sound import VerdictSound
from app.ui.verify.wedge_scanner import WedgeScanner
from app.ui.widgets.card_parts import plain_label
from app.ui.widgets.inputs import accept_file_drag, dropped_files, sample_reading
from app.ui.widgets.style import screen_stylesheet
from app.ui.widgets.tasks import TaskRunner
from app.verify.flow import Outcome
from app.verify.verdicts import InputProblem
from service.protocol.vocabulary import Verdict

log = logging.getLogger("app.verify")


class VerifyScreen(QWidget):
    """The verify screen. ``kiosk`` switches to the large, locked-down front-desk layout.

    ``camera_opener``, ``decode_every`` and ``camera_retry_ms`` exist for tests and the bench
    (a scripted or recorded camera); by default the camera comes from ``settings.camera``.

    Signals:
        result_shown(str): a verdict is on the card ("verified", "not_verified",
            "cannot_verify").
        result_cleared(): the card was cleared (Next, Esc or the idle timeout).
        input_refused(str): an input got no verdict and nothing was sent; carries the reason
            ("NOT_A_PAYSLIP_CODE", "NO_CODE_FOUND", "INPUT_UNREADABLE").
        camera_state(str): "ready" or "lost" when the camera opens or disappears.
        service_state(str): "connected" or "unreachable", from the health poll and from
            verifications.
        verification_started(): a code is on its way to the service (tests count these).
    """

    result_shown = Signal(str)
    result_cleared = Signal()
    input_refused = Signal(str)
    camera_state = Signal(str)
    service_state = Signal(str)
    verification_started = Signal()

    def __init__(
        self,
        context: AppContext,
        tasks: TaskRunner,
        kiosk: bool = False,
        *,
        camera_opener: SourceOpener | None = None,
        decode_every: int = 2,
        camera_retry_ms: int = 3000,
        start_camera: bool = True,
    ) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.kiosk = kiosk
        self.setObjectName("verifyScreen")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.setStyleSheet(screen_stylesheet(kiosk))
        self.setAcceptDrops(True)
        self._another_in_view = False
        self._held_scan: str | None = None
        self._pin_guard = PinGuard(context.settings)
        self.sound = VerdictSound(lambda: bool(context.settings.verdict_sound))
        self.health = ServiceHealth(context, tasks, self, name_address=not kiosk)
        self.health.changed.connect(self.service_state)
        self.pipeline = VerifyPipeline(context, tasks, self)
        self.pipeline.started.connect(self.verification_started)
        self.pipeline.slow.connect(self._still_waiting)
        self.pipeline.refused.connect(self._refused_reading)
        self.pipeline.answered.connect(self._show)

        outer = QVBoxLayout(self)
        margin = 28 if kiosk else 20
        outer.setContentsMargins(margin, margin - 6, margin, margin)
        outer.setSpacing(14)
        header = self._build_header(start_camera)
        outer.addLayout(header)
        self.pages = QStackedWidget()
        self.scan_page = self._build_scan_page(start_camera)
        self.result_page = self._build_result_page()
        self.pipeline.checking_document.connect(self.result_page.show_checking_document)
        self.pages.addWidget(self.scan_page)
        self.pages.addWidget(self.result_page)
        outer.addWidget(self.pages, 1)
        self.applicant = (
            None
            if kiosk
            else install_applicant_check(  # docs/applicant.md
                context, tasks, header, self.pages, self.scan_page
            )
        )
        self.camera = CameraFeed(
            context.settings,
            self.preview,
            self.camera_status,
            self._on_camera_code,
            opener=camera_opener,
            decode_every=decode_every,
            retry_ms=camera_retry_ms,
            enabled=start_camera,
            parent=self,
        )
        self.camera.state.connect(self.camera_state)
        escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        escape.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        escape.activated.connect(self.clear_result)
        self.wedge = WedgeScanner(self)
        self.wedge.scanned.connect(self.scanned)
        self._set_tab_order()
        # Saves a verification record of a result; checks a record that was refused as no code.
        self.records = RecordDesk(context, tasks, self.card, self.notice, kiosk=kiosk, parent=self)

    # -- layout -------------------------------------------------------------------------------

    def _build_header(self, camera: bool) -> QHBoxLayout:
        header = QHBoxLayout()
        words = QVBoxLayout()
        words.setSpacing(2)
        words.addWidget(plain_label("Verify a payslip", "screenTitle"))
        self.subtitle = plain_label(
            inputs_sentence(self.kiosk, camera), "screenSubtitle", wrap=True
        )
        # Wraps to whatever width is left: its one-line width must not widen the window.
        self.subtitle.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        words.addWidget(self.subtitle)
        header.addLayout(words, 1)
        self.service_status = self.health.label
        header.addWidget(self.service_status, 0, Qt.AlignmentFlag.AlignTop)
        self.settings_button = QPushButton("Operator settings…" if self.kiosk else "Settings…")
        self.settings_button.setObjectName("settingsButton")
        self.settings_button.setAutoDefault(True)
        self.settings_button.setToolTip(
            "Camera, privacy timeout and service (PIN required)"
            if self.kiosk
            else "Camera, privacy timeout and service"
        )
        self.settings_button.clicked.connect(self.open_settings)
        header.addWidget(self.settings_button, 0, Qt.AlignmentFlag.AlignTop)
        return header

    def _build_scan_page(self, camera: bool) -> ScanPage:
        demo = self.context.demo
        page = ScanPage(self.kiosk, camera, list(demo.samples) if demo else [])
        page.submitted.connect(self.submit_text)
        page.image_requested.connect(self.choose_image)
        page.pdf_requested.connect(self.choose_pdf)
        page.sample_requested.connect(self.try_sample)
        # The screen's own names for the page's widgets (the tests and the kiosk's tab order).
        self.preview = page.preview
        self.camera_status = page.camera_status
        self.open_image_button = page.open_image_button
        self.open_pdf_button = page.open_pdf_button
        self.code_field = page.code_field
        self.verify_button = page.verify_button
        self.notice = page.notice
        self.sample_buttons = page.sample_buttons
        return page

    def _build_result_page(self) -> ResultPage:
        page = ResultPage(self.kiosk)
        page.expired.connect(self.clear_result)
        self.card = page.card
        self.card.next_requested.connect(self.next_code)
        self.card.retry_requested.connect(self.retry)
        self.card.shown.connect(self.result_shown)
        return page

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = [self.code_field, self.verify_button, *self.sample_buttons]
        if not self.kiosk:
            chain = [self.open_image_button, self.open_pdf_button, *chain]
        chain.append(self.settings_button)
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

    # -- inputs -------------------------------------------------------------------------------

    def submit_text(self) -> None:
        """Verify the pasted or typed code text (also what a USB barcode scanner types)."""
        text = self.code_field.text().strip()
        if not text:
            self.code_field.setFocus()
            return
        self._check_text(text, "text")

    def _check_text(self, text: str, source: str) -> None:
        """One text from the edge, classified once: a code is verified as it is; anything else
        is refused here, and a verification record's receipt in it checked."""
        given = classify(text)
        if isinstance(given, PayslipCode):
            self._verify(given, source)
            return
        self._refuse(
            Outcome(InputProblem.NOT_A_PAYSLIP_CODE), source, [given.text] if given else []
        )
        if source != "camera":
            self.code_field.selectAll()

    def open_path(self, path: str | Path) -> None:
        """Verify a PDF or image file (open dialogs and drops end here)."""
        file = Path(path)
        self._verify(lambda: read_file(file), "file")

    def try_sample(self, scan_url: str) -> None:
        """Demo: render a sample's badge in memory and read it like a photo of the badge."""
        self._verify(lambda: sample_reading(scan_url), "sample")

    def choose_image(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open a photo or scan of the badge", "", "Images (*.png *.jpg *.jpeg)"
        )
        if path:
            self.open_path(path)

    def choose_pdf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a payslip PDF", "", "PDF (*.pdf)")
        if path:
            self.open_path(path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt's name
        accept_file_drag(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        if files := dropped_files(event):
            self.open_path(files[0])

    # -- USB scanner (keyboard wedge, :mod:`app.ui.verify.wedge_scanner`) ------------------------

    def scanned(self, text: str) -> None:
        """A scan typed by a USB scanner while the focus was not on the code field.

        With no result on screen it is checked at once. With a result on screen (or a check
        under way) the hold rule applies as for the camera: the result stays, the card says a
        code was scanned, and Next checks that code (Esc or the timeout drop it). While an
        applicant's set is open, the scan is one more of its payslips."""
        if self.applicant is not None and self.pages.currentWidget() is self.applicant:
            self.applicant.add_code(text)
            return
        if not self.showing_result:
            self._check_text(text, "scanner")
            return
        log.info("scanned code held: a result is on screen")
        self._held_scan = text
        self.result_page.note_another_code(SCANNED_HINT)

    def next_code(self) -> None:
        """Next: clear the result, then check the code scanned meanwhile, if any."""
        held = self._held_scan
        self.clear_result()
        if held is not None:
            self._check_text(held, "scanner")

    def _on_camera_code(self, text: str) -> None:
        """A debounced camera read. Ignored while a result is shown or being checked: the
        verdict holds until Next, and the camera cannot restart a wait."""
        if self.applicant is not None and self.pages.currentWidget() is self.applicant:
            self.applicant.add_code(text)  # one more badge of the applicant's set
            return
        if self.showing_result:
            log.info("camera code ignored: a result is on screen")
            self._another_in_view = True  # said on the card, now or when the verdict arrives
            self.result_page.note_another_code()
            return
        self._check_text(text, "camera")

    # -- the pipeline -------------------------------------------------------------------------

    def _verify(self, given: Given, source: str) -> None:
        """Show the pending card, and hand the input to the pipeline."""
        self._another_in_view = False
        self._held_scan = None
        self.notice.hide()
        self.records.withdraw()
        self.result_page.show_pending()
        self.pages.setCurrentWidget(self.result_page)
        self.result_page.fit()
        self.card.banner.next_button.setFocus()
        self.pipeline.run(given, source)

    def retry(self) -> None:
        """Ask the service again about the same input (after CANNOT VERIFY)."""
        if self.pipeline.last_input is not None:
            self._verify(self.pipeline.last_input, "retry")

    def _still_waiting(self) -> None:
        self.result_page.show_pending(slow=True)

    def _refused_reading(self, outcome: Outcome, source: str) -> None:
        """The pipeline found no payslip code in what it read: every receipt on the input's
        pages (an applicant's record has one per payslip) is a verification record's."""
        self._refuse(outcome, source, receipts_on(self.pipeline.last_reading))

    def _refuse(self, outcome: Outcome, source: str, receipts: list[str] | None = None) -> None:
        """No verdict: back to the scan page with one plain line; nothing was sent. A
        verification record's ``receipts`` are then checked in that line."""
        log.info("verify source=%s refused: %s", source, outcome.reason)
        self.pipeline.cancel()
        self.result_page.clear()
        self.pages.setCurrentWidget(self.scan_page)
        self.notice.setText(outcome.explanation)
        self.notice.show()
        self.code_field.setFocus()
        self.input_refused.emit(outcome.reason)
        self.records.check(receipts or [])

    def _show(self, outcome: Outcome) -> None:
        self.pages.setCurrentWidget(self.result_page)
        seconds = max(1, int(self.context.settings.idle_timeout))
        self.result_page.show_outcome(outcome, seconds, another_in_view=self._another_in_view)
        self.records.offer(outcome)
        if self._held_scan is not None:
            self.result_page.note_another_code(SCANNED_HINT)
        if outcome.verdict is not None:
            self.sound.play(outcome.verdict)
        self.result_page.start_countdown()
        if outcome.code == ClientCode.SERVICE_UNREACHABLE:
            self.health.set_connected(False)
        elif outcome.verdict != Verdict.CANNOT_VERIFY:
            self.health.set_connected(True)

    def clear_result(self) -> None:
        """Forget the result (or cancel the pending one) and go back to scanning."""
        self.pipeline.cancel(forget=True)
        self._another_in_view = False
        self._held_scan = None
        self.notice.hide()
        self.records.withdraw()
        self.result_page.clear()
        # setText, not clear(): clear() is undoable, and Ctrl+Z would bring the last code back.
        self.code_field.setText("")
        self.pages.setCurrentWidget(self.scan_page)
        self.camera.release()
        self.code_field.setFocus()
        self.result_cleared.emit()

    @property
    def showing_result(self) -> bool:
        """A verdict is on screen, or a check is under way."""
        return self.pages.currentWidget() is self.result_page

    @property
    def pending(self) -> bool:
        """A check is under way."""
        return self.pipeline.pending

    @property
    def scanner(self) -> CameraScanner | None:
        """The running camera scanner, if any (tests and the bench feed it codes)."""
        return self.camera.scanner

    def poll_health(self) -> None:
        """Ask the service's /healthz now (the screen also asks every few seconds while shown)."""
        self.health.poll()

    # -- settings -----------------------------------------------------------------------------

    def open_settings(self) -> None:
        """The settings dialog, the camera handed over to it; in kiosk mode only after the
        operator PIN."""
        if self.kiosk and not ask_pin(self._pin_guard, self, required=True):
            return
        context = self.context
        edit_settings(context.settings, context.secrets, self, self.camera, kiosk=self.kiosk)

    # -- the screen's life ---------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.camera.paint()
        self.result_page.fit()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.camera.start()
        self.health.start()
        if not self.showing_result:
            self.code_field.setFocus()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt's name
        super().hideEvent(event)
        if not event.spontaneous():  # another screen was chosen, not a minimised window
            self.camera.stop()

    def shutdown(self) -> None:
        """Stop the camera thread and drop any result; MainWindow calls this on close."""
        self.camera.enabled = False
        self.health.stop()
        self.camera.stop()
        self.clear_result()


__all__ = ["CAMERA_LOST_MESSAGE", "VerifyScreen"]
