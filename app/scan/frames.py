"""Frames from a camera or a video file, and the crop the decoder sees.

OpenCV's capture is used instead of QtMultimedia, which is not in PySide6-Essentials (FINDINGS);
it also reads video files, so tests and demos replay a recorded "camera" through the same path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import cv2
import numpy as np


class CameraUnavailable(RuntimeError):
    """The camera or video cannot be opened, or stopped delivering frames. Safe to show."""


def crop_box(height: int, width: int, fraction: float = 1.0) -> tuple[int, int, int, int]:
    """``(x, y, side, side)`` of the centred square that :func:`prepare_frame` keeps.

    The GUI draws this box as the aiming frame, so what the user aims at is what is decoded.
    """
    if not 0 < fraction <= 1:
        raise ValueError("fraction must be in (0, 1]")
    side = max(1, int(min(height, width) * fraction))
    return (width - side) // 2, (height - side) // 2, side, side


def prepare_frame(frame: np.ndarray, *, fraction: float = 1.0) -> np.ndarray:
    """The centred square crop of a BGR (or grey) frame, in grey, as a new contiguous array.

    Cropping before the grey conversion and decoding spends no time on the frame's edges, where
    nobody holds a payslip; the copy means the result outlives the camera's buffer.
    """
    if frame.ndim not in (2, 3):
        raise ValueError("a frame is an HxW or HxWxC array")
    x, y, side, _ = crop_box(frame.shape[0], frame.shape[1], fraction)
    crop = frame[y : y + side, x : x + side]
    if crop.ndim == 3 and crop.shape[2] == 3:
        return cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    if crop.ndim == 3 and crop.shape[2] == 4:
        return cv2.cvtColor(crop, cv2.COLOR_BGRA2GRAY)
    if crop.ndim == 3:
        crop = crop[:, :, 0]
    return np.ascontiguousarray(crop).copy()


class FrameSource(Protocol):
    """Where frames come from: a camera, a video file, or a test's scripted list."""

    def read(self) -> np.ndarray | None:
        """The next BGR frame; None for a missed frame; raises CameraUnavailable when gone."""
        ...

    def close(self) -> None:
        """Release the device; further reads raise CameraUnavailable."""
        ...


class _Capture(Protocol):
    def isOpened(self) -> bool: ...  # noqa: N802 - OpenCV's name

    def read(self) -> tuple[bool, Any]: ...

    def release(self) -> None: ...


def _open_capture(target: int | str) -> _Capture:
    return cv2.VideoCapture(target)


class OpenCVSource:
    """A camera index or a video file read through ``cv2.VideoCapture``.

    A missed frame returns None (cameras drop frames); more than ``tolerated_misses`` misses in a
    row mean the camera was unplugged or the file ended, and raise :class:`CameraUnavailable`
    instead of spinning on an empty stream. ``capture_factory`` lets tests hand in a fake capture.
    """

    def __init__(
        self,
        device_or_path: int | str | os.PathLike[str],
        *,
        tolerated_misses: int = 1,
        capture_factory: Callable[[int | str], _Capture] | None = None,
    ) -> None:
        self.tolerated_misses = tolerated_misses
        self._misses = 0
        self._lock = threading.Lock()  # the GUI may close while a worker thread reads
        if isinstance(device_or_path, int):
            self.description = f"camera {device_or_path}"
            target: int | str = device_or_path
        else:
            path = Path(device_or_path)
            self.description = f"video file {path.name}"
            if not path.is_file():
                raise CameraUnavailable(f"{self.description} does not exist")
            target = str(path)
        capture = (capture_factory or _open_capture)(target)
        if not capture.isOpened():
            capture.release()
            raise CameraUnavailable(f"{self.description} cannot be opened")
        self._capture: _Capture | None = capture

    def read(self) -> np.ndarray | None:
        with self._lock:
            if self._capture is None:
                raise CameraUnavailable(f"{self.description} is closed")
            try:
                ok, frame = self._capture.read()
            except cv2.error:
                ok, frame = False, None
            if ok and isinstance(frame, np.ndarray) and frame.size:
                self._misses = 0
                return frame
            self._misses += 1
            if self._misses > self.tolerated_misses:
                raise CameraUnavailable(f"{self.description} stopped delivering frames")
            return None

    def close(self) -> None:
        with self._lock:
            if self._capture is not None:
                self._capture.release()
                self._capture = None

    def __enter__(self) -> OpenCVSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
