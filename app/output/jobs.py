"""What a pay-run worker process does: draw one row's badge and stamp its PDF, write both.

Kept outside `app.issuer` on purpose: a spawned worker imports only this module (and what it
needs: numpy, Pillow, segno; pypdf once it stamps a PDF), not the whole issuer library with its
HTTP client and schemas, which saves a few tenths of a second of CPU per worker and per run.
`app.issuer.workers` runs these jobs.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.output.files import OutputError, write_new_file
from service.documents.badge import BadgeError, render_badge_png

__all__ = ["OutputDone", "OutputJob", "follow_parent", "write_chunk", "write_outputs"]


@dataclass(frozen=True)
class OutputJob:
    """One row's outputs: its badge, and its stamped PDF when `pdf_source` is set."""

    scan_url: str
    payload: str
    width: int
    badge_path: str
    pdf_source: str | None
    pdf_path: str | None
    pdf_page: int
    pdf_corner: str


@dataclass(frozen=True)
class OutputDone:
    badge_ok: bool
    pdf_ok: bool
    problem: str = ""
    fatal: bool = False  # the output folder itself failed (disk full, no permission)


def write_outputs(job: OutputJob) -> OutputDone:
    """Render one badge and stamp one PDF; plain-text problems, never a traceback."""
    try:
        png = render_badge_png(job.scan_url, job.width)
        # Not fsynced one by one: the batch is made durable at once before it is acknowledged.
        write_new_file(Path(job.badge_path), png)
    except OutputError as exc:
        return OutputDone(False, False, str(exc), fatal=True)
    except BadgeError as exc:
        return OutputDone(False, False, f"no badge: {exc}")
    if job.pdf_source is None or job.pdf_path is None:
        return OutputDone(True, False)
    try:
        original = Path(job.pdf_source).read_bytes()
    except OSError:
        return OutputDone(True, False, "the payslip PDF could not be read")
    try:
        from service.documents.pdf_stamp import (
            stamp_badge,  # pikepdf (qpdf): only when a run stamps
        )

        stamped = stamp_badge(original, png, job.payload, job.pdf_page - 1, job.pdf_corner)
    except Exception as exc:  # a damaged PDF, a page out of range: the badge stands alone
        return OutputDone(True, False, f"the payslip PDF could not be stamped ({_plain(exc)})")
    try:
        write_new_file(Path(job.pdf_path), stamped)
    except OutputError as exc:
        return OutputDone(True, False, str(exc), fatal=True)
    return OutputDone(True, True)


def write_chunk(jobs: list[OutputJob]) -> list[OutputDone]:
    """A worker's unit of work: several rows, one round trip."""
    return [write_outputs(job) for job in jobs]


def _plain(exc: Exception) -> str:
    """A short description of a helper's error: its own message if it is one of ours, else its
    type (third-party messages may quote document content)."""
    if isinstance(exc, IndexError):
        return "no such page"
    if type(exc).__module__.startswith(("service.", "app.")):
        return str(exc)
    return type(exc).__name__


def follow_parent(parent: int) -> None:
    """Worker initializer: exit when the run's process is gone (killed, crashed), instead of
    rendering badges for nobody. The re-run renders them again."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()
