"""Camera scanning off the GUI thread: capture, throttled decoding, debounce and a live preview.

A :class:`CameraWorker` lives in its own ``QThread`` and is driven by a timer in that thread's
event loop, not by a ``while`` loop: between two frames the loop delivers the queued ``release``
and ``stop`` calls from the GUI, so no flag or lock is shared with the GUI for them, and a stop
never waits longer than one frame. Reading a frame and decoding it both happen in the worker
thread; the GUI thread only paints the newest preview.

Only the newest preview is kept: the worker holds one image and signals that it is there; until
the GUI has taken it, newer frames simply replace it. A slow GUI therefore drops frames instead of
piling up a queue of stale images (and memory). Decoding runs on every ``decode_every``-th frame,
on the centred grey crop the preview outlines (:func:`app.scan.frames.prepare_frame`), and a code
is accepted only when the :class:`~app.scan.debounce.Debouncer` says so; it stays held, so a
badge left in front of the lens is verified once, until the GUI calls :meth:`CameraScanner.release`
when the result leaves the screen.

When the camera disappears (unplugged, or the video file used by tests and demos ends) the worker
says so once and tries to open it again every ``retry_ms``, so the desk never needs a restart.
It tells "No camera found" (none was ever opened: nothing to reconnect) from "Camera
disconnected" (one was working), because the two need different things from the operator.
Decoded texts are never logged: they are encrypted payslips.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np
from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QImage

from app.scan.cameras import resolve_camera
from app.scan.debounce import Debouncer
from app.scan.decoders import Decoder, decoder_chain
from app.scan.frames import CameraUnavailable, FrameSource, OpenCVSource, crop_box, prepare_frame

log = logging.getLogger("app.camera")

CAMERA_LOST_MESSAGE = "Camera disconnected — reconnect it or choose another in Settings"
NO_CAMERA_MESSAGE = "No camera found — connect one, or choose one in Settings"
CROP_FRACTION = 0.85
"""Share of the frame's short side that is decoded and outlined in the preview."""
DEFAULT_FILE_FPS = 25.0
CAMERA_TOLERATED_MISSES = 15
"""Cameras drop frames now and then; this many misses in a row mean it is gone."""


_LINGERING: dict[QThread, CameraWorker] = {}
"""Camera threads that did not stop in time (a hung driver) and their workers, kept referenced
until the thread has ended. Destroying a running QThread aborts the whole process."""


def _prune_lingering() -> None:
    """Let go of lingering camera threads that have ended since (GUI thread only)."""
    for thread in [t for t in _LINGERING if t.isFinished()]:
        del _LINGERING[thread]
        thread.deleteLater()


@dataclass(frozen=True)
class OpenedSource:
    """A frame source ready to read, and how often to read it.

    ``interval_ms`` is 0 for a live camera, whose ``read`` blocks until the next frame, and the
    file's frame period for a video file, which would otherwise be read as fast as the disk
    allows (a "camera" running at 2000 fps).
    """

    source: FrameSource
    interval_ms: int
    description: str


SourceOpener = Callable[[], OpenedSource]


@dataclass
class ScanStats:
    """Counters the worker keeps for tests and the bench (plain ints: safe to read any time).

    Kept outside the worker QObject so they can still be read after the worker is deleted.
    """

    frames_read: int = 0
    """Frames delivered by the source."""
    frames_decoded: int = 0
    """Frames handed to the decoder (every ``decode_every``-th)."""
    sightings: int = 0
    """Decoded frames in which at least one QR text was found."""
    accepted: int = 0
    """Codes the debounce accepted."""


def camera_target(setting: str) -> int | str:
    """``settings.camera`` as OpenCV wants it: a device index, or a video file path.

    Raises CameraUnavailable when the camera saved by name is not connected now."""
    target = resolve_camera(setting)
    if target is None:
        raise CameraUnavailable("the chosen camera is not connected")
    return target


def opencv_opener(setting: str) -> SourceOpener:
    """Opens ``settings.camera`` through OpenCV each time it is called (first use and retries);
    a camera saved by name is looked up again each time (it may come back at another index)."""

    def open_source() -> OpenedSource:
        target = camera_target(setting)
        fps: list[float] = []

        def capture(which: int | str) -> cv2.VideoCapture:
            cap = cv2.VideoCapture(which)
            if isinstance(which, int):
                # Keep the driver's queue short too: an old frame is a wrong frame.
                cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)
            else:
                fps.append(float(cap.get(cv2.CAP_PROP_FPS) or 0.0))
            return cap

        misses = CAMERA_TOLERATED_MISSES if isinstance(target, int) else 1
        source = OpenCVSource(target, tolerated_misses=misses, capture_factory=capture)
        rate = fps[0] if fps and 1.0 <= fps[0] <= 240.0 else DEFAULT_FILE_FPS
        interval = 0 if isinstance(target, int) else round(1000 / rate)
        return OpenedSource(source, interval, source.description)

    return open_source


class CameraWorker(QObject):
    """Reads frames, decodes some of them and reports accepted codes; lives in a worker thread.

    Signals (emitted from the worker thread, delivered queued to GUI-thread receivers):
        preview_ready(): a new preview image is waiting in :meth:`take_preview`.
        code_accepted(str): the debounce accepted this QR text (held until released).
        camera_ready(str): the source opened; carries its description ("camera 0").
        camera_lost(str): the source is unavailable or stopped; carries a message for the user
            (:data:`NO_CAMERA_MESSAGE` until a camera has worked, then
            :data:`CAMERA_LOST_MESSAGE`). Emitted once per outage, not on every retry.
    """

    preview_ready = Signal()
    code_accepted = Signal(str)
    camera_ready = Signal(str)
    camera_lost = Signal(str)

    def __init__(
        self,
        opener: SourceOpener,
        *,
        decoder: Decoder | None = None,
        debouncer: Debouncer | None = None,
        decode_every: int = 2,
        retry_ms: int = 3000,
        crop_fraction: float = CROP_FRACTION,
        preview_width: int = 640,
        stats: ScanStats | None = None,
    ) -> None:
        super().__init__()
        if decode_every < 1:
            raise ValueError("decode_every must be at least 1")
        self._opener = opener
        self._decoder = decoder or decoder_chain()
        self._debouncer = debouncer or Debouncer(required=2, window=3)
        self._decode_every = decode_every
        self._retry_ms = retry_ms
        self._fraction = crop_fraction
        self._preview_width = preview_width
        self._source: FrameSource | None = None
        self._tick_timer: QTimer | None = None
        self._retry_timer: QTimer | None = None
        self._lost = False
        self._ever_opened = False
        self._preview_lock = threading.Lock()  # the GUI takes the preview from its own thread
        self._preview: QImage | None = None
        self.stats = stats or ScanStats()

    # -- slots run in the worker thread -------------------------------------------------------

    @Slot()
    def start(self) -> None:
        """Create the timers in this thread (a timer belongs to the thread that made it)."""
        self._tick_timer = QTimer(self)
        self._tick_timer.timeout.connect(self._tick)
        self._retry_timer = QTimer(self)
        self._retry_timer.setSingleShot(True)
        self._retry_timer.timeout.connect(self._open)
        self._open()

    @Slot()
    def stop(self) -> None:
        """Stop reading, release the device and end the thread's event loop."""
        for timer in (self._tick_timer, self._retry_timer):
            if timer is not None:
                timer.stop()
        self._close_source()
        thread = self.thread()
        app = QCoreApplication.instance()
        # Never quit the GUI thread's loop (a worker driven directly, as in a unit test).
        if thread is not None and (app is None or thread is not app.thread()):
            thread.quit()

    @Slot()
    def release(self) -> None:
        """The result left the screen: the held code may be accepted again."""
        self._debouncer.release()

    # -- called from the GUI thread -----------------------------------------------------------

    def take_preview(self) -> QImage | None:
        """The newest preview, once; None if it was already taken."""
        with self._preview_lock:
            image, self._preview = self._preview, None
        return image

    # -- internals ----------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            opened = self._opener()
        except CameraUnavailable as exc:
            self._report_lost(str(exc))
            return
        except Exception as exc:  # OpenCV backends fail in odd ways; none may kill the thread
            self._report_lost(type(exc).__name__)
            return
        self._source = opened.source
        self._lost = False
        self._ever_opened = True
        log.info("camera opened: %s", opened.description)
        self.camera_ready.emit(opened.description)
        assert self._tick_timer is not None
        self._tick_timer.start(opened.interval_ms)

    def _report_lost(self, reason: str) -> None:
        self._close_source()
        if self._tick_timer is not None:
            self._tick_timer.stop()
        if not self._lost:
            self._lost = True
            log.info("camera unavailable (%s); retrying every %d ms", reason, self._retry_ms)
            self.camera_lost.emit(CAMERA_LOST_MESSAGE if self._ever_opened else NO_CAMERA_MESSAGE)
        if self._retry_timer is not None:
            self._retry_timer.start(self._retry_ms)

    def _close_source(self) -> None:
        if self._source is not None:
            try:
                self._source.close()
            finally:
                self._source = None

    @Slot()
    def _tick(self) -> None:
        if self._source is None:
            return
        try:
            frame = self._source.read()
        except CameraUnavailable as exc:
            self._report_lost(str(exc))
            return
        if frame is None:
            return
        self.stats.frames_read += 1
        if self.stats.frames_read % self._decode_every == 0:
            self._decode(frame)
        self._offer_preview(frame)

    def _decode(self, frame: np.ndarray) -> None:
        try:
            texts = self._decoder.decode(prepare_frame(frame, fraction=self._fraction))
        except ValueError:  # an odd frame shape; the next frame will do
            return
        self.stats.frames_decoded += 1
        if texts:
            self.stats.sightings += 1
        accepted = self._debouncer.feed(texts)
        if accepted is not None:
            self.stats.accepted += 1
            log.info("camera code accepted")
            self.code_accepted.emit(accepted)

    def _offer_preview(self, frame: np.ndarray) -> None:
        image = preview_image(frame, self._preview_width, self._fraction)
        if image is None:
            return
        with self._preview_lock:
            waiting = self._preview is not None
            self._preview = image
        if not waiting:  # the GUI has not taken the last one yet: it will get this one instead
            self.preview_ready.emit()


def preview_image(frame: np.ndarray, width: int, fraction: float) -> QImage | None:
    """A small RGB copy of ``frame`` with the decoding square outlined, as a QImage.

    QImage (unlike QPixmap) may be built outside the GUI thread; ``copy()`` detaches it from the
    numpy buffer, which is reused for the next frame.
    """
    if frame.ndim == 2:
        frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        return None
    if frame.shape[2] == 4:
        frame = cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    height, width_in = frame.shape[:2]
    scale = min(1.0, width / width_in)
    small = (
        cv2.resize(
            frame,
            (round(width_in * scale), round(height * scale)),
            interpolation=cv2.INTER_AREA,
        )
        if scale < 1.0
        else frame.copy()
    )
    h, w = small.shape[:2]
    x, y, side, _ = crop_box(h, w, fraction)
    thickness = max(2, w // 200)
    corner = side // 6
    for (cx, cy), (dx, dy) in (
        ((x, y), (1, 1)),
        ((x + side, y), (-1, 1)),
        ((x, y + side), (1, -1)),
        ((x + side, y + side), (-1, -1)),
    ):
        cv2.line(small, (cx, cy), (cx + dx * corner, cy), (255, 255, 255), thickness)
        cv2.line(small, (cx, cy), (cx, cy + dy * corner), (255, 255, 255), thickness)
    rgb = np.ascontiguousarray(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
    image = QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888)
    return image.copy()


class CameraScanner(QObject):
    """The GUI side's handle on one camera worker and its thread (one scanner open at a time).

    Signals (delivered on the GUI thread):
        preview(QImage): the newest preview frame.
        code_accepted(str): a debounced QR text.
        camera_ready(str): the camera opened (again); carries its description.
        camera_lost(str): the camera is unavailable; carries the message to show.
    """

    preview = Signal(QImage)
    code_accepted = Signal(str)
    camera_ready = Signal(str)
    camera_lost = Signal(str)
    _release_requested = Signal()
    _stop_requested = Signal()

    def __init__(
        self,
        opener: SourceOpener,
        *,
        decode_every: int = 2,
        retry_ms: int = 3000,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._opener = opener
        self._decode_every = decode_every
        self._retry_ms = retry_ms
        self._thread: QThread | None = None
        self.worker: CameraWorker | None = None
        self.stats = ScanStats()
        """The current (or last) worker's counters."""

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        _prune_lingering()
        if self._thread is not None:
            return
        thread = QThread()
        thread.setObjectName("camera")
        self.stats = ScanStats()
        worker = CameraWorker(
            self._opener,
            decode_every=self._decode_every,
            retry_ms=self._retry_ms,
            stats=self.stats,
        )
        worker.moveToThread(thread)
        thread.started.connect(worker.start)
        # Qt runs deferred deletes after finished(), still in the worker thread: the worker and
        # its timers die in the thread that owns them.
        thread.finished.connect(worker.deleteLater)
        worker.preview_ready.connect(self._take_preview)
        worker.code_accepted.connect(self.code_accepted)
        worker.camera_ready.connect(self.camera_ready)
        worker.camera_lost.connect(self.camera_lost)
        self._release_requested.connect(worker.release)
        self._stop_requested.connect(worker.stop)
        self._thread, self.worker = thread, worker
        thread.start()

    def release(self) -> None:
        """Let the held code be accepted again (its result has left the screen)."""
        if self.worker is not None:
            self._release_requested.emit()

    def stop(self, timeout_ms: int = 5000) -> None:
        """Stop the worker and wait for its thread; safe to call twice."""
        _prune_lingering()
        thread, worker = self._thread, self.worker
        if thread is None or worker is None:
            return
        self._stop_requested.emit()
        self._thread, self.worker = None, None
        if thread.wait(timeout_ms):
            # The worker deleted itself when the thread finished; its connections went with it.
            thread.deleteLater()
            return
        # A camera driver stuck inside open() or read(). Destroying a running QThread aborts the
        # process, so the thread is kept alive until it finishes by itself, then deleted.
        # The worker is referenced too: dropping the last Python reference to it would delete
        # it from this thread while it still runs in its own. Both are dropped by a later
        # start() or stop() once the thread has ended (see _prune_lingering), from this thread,
        # without any slot on the dying thread's own signals.
        log.warning("camera thread did not stop in %d ms; letting it finish", timeout_ms)
        _LINGERING[thread] = worker

    @Slot()
    def _take_preview(self) -> None:
        worker = self.worker
        if worker is None:
            return
        image = worker.take_preview()
        if image is not None:
            self.preview.emit(image)
