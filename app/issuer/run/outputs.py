"""A registered batch's badges and stamped PDFs: started on the worker processes, then settled.

Writing outputs is the slow part of a run, so it overlaps the next batch: `start` hands the
batch's jobs to the `OutputPool` (`app.issuer.workers`, worker processes that import only
`app.output.jobs` and `app.output.files`) and returns at once; `settle` is called right after the
next
batch is registered (or before anything that must follow this one) and waits for the files,
makes them durable (fsync of each file and its folder), journals the acknowledgement and returns
the window's results in file order. Only an acknowledged row counts as finished on a re-run, and
it is acknowledged only once its files are on disk, so a kill never loses a badge a result claims.

At most one batch is in flight at a time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.issuer.journal import RunJournal
from app.issuer.progress import Progress
from app.issuer.row_status import RowStatus
from app.issuer.run.journal_replay import Entry
from app.issuer.run.results import RecordResult, RunSettings
from app.issuer.workers import OutputDone, OutputJob, OutputPool, make_durable
from app.issuer.workers import Pending as PendingJobs
from app.output.files import OutputError
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.errors import ErrorCode
from service.protocol.schemas import BatchResultItem

__all__ = ["BatchOutputs", "Window"]

Window = list[RecordResult | Entry]
"""A stretch of rows in file order: final results, and entries waiting for their batch."""

_REASONS: dict[str, str] = {
    ErrorCode.CONFLICT: "this reference is already registered with different data (the first "
    "record is kept); was this output folder used for another pay run?",
    ErrorCode.IV_REUSED: "this encryption was already used for another payslip; issue this row "
    "again in a new run (it will be encrypted afresh)",
}


@dataclass
class _Inflight:
    """A registered batch whose badges and PDFs are being written (acknowledged once done)."""

    number: int
    batch: list[Entry]
    window: Window
    results: dict[int, RecordResult]  # rows the service refused
    jobs: list[tuple[Entry, RowStatus, OutputJob]]  # (entry, status, job) of the others
    pending: PendingJobs


class BatchOutputs:
    """The output side of a run: one pool of worker processes, at most one batch in flight.

    Finished badges and PDFs are counted into `progress` (under `counts`, from pool threads) as
    they land, and `tick` is called while waiting, so the display keeps moving."""

    def __init__(
        self,
        settings: RunSettings,
        scan_base: str,
        progress: Progress,
        counts: threading.Lock,
        tick: Callable[[], None],
    ) -> None:
        self._settings = settings
        self._scan_base = scan_base
        self._progress = progress
        self._counts = counts
        self._tick = tick
        self._pool = OutputPool(settings.workers, on_done=self._outputs_done)
        self._inflight: _Inflight | None = None

    def close(self) -> None:
        self._pool.close()

    def start(
        self, number: int, batch: list[Entry], answers: list[BatchResultItem], window: Window
    ) -> None:
        """Queue the badges (and PDFs) of a registered batch's created and duplicate records;
        the refused ones get their `error` result now. Call `settle` first."""
        assert self._inflight is None, "settle the batch in flight first"
        settings = self._settings
        out = settings.out_dir
        results: dict[int, RecordResult] = {}
        jobs: list[tuple[Entry, RowStatus, OutputJob]] = []
        for entry, answer in zip(batch, answers, strict=True):
            status = RowStatus.of_answer(answer.status)
            if status.registered:
                badge = f"badges/{entry.stem}.png"
                pdf_out = f"pdfs/{entry.stem}.pdf" if entry.pdf else None
                job = OutputJob(
                    scan_url=build_scan_url_v2(self._scan_base, entry.reference, entry.ciphertext),
                    payload=build_payload_v2(entry.reference, entry.ciphertext),
                    width=settings.badge_width,
                    badge_path=str(out / badge),
                    pdf_source=str(settings.pdf_dir / entry.pdf)
                    if entry.pdf and settings.pdf_dir
                    else None,
                    pdf_path=str(out / pdf_out) if pdf_out else None,
                    pdf_page=entry.pdf_page,
                    pdf_corner=entry.pdf_corner,
                )
                jobs.append((entry, status, job))
            else:
                code = str(answer.code or "ERROR")
                detail = answer.detail or ""
                reason = _REASONS.get(code) or (
                    f"the service refused it: {detail}" if detail else "the service refused it"
                )
                results[entry.row] = RecordResult(
                    entry.row, entry.external_id, status, entry.reference, code, reason
                )
        pending = self._pool.submit([job for _, _, job in jobs])
        self._inflight = _Inflight(number, batch, window, results, jobs, pending)

    def settle(self, journal: RunJournal) -> list[RecordResult] | None:
        """Wait for the batch in flight, make its files durable, journal its acknowledgement
        and return its window's results in file order (None when nothing is in flight)."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return None
        out = self._settings.out_dir
        # Each worker job draws a badge and stamps its PDF: PDFs are what a wait is mostly for
        # when the batch has any (a stamp costs several badges).
        stamps = any(job.pdf_source for _, _, job in inflight.jobs)
        self._progress.phase = "pdfs" if stamps else "badges"
        done = inflight.pending.wait(tick=self._tick)
        make_durable(
            [Path(p) for _, _, job in inflight.jobs for p in (job.badge_path, job.pdf_path) if p],
            out,
        )
        results = inflight.results
        for (entry, status, job), outcome in zip(inflight.jobs, done, strict=True):
            if outcome.fatal:
                raise OutputError(0, outcome.problem)
            reason = (
                ""
                if status is RowStatus.CREATED
                else ("already registered by an earlier attempt; nothing new was created")
            )
            if outcome.problem:
                reason = "; ".join(r for r in (reason, outcome.problem) if r)
            badge = os.path.relpath(job.badge_path, out) if outcome.badge_ok else ""
            pdf = os.path.relpath(job.pdf_path, out) if outcome.pdf_ok and job.pdf_path else ""
            results[entry.row] = RecordResult(
                entry.row,
                entry.external_id,
                status,
                entry.reference,
                "",
                reason,
                badge.replace(os.sep, "/"),
                pdf.replace(os.sep, "/"),
            )
        journal.append(
            {
                "t": "ack",
                "n": inflight.number,
                "results": [
                    {**vars(results[e.row]), "fingerprint": e.fingerprint} for e in inflight.batch
                ],
            }
        )
        return [results[w.row] if isinstance(w, Entry) else w for w in inflight.window]

    def _outputs_done(self, jobs: list[OutputJob], outcomes: list[OutputDone]) -> None:
        """Count finished badges and PDFs (called from a pool thread, or this one)."""
        with self._counts:
            self._progress.badges += sum(o.badge_ok for o in outcomes)
            self._progress.pdfs += sum(job.pdf_source is not None for job in jobs)
