"""The camera worker: debounce and hold, newest-frame-only preview, losing and regaining it."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import segno

from app.scan.cameras import camera_label, list_cameras, resolve_camera
from app.scan.frames import CameraUnavailable
from app.ui.verify import camera_worker
from app.ui.verify.camera_worker import (
    NO_CAMERA_MESSAGE,
    CameraScanner,
    CameraWorker,
    OpenedSource,
    camera_target,
    opencv_opener,
    preview_image,
)

pytestmark = pytest.mark.gui

CODE = "2|kQffJ_u45KZ8_Mnxedo60A|MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43UOV3HO6DZPI"


def qr_frame(text: str = CODE, size: int = 480) -> np.ndarray:
    """A BGR frame with a QR code filling most of the centre, like a badge held to the lens."""
    code = segno.make(text, error="M")
    modules = np.where(np.array(code.matrix, dtype=np.uint8) == 1, 0, 255).astype(np.uint8)
    padded = np.pad(modules, 4, constant_values=255)
    side = int(size * 0.7)
    qr = cv2.resize(padded, (side, side), interpolation=cv2.INTER_NEAREST)
    frame = np.full((size, int(size * 4 / 3)), 170, np.uint8)
    y = (size - side) // 2
    x = (frame.shape[1] - side) // 2
    frame[y : y + side, x : x + side] = qr
    return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)


def blank_frame(value: int = 170, size: int = 480) -> np.ndarray:
    return np.full((size, int(size * 4 / 3), 3), value, np.uint8)


class ScriptedSource:
    """A camera that plays a list of frames, then disappears (like a video file that ends)."""

    def __init__(self, frames: Sequence[np.ndarray | None]) -> None:
        self.frames = list(frames)
        self.position = 0
        self.closed = False

    def read(self) -> np.ndarray | None:
        if self.closed:
            raise CameraUnavailable("closed")
        if self.position >= len(self.frames):
            raise CameraUnavailable("the script ended")
        frame = self.frames[self.position]
        self.position += 1
        return frame

    def close(self) -> None:
        self.closed = True


def scripted(frames: Sequence[np.ndarray | None], interval_ms: int = 1) -> Any:
    def open_source() -> OpenedSource:
        return OpenedSource(ScriptedSource(frames), interval_ms, "scripted camera")

    return open_source


class Collector:
    def __init__(self, scanner: CameraScanner) -> None:
        self.codes: list[str] = []
        self.lost: list[str] = []
        self.ready: list[str] = []
        self.events: list[str] = []
        scanner.code_accepted.connect(self.codes.append)
        scanner.camera_lost.connect(self.lost.append)
        scanner.camera_ready.connect(self.ready.append)
        scanner.camera_lost.connect(lambda _: self.events.append("lost"))
        scanner.camera_ready.connect(lambda _: self.events.append("ready"))


@pytest.fixture
def scanners(qapp: Any, no_leaks: None) -> Iterator[list[CameraScanner]]:
    made: list[CameraScanner] = []
    yield made
    for scanner in made:
        scanner.stop()
        assert not scanner.running


def run(
    scanners: list[CameraScanner], opener: Any, *, decode_every: int = 1, retry_ms: int = 60000
) -> tuple[CameraScanner, Collector]:
    scanner = CameraScanner(opener, decode_every=decode_every, retry_ms=retry_ms)
    collector = Collector(scanner)
    scanners.append(scanner)
    scanner.start()
    return scanner, collector


def test_camera_target_reads_indexes_and_paths() -> None:
    assert camera_target("0") == 0
    assert camera_target(" 2 ") == 2
    assert camera_target("/videos/desk.avi") == "/videos/desk.avi"
    with pytest.raises(CameraUnavailable):
        camera_target("name:A camera that is not plugged in")


def _fake_sysfs(root: Path, devices: dict[str, str]) -> Path:
    """A /sys/class/video4linux tree as the kernel lays it out (node -> name file)."""
    for node, name in devices.items():
        (root / node).mkdir(parents=True)
        (root / node / "name").write_text(name + "\n", "utf-8")
    return root


def test_cameras_are_listed_and_found_again_by_name(tmp_path: Path) -> None:
    root = _fake_sysfs(
        tmp_path / "v4l",
        {"video0": "Integrated Webcam", "video1": "Integrated Webcam", "video2": "Desk Cam HD"},
    )
    choices = list_cameras(root)
    assert [(c.label, c.setting) for c in choices] == [
        ("Integrated Webcam", "name:Integrated Webcam"),
        ("Desk Cam HD", "name:Desk Cam HD"),
    ]
    assert resolve_camera("name:Desk Cam HD", root) == 2
    assert resolve_camera("name:Gone", root) is None
    assert resolve_camera("1", root) == 1
    assert camera_label("name:Desk Cam HD") == "Desk Cam HD"
    assert list_cameras(tmp_path / "nothing here") == []


def test_one_sighting_is_not_enough(scanners: list[CameraScanner], qtbot: Any) -> None:
    frames = [blank_frame(), qr_frame(), blank_frame(), blank_frame(), blank_frame()]
    scanner, seen = run(scanners, scripted(frames))
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    assert scanner.stats.sightings == 1
    assert scanner.stats.frames_decoded == len(frames)
    assert seen.codes == []


def test_two_sightings_are_accepted_once(scanners: list[CameraScanner], qtbot: Any) -> None:
    frames = [blank_frame(), qr_frame(), qr_frame(), qr_frame(), qr_frame(), qr_frame()]
    scanner, seen = run(scanners, scripted(frames))
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    assert seen.codes == [CODE]
    assert scanner.stats.sightings == 5
    assert scanner.stats.accepted == 1


def test_decoding_is_throttled(scanners: list[CameraScanner], qtbot: Any) -> None:
    frames = [qr_frame()] * 9
    scanner, seen = run(scanners, scripted(frames), decode_every=3)
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    assert scanner.stats.frames_read == 9
    assert scanner.stats.frames_decoded == 3
    assert seen.codes == [CODE]


def test_held_code_waits_for_release(scanners: list[CameraScanner], qtbot: Any) -> None:
    """The badge stays in view while its result shows: verified once, again after release."""
    frames = [qr_frame()] * 4
    scanner, seen = run(scanners, scripted(frames), retry_ms=300)
    qtbot.waitUntil(lambda: len(seen.lost) == 1, timeout=5000)
    assert seen.codes == [CODE]
    qtbot.waitUntil(lambda: len(seen.lost) == 2, timeout=5000)  # replayed, code still held
    assert seen.codes == [CODE]
    scanner.release()
    qtbot.waitUntil(lambda: len(seen.codes) == 2, timeout=5000)


def test_a_frame_with_two_codes_is_refused(scanners: list[CameraScanner], qtbot: Any) -> None:
    left, right = qr_frame("first code"), qr_frame("second code")
    both = np.hstack([left[:, 100:540], right[:, 100:540]])
    both = cv2.resize(both, (640, 480))
    _, seen = run(scanners, scripted([both, both, both]))
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    assert seen.codes == []


def test_lost_camera_is_retried_until_it_is_back(scanners: list[CameraScanner], qtbot: Any) -> None:
    attempts: list[int] = []

    def flaky() -> OpenedSource:
        attempts.append(1)
        if len(attempts) < 3:
            raise CameraUnavailable("camera 0 cannot be opened")
        return OpenedSource(ScriptedSource([qr_frame()] * 3), 1, "camera 0")

    _, seen = run(scanners, flaky, retry_ms=30)
    qtbot.waitUntil(lambda: bool(seen.codes), timeout=5000)
    assert len(attempts) >= 3
    assert seen.lost[0] == NO_CAMERA_MESSAGE  # never opened: nothing was "disconnected"
    assert seen.ready == ["camera 0"]
    # Said once per outage, not on every retry: two failed opens, one message.
    assert seen.events[:2] == ["lost", "ready"]


def test_opener_that_crashes_is_a_lost_camera(scanners: list[CameraScanner], qtbot: Any) -> None:
    def broken() -> OpenedSource:
        raise cv2.error("backend exploded")

    _, seen = run(scanners, broken)
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    assert seen.lost == [NO_CAMERA_MESSAGE]


def test_stop_does_not_wait_for_the_retry(scanners: list[CameraScanner], qtbot: Any) -> None:
    def missing() -> OpenedSource:
        raise CameraUnavailable("camera 7 cannot be opened")

    scanner, seen = run(scanners, missing, retry_ms=600_000)
    qtbot.waitUntil(lambda: bool(seen.lost), timeout=5000)
    scanner.stop()
    assert not scanner.running
    # The thread ended within stop()'s own wait, ten minutes before the retry was due: a
    # thread still running when that wait gives up is kept lingering (see the next test).
    assert not camera_worker._LINGERING


def test_a_hung_camera_driver_does_not_hang_the_gui(
    qtbot: Any, no_leaks: None, caplog: pytest.LogCaptureFixture
) -> None:
    """stop() gives up waiting; the thread is kept alive (never destroyed running) until it ends."""
    entered, unblock = threading.Event(), threading.Event()

    class HungSource:
        def read(self) -> np.ndarray | None:
            entered.set()
            unblock.wait(10)
            raise CameraUnavailable("unplugged")

        def close(self) -> None:
            pass

    scanner = CameraScanner(lambda: OpenedSource(HungSource(), 1, "hung camera"))
    scanner.start()
    qtbot.waitUntil(entered.is_set, timeout=5000)
    scanner.stop(timeout_ms=100)
    assert not scanner.running
    assert len(camera_worker._LINGERING) == 1  # kept alive, not destroyed while running
    (thread,) = camera_worker._LINGERING
    # stop() came back by giving up its own 100 ms wait, while the driver was still stuck in
    # read(): nothing has let it go yet.
    assert "camera thread did not stop in 100 ms" in caplog.text
    assert not thread.isFinished() and not unblock.is_set()
    unblock.set()  # the driver returns; the worker sees the queued stop and ends its thread
    qtbot.waitUntil(thread.isFinished, timeout=5000)
    scanner.stop()  # the next start or stop lets go of it
    assert not camera_worker._LINGERING


def test_preview_keeps_only_the_newest_frame(qtbot: Any, no_leaks: None) -> None:
    """A GUI that has not taken the last preview gets the newest one, and only one signal."""
    frames = [blank_frame(value) for value in (10, 60, 110, 160, 210)]
    worker = CameraWorker(scripted(frames, interval_ms=10**8), decode_every=100)
    signals: list[int] = []
    worker.preview_ready.connect(lambda: signals.append(1))
    worker.start()  # in this thread; the huge interval means only our ticks read frames
    try:
        for _ in frames:
            worker._tick()
        assert len(signals) == 1
        image = worker.take_preview()
        assert image is not None
        assert image.pixelColor(image.width() // 2, image.height() // 2).red() == 210
        assert worker.take_preview() is None
        assert worker.stats.frames_read == 5
    finally:
        worker.stop()
        worker.deleteLater()


def test_preview_image_is_small_with_the_aiming_frame() -> None:
    frame = np.zeros((1080, 1920, 3), np.uint8)
    image = preview_image(frame, 640, 0.85)
    assert image is not None
    assert (image.width(), image.height()) == (640, 360)
    # a corner of the aiming square is drawn in white
    side = int(360 * 0.85)
    x, y = (640 - side) // 2, (360 - side) // 2
    assert image.pixelColor(x + 5, y).red() == 255
    assert preview_image(np.zeros((10, 10, 5), np.uint8), 640, 0.85) is None


def test_opencv_opener_paces_a_video_file_by_its_frame_rate(tmp_path: Path) -> None:
    path = tmp_path / "three.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), 10.0, (320, 240))
    for value in (0, 128, 255):
        writer.write(np.full((240, 320, 3), value, np.uint8))
    writer.release()
    opened = opencv_opener(str(path))()
    try:
        assert opened.interval_ms == 100
        assert "three.avi" in opened.description
        assert all(opened.source.read() is not None for _ in range(3))
        with pytest.raises(CameraUnavailable):
            for _ in range(3):
                opened.source.read()
    finally:
        opened.source.close()
    with pytest.raises(CameraUnavailable):
        opencv_opener(str(tmp_path / "missing.avi"))()
