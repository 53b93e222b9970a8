"""Screenshots of staff screens at the two window sizes people use (issue 11).

Saved under the test's tmp_path; a copy goes to /tmp/shots11 for a person to look at. Never in
the repository (screens may show invented personal data from the demo).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

SIZES = ((1280, 800), (1920, 1080))
REVIEW = Path("/tmp/shots11")


def shoot(
    widget: QWidget,
    folder: Path,
    name: str,
    sizes: tuple[tuple[int, int], ...] = SIZES,
    review: Path = REVIEW,
) -> list[Path]:
    """Resize `widget` to each size, let layouts settle, save a PNG; returns the paths."""
    paths = []
    for width, height in sizes:
        widget.resize(width, height)
        for _ in range(3):
            QApplication.processEvents()
        path = folder / f"{name}-{width}x{height}.png"
        assert widget.grab().save(str(path)), path
        paths.append(path)
        review.mkdir(exist_ok=True)
        shutil.copy(path, review / path.name)
    return paths


def review_shot(widget: QWidget, review: Path, name: str, resize: bool = True) -> None:
    """Into `review` only: at 1366x768 and 1024x600, or a dialog at its own size."""
    for width, height in ((1366, 768), (1024, 600)) if resize else ((0, 0),):
        if resize:
            widget.resize(width, height)
        for _ in range(3):
            QApplication.processEvents()
        review.mkdir(exist_ok=True)
        size = f"{width}x{height}" if resize else "own-size"
        assert widget.grab().save(str(review / f"{name}-{size}.png"))
