"""The verify screen's camera: when the scanner runs, and what its preview and status line show.

Kept apart from the screen because its life follows other things than a verification does: the
camera starts when the screen is shown, stops when another screen is chosen or the settings dialog
borrows it (most cameras cannot be opened twice), and keeps retrying while it is unplugged. The
scanner itself (capture, decoding, debounce) runs in its own thread, see
:mod:`app.ui.verify.camera_worker`; this class only wires it to the page's preview and status line,
and its one code signal straight to the screen's ``on_code`` (no relay). What a code leads to is the
screen's business.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel

from app.settings.desk import Settings
from app.ui.verify.camera_worker import CameraScanner, SourceOpener, opencv_opener
from app.ui.verify.scan_page import CAMERA_HINT


class CameraFeed(QObject):
    """The camera of one verify screen, shown in ``preview`` and described in ``status``.

    ``opener`` (a scripted or recorded camera for tests and the bench) replaces the camera named
    in ``settings.camera``; ``enabled`` False never starts one.

    ``on_code`` is called on the GUI thread with each code the scanner accepts (debounced; held
    until :meth:`release`).

    Signals:
        state(str): "ready" or "lost" when the camera opens or disappears.
    """

    state = Signal(str)

    def __init__(
        self,
        settings: Settings,
        preview: QLabel,
        status: QLabel,
        on_code: Callable[[str], None],
        *,
        opener: SourceOpener | None,
        decode_every: int,
        retry_ms: int,
        enabled: bool,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.preview = preview
        self.status = status
        self._on_code = on_code
        self.enabled = enabled
        self.scanner: CameraScanner | None = None
        self._opener = opener
        self._decode_every = decode_every
        self._retry_ms = retry_ms
        self._pixmap: QPixmap | None = None

    def start(self) -> None:
        if self.scanner is not None or not self.enabled:
            return
        opener = self._opener or opencv_opener(self.settings.camera)
        scanner = CameraScanner(
            opener, decode_every=self._decode_every, retry_ms=self._retry_ms, parent=self
        )
        scanner.preview.connect(self._show_preview)
        scanner.code_accepted.connect(self._on_code)
        scanner.camera_ready.connect(self._ready)
        scanner.camera_lost.connect(self._lost)
        self.scanner = scanner
        self.status.setText("Starting the camera…")
        scanner.start()

    def stop(self) -> None:
        scanner, self.scanner = self.scanner, None
        if scanner is not None:
            scanner.stop()
            scanner.deleteLater()

    def release(self) -> None:
        """The result left the screen: the code in view may be accepted again."""
        if self.scanner is not None:
            self.scanner.release()

    def _ready(self, description: str) -> None:
        self._set_problem(False)
        self.status.setText(CAMERA_HINT)
        self.status.setToolTip(description)
        self.state.emit("ready")

    def _lost(self, message: str) -> None:
        self._pixmap = None
        self.preview.clear()
        self.preview.setText("No camera picture")
        self._set_problem(True)
        seconds = max(1, round(self._retry_ms / 1000))
        self.status.setText(f"{message}. Trying again every {seconds} s.")
        self.state.emit("lost")

    def _set_problem(self, problem: bool) -> None:
        self.status.setProperty("problem", problem)
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    def _show_preview(self, image: QImage) -> None:
        self._pixmap = QPixmap.fromImage(image)
        self.paint()

    def paint(self) -> None:
        """Scale the newest frame to the preview (again after a resize)."""
        if self._pixmap is None:
            return
        self.preview.setPixmap(
            self._pixmap.scaled(
                self.preview.size(),
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        )
