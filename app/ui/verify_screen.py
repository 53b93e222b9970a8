"""The verify screen: scan, drop, open or paste a payslip code, and read the verdict at a glance.

Four inputs feed one pipeline (:func:`app.verify_flow.verify_reading`, shared with the CLI):
the camera (through :class:`~app.ui.camera_worker.CameraScanner`, in its own thread), image
files, PDFs (open dialog or drag and drop) and pasted or typed barcode text (a USB barcode
scanner "types" the code and presses Enter into the focused field, so that path doubles as
scanner support). Reading files and calling the service run on the :class:`TaskRunner`, never on
the GUI thread; each request carries a generation number so a result that arrives after the
operator moved on (Next, Esc, a newer scan) is dropped instead of popping up over the next person.

A result holds: it stays on screen for ``settings.idle_timeout`` seconds (countdown on the card)
or until Next/Esc, whatever the camera sees meanwhile. Camera reads while a result is shown or
being checked are ignored (the card says another code is in view), so a verdict never changes
behind the operator's back and a camera that keeps seeing the code cannot restart the wait. Only
a deliberate act (a drop, Try again, Next) starts a new check. Then every widget that held the
result is deleted and the camera may accept the same code again. Only outcome states, error codes
and request ids are logged.

Fail fast: a verification that gets no answer ends in CANNOT VERIFY within
:data:`~app.context.VERIFY_DEADLINE` seconds (the API client's deadline, backed by a watchdog
here), and a light health poll shows whether the service is reachable before anyone scans.
Text that is not a payslip code is refused here, locally: nothing is sent and no verdict shown.

Kiosk mode: larger type, verify only, no file dialogs (they open the file system to whoever
stands at the kiosk), settings behind the operator PIN, fully keyboard operable: the code field
has the focus while scanning, Next has it while a result shows, Esc clears.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
    QHideEvent,
    QImage,
    QKeySequence,
    QPixmap,
    QResizeEvent,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.context import VERIFY_DEADLINE, AppContext
from app.inputs.reading import InputError, InputReading
from app.ui.camera_worker import CAMERA_LOST_MESSAGE, CameraScanner, SourceOpener, opencv_opener
from app.ui.card_parts import plain_label
from app.ui.pin_dialog import PinGuard, ask_pin
from app.ui.result_card import ANOTHER_CODE_HINT, ResultCard
from app.ui.scan_page import CAMERA_HINT, ScanPage
from app.ui.settings_dialog import SettingsDialog
from app.ui.style import screen_stylesheet
from app.ui.tasks import TaskRunner
from app.ui.verdict_sound import VerdictSound
from app.ui.verify_inputs import (
    local_files,
    reading_from_file,
    reading_from_image_bytes,
    sample_badge_png,
)
from app.verify_flow import Attempt, Outcome, is_payslip_code, refusal, verify_reading

log = logging.getLogger("app.verify")

SLOW_MS = 1500
"""After this long without an answer the card says the service is slow."""
WATCHDOG_MS = round(VERIFY_DEADLINE * 1000) + 700
"""The latest a verification may end: past it the card says CANNOT VERIFY whatever the worker
thread is still doing (its late answer is dropped). Under the 5 s the desk was promised."""
HEALTH_MS = 10_000
"""How often the screen asks the service's /healthz (one short GET, no auth)."""

Reader = Callable[[], InputReading]


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
        self._camera_opener = camera_opener
        self._decode_every = decode_every
        self._camera_retry_ms = camera_retry_ms
        self._camera_enabled = start_camera
        self._generation = 0
        self._pending = False
        self._another_in_view = False
        self._last_reader: Reader | None = None
        self._remaining = 0
        self._pin_guard = PinGuard(context.settings)
        self.sound = VerdictSound(lambda: bool(context.settings.verdict_sound))
        self.scanner: CameraScanner | None = None
        self._pixmap: QPixmap | None = None

        outer = QVBoxLayout(self)
        margin = 28 if kiosk else 20
        outer.setContentsMargins(margin, margin - 6, margin, margin)
        outer.setSpacing(14)
        outer.addLayout(self._build_header())
        self.pages = QStackedWidget()
        self.scan_page = self._build_scan_page()
        self.result_page = self._build_result_page()
        self.pages.addWidget(self.scan_page)
        self.pages.addWidget(self.result_page)
        outer.addWidget(self.pages, 1)

        self._countdown = QTimer(self)
        self._countdown.setInterval(1000)
        self._countdown.timeout.connect(self._tick_countdown)
        self._slow = QTimer(self)
        self._slow.setSingleShot(True)
        self._slow.setInterval(SLOW_MS)
        self._slow.timeout.connect(self._still_waiting)
        self._watchdog = QTimer(self)
        self._watchdog.setSingleShot(True)
        self._watchdog.timeout.connect(self._give_up)
        self._health = QTimer(self)
        self._health.setInterval(HEALTH_MS)
        self._health.timeout.connect(self.poll_health)
        self._health_busy = False
        escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        escape.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        escape.activated.connect(self.clear_result)
        self._set_tab_order()

    # -- layout -------------------------------------------------------------------------------

    def _build_header(self) -> QHBoxLayout:
        header = QHBoxLayout()
        words = QVBoxLayout()
        words.setSpacing(2)
        words.addWidget(plain_label("Verify a payslip", "screenTitle"))
        self.subtitle = plain_label(self._subtitle_text(), "screenSubtitle", wrap=True)
        words.addWidget(self.subtitle)
        header.addLayout(words, 1)
        self.service_status = plain_label("○ Checking the service…", "serviceStatus")
        self.service_status.setProperty("checking", True)
        self.service_status.setAccessibleName("Service state")
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

    def _subtitle_text(self) -> str:
        """Names only the inputs this screen offers (the kiosk has no files)."""
        parts = []
        if self._camera_enabled:
            parts.append("hold its QR badge to the camera")
        if not self.kiosk:
            parts.append("drop or open the PDF")
        parts.append("scan or type the code text" if self.kiosk else "paste the code text")
        text = "; ".join(parts[:-1]) + ("; or " if len(parts) > 1 else "") + parts[-1]
        return text[0].upper() + text[1:] + "."

    def _build_scan_page(self) -> ScanPage:
        demo = self.context.demo
        page = ScanPage(self.kiosk, self._camera_enabled, list(demo.samples) if demo else [])
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

    def _build_result_page(self) -> QWidget:
        self.card = ResultCard(self.kiosk)
        self.card.next_requested.connect(self.clear_result)
        self.card.retry_requested.connect(self.retry)
        self.card.shown.connect(self.result_shown)
        scroll = QScrollArea()
        self.result_scroll = scroll
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.card)
        scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        return scroll

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
        if not is_payslip_code(text):
            self._refuse(Outcome("NOT_A_PAYSLIP_CODE"), "text")
            self.code_field.selectAll()
            return
        self._verify(lambda: InputReading(kind="text", payloads=[text]), "text")

    def open_path(self, path: str | Path) -> None:
        """Verify a PDF or image file (open dialogs and drops end here)."""
        file = Path(path)
        self._verify(lambda: reading_from_file(file), "file")

    def try_sample(self, scan_url: str) -> None:
        """Demo: render a sample's badge in memory and read it like a photo of the badge."""
        self._verify(lambda: reading_from_image_bytes(sample_badge_png(scan_url)), "sample")

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
        if local_files(list(event.mimeData().urls())):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        files = local_files(list(event.mimeData().urls()))
        if not files:
            event.ignore()
            return
        event.acceptProposedAction()
        self.open_path(files[0])

    def _on_camera_code(self, text: str) -> None:
        """A debounced camera read. Ignored while a result is shown or being checked: the
        verdict holds until Next, and the camera cannot restart a wait."""
        if self.showing_result:
            log.info("camera code ignored: a result is on screen")
            self._another_in_view = True  # said on the card, now or when the verdict arrives
            self.card.set_hint(ANOTHER_CODE_HINT)
            return
        if not is_payslip_code(text):
            self._refuse(Outcome("NOT_A_PAYSLIP_CODE"), "camera")
            return
        self._verify(lambda: InputReading(kind="image", payloads=[text]), "camera")

    # -- the pipeline -------------------------------------------------------------------------

    def _verify(self, reader: Reader, source: str) -> None:
        """Read the input off the GUI thread, then (if it holds a payslip code) verify it."""
        self._generation += 1
        generation = self._generation
        self._last_reader = reader
        self._another_in_view = False
        self._pending = True
        self._countdown.stop()
        self._watchdog.stop()
        self.notice.hide()
        self.card.show_pending()
        self.card.banner.next_button.setText("Cancel  (Esc)")
        self.pages.setCurrentWidget(self.result_page)
        self._fit_card()
        self.card.banner.next_button.setFocus()
        self.tasks.run(
            reader,
            lambda reading: self._read(generation, source, reading),
            lambda exc: self._failed(generation, source, exc),
        )

    def _read(self, generation: int, source: str, reading: InputReading) -> None:
        if generation != self._generation:
            return
        refused = refusal(reading)
        if refused is not None:
            self._refuse(refused, source)
            return
        client = self.context.verifier  # read now: a test or a settings change may swap it
        self.verification_started.emit()
        self._slow.start()
        self._watchdog.start(WATCHDOG_MS)
        self.tasks.run(
            lambda: verify_reading(client, reading),
            lambda outcome: self._finished(generation, source, outcome),
            lambda exc: self._failed(generation, source, exc),
        )

    def retry(self) -> None:
        """Ask the service again about the same input (after CANNOT VERIFY)."""
        if self._last_reader is not None:
            self._verify(self._last_reader, "retry")

    def _still_waiting(self) -> None:
        if self._pending:
            self.card.show_pending(slow=True)
            self.card.banner.next_button.setText("Cancel  (Esc)")

    def _give_up(self) -> None:
        """The watchdog: no answer in time is CANNOT VERIFY; a late answer is dropped."""
        if not self._pending:
            return
        self._generation += 1
        log.info("verify gave up after %d ms", WATCHDOG_MS)
        self._show(Outcome("SERVICE_UNREACHABLE", [Attempt(code="SERVICE_UNREACHABLE")]))

    def _finished(self, generation: int, source: str, outcome: Outcome) -> None:
        if generation != self._generation:
            return  # the operator moved on; never show a stale result
        log.info(
            "verify source=%s state=%s code=%s request_id=%s",
            source,
            outcome.state,
            outcome.code or "-",
            outcome.request_id or "-",
        )
        if outcome.verdict is None:
            self._refuse(outcome, source)
            return
        self._show(outcome)

    def _failed(self, generation: int, source: str, exc: Exception) -> None:
        if generation != self._generation:
            return
        if isinstance(exc, InputError):
            log.info("verify source=%s input unreadable", source)
            self._refuse(
                Outcome("INPUT_UNREADABLE", detail=f"This file could not be read: {exc}."), source
            )
            return
        log.error("verify source=%s failed: %s", source, type(exc).__name__)
        self._show(Outcome("API_ERROR"))

    def _refuse(self, outcome: Outcome, source: str) -> None:
        """No verdict: back to the scan page with one plain line; nothing was sent."""
        log.info("verify source=%s refused: %s", source, outcome.reason)
        self._generation += 1
        self._pending = False
        self._slow.stop()
        self._watchdog.stop()
        self._countdown.stop()
        self.card.clear()
        self.pages.setCurrentWidget(self.scan_page)
        self.notice.setText(outcome.explanation)
        self.notice.show()
        self.code_field.setFocus()
        self.input_refused.emit(outcome.reason)

    def _show(self, outcome: Outcome) -> None:
        self._pending = False
        self._slow.stop()
        self._watchdog.stop()
        self.pages.setCurrentWidget(self.result_page)
        self._remaining = max(1, int(self.context.settings.idle_timeout))
        self.card.set_countdown(self._remaining)
        self.card.banner.next_button.setText("Next  (Esc)")
        self._fit_card()
        self.card.show_outcome(outcome)
        if self._another_in_view:
            self.card.set_hint(ANOTHER_CODE_HINT)
        if outcome.verdict is not None:
            self.sound.play(outcome.verdict)
        self._countdown.start()
        focus = self.card.banner.retry_button
        (focus if focus.isVisibleTo(self.card) else self.card.banner.next_button).setFocus()
        if outcome.code == "SERVICE_UNREACHABLE":
            self._set_service_state(False)
        elif outcome.verdict != "cannot_verify":
            self._set_service_state(True)

    def _tick_countdown(self) -> None:
        self._remaining -= 1
        if self._remaining <= 0:
            self.clear_result()
        else:
            self.card.set_countdown(self._remaining)

    def clear_result(self) -> None:
        """Forget the result (or cancel the pending one) and go back to scanning."""
        self._generation += 1
        self._pending = False
        self._last_reader = None
        self._another_in_view = False
        self._slow.stop()
        self._watchdog.stop()
        self._countdown.stop()
        self.notice.hide()
        self.card.clear()
        # setText, not clear(): clear() is undoable, and Ctrl+Z would bring the last code back.
        self.code_field.setText("")
        self.pages.setCurrentWidget(self.scan_page)
        if self.scanner is not None:
            self.scanner.release()
        self.code_field.setFocus()
        self.result_cleared.emit()

    @property
    def showing_result(self) -> bool:
        """A verdict is on screen, or a check is under way."""
        return self.pages.currentWidget() is self.result_page

    @property
    def pending(self) -> bool:
        return self._pending

    def _fit_card(self) -> None:
        """The verdict panel: its share of the visible card area, and never under half of the
        window (the whole point of the screen is the verdict)."""
        half_window = (self.window().height() + 1) // 2
        self.card.set_available_height(self.result_scroll.viewport().height(), half_window)

    # -- service health -----------------------------------------------------------------------

    def poll_health(self) -> None:
        """One short unauthenticated GET of /healthz, off the GUI thread (one at a time)."""
        url = self.context.service_url
        if self._health_busy or not url:
            return
        self._health_busy = True
        client = self.context.verifier

        def done(ok: bool) -> None:
            self._health_busy = False
            self._set_service_state(bool(ok))

        def failed(exc: Exception) -> None:
            self._health_busy = False
            self._set_service_state(False)

        self.tasks.run(lambda: client.healthz(url), done, failed)

    def _set_service_state(self, connected: bool) -> None:
        self.service_status.setText(
            "● Service connected" if connected else "● Service not reachable"
        )
        self.service_status.setProperty("problem", not connected)
        self.service_status.setProperty("checking", False)
        self.service_status.style().unpolish(self.service_status)
        self.service_status.style().polish(self.service_status)
        self.service_state.emit("connected" if connected else "unreachable")

    # -- settings -----------------------------------------------------------------------------

    def open_settings(self) -> None:
        """The settings dialog; in kiosk mode only after the operator PIN.

        The camera is handed over to the dialog's preview while it is open (most cameras cannot
        be opened twice) and taken back when it closes."""
        if self.kiosk and not ask_pin(self._pin_guard, self, required=True):
            return
        camera_was_on = self.scanner is not None
        self.stop_camera()
        dialog = SettingsDialog(
            self.context.settings, self.context.secrets, self, allow_no_pin=not self.kiosk
        )
        try:
            dialog.exec()
        finally:
            dialog.deleteLater()
            if camera_was_on:
                self.start_camera()

    # -- camera -------------------------------------------------------------------------------

    def start_camera(self) -> None:
        if self.scanner is not None or not self._camera_enabled:
            return
        opener = self._camera_opener or opencv_opener(self.context.settings.camera)
        scanner = CameraScanner(
            opener, decode_every=self._decode_every, retry_ms=self._camera_retry_ms, parent=self
        )
        scanner.preview.connect(self._show_preview)
        scanner.code_accepted.connect(self._on_camera_code)
        scanner.camera_ready.connect(self._camera_ready)
        scanner.camera_lost.connect(self._camera_lost)
        self.scanner = scanner
        self.camera_status.setText("Starting the camera…")
        scanner.start()

    def stop_camera(self) -> None:
        scanner, self.scanner = self.scanner, None
        if scanner is not None:
            scanner.stop()
            scanner.deleteLater()

    def restart_camera(self) -> None:
        self.stop_camera()
        self.start_camera()

    def _camera_ready(self, description: str) -> None:
        self._set_camera_problem(False)
        self.camera_status.setText(CAMERA_HINT)
        self.camera_status.setToolTip(description)
        self.camera_state.emit("ready")

    def _camera_lost(self, message: str) -> None:
        self._pixmap = None
        self.preview.clear()
        self.preview.setText("No camera picture")
        self._set_camera_problem(True)
        seconds = max(1, round(self._camera_retry_ms / 1000))
        self.camera_status.setText(f"{message}. Trying again every {seconds} s.")
        self.camera_state.emit("lost")

    def _set_camera_problem(self, problem: bool) -> None:
        self.camera_status.setProperty("problem", problem)
        self.camera_status.style().unpolish(self.camera_status)
        self.camera_status.style().polish(self.camera_status)

    def _show_preview(self, image: QImage) -> None:
        self._pixmap = QPixmap.fromImage(image)
        self._paint_preview()

    def _paint_preview(self) -> None:
        if self._pixmap is None:
            return
        self.preview.setPixmap(
            self._pixmap.scaled(
                self.preview.size(),
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        )

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._paint_preview()
        self._fit_card()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.start_camera()
        if not self._health.isActive():
            self._health.start()
            self.poll_health()
        if not self.showing_result:
            self.code_field.setFocus()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt's name
        super().hideEvent(event)
        if not event.spontaneous():  # another screen was chosen, not a minimised window
            self.stop_camera()

    def shutdown(self) -> None:
        """Stop the camera thread and drop any result; MainWindow calls this on close."""
        self._camera_enabled = False
        self._health.stop()
        self.stop_camera()
        self.clear_result()


__all__ = ["CAMERA_LOST_MESSAGE", "VerifyScreen", "reading_from_file", "reading_from_image_bytes"]
