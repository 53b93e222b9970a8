"""Dropped files and demo samples, as the verify screen and the applicant check take them.

Files themselves are read by :func:`app.inputs.reading.read_file`, the entry point ``app verify``
uses too, so a file gets the same reading and the same messages on the screen and on the command
line. Readings run on the task runner, never on the GUI thread: decoding a photo or rendering a
PDF page takes a moment.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QDragEnterEvent, QDropEvent

from app.inputs.reading import InputReading, read_image_bytes


def sample_badge_png(scan_url: str) -> bytes:
    """The badge a payslip of this scan URL carries, rendered in memory, never to disk."""
    from service.documents.badge import render_badge_png

    return bytes(render_badge_png(scan_url))


def sample_reading(scan_url: str) -> InputReading:
    """A demo sample read like a photo of its badge: rendered, then through the image pipeline."""
    return read_image_bytes(sample_badge_png(scan_url), "the sample image")


def local_files(urls: list[object]) -> list[Path]:
    """The local files among dropped URLs (a dragged web link is no file to read)."""
    paths = []
    for url in urls:
        to_local = getattr(url, "toLocalFile", None)
        if to_local is not None and (text := to_local()):
            paths.append(Path(text))
    return paths


def accept_file_drag(event: QDragEnterEvent) -> None:
    """Take a drag only when it carries a local file, so the pointer says where a drop works."""
    if local_files(list(event.mimeData().urls())):
        event.acceptProposedAction()
    else:
        event.ignore()


def dropped_files(event: QDropEvent) -> list[Path]:
    """The local files of a drop, the drop accepted when it has any and ignored when not (a
    dropped web link is refused the same way it was refused while dragging)."""
    files = local_files(list(event.mimeData().urls()))
    if files:
        event.acceptProposedAction()
    else:
        event.ignore()
    return files
