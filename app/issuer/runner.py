"""Running a pay run: check every row, seal, journal, register in batches, write the outputs.

The order of work per batch is what makes a run safe to kill at any moment:

1. rows are read and checked one at a time; a bad row becomes a `rejected` result at once;
2. each good row is sealed (fresh IV) and given its reference;
3. the whole batch (references, IVs, tags, ciphertexts, bodies) is appended to the encrypted run
   journal and fsynced, and only then
4. sent with registerNonPIIBatch (up to 1000 records);
5. badges (and stamped PDFs) of the created and duplicate records are written, each via a
   temporary file and a rename;
6. an acknowledgement with the per-record results is journaled.

A re-run with the same output folder replays the journal: acknowledged rows keep their results
(nothing is sent again), a batch that was journaled but not acknowledged is resent byte for byte
(the service answers `duplicate` for what it already has), and the rest is new. When every row is
handled, `results.csv` is renamed into place and the journal is deleted.

Badges are the slow part (a QR code is built in pure Python), so they are rendered in worker
processes when a batch is large enough to repay starting them.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import contextlib
import csv
import dataclasses
import io
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.api_client import ApiClient
from app.api_errors import (
    ApiError,
    Forbidden,
    InvalidResponse,
    Unauthorized,
    ValidationFailed,
)
from app.issuer.badges import BADGE_WIDTH, BadgeError, render_badge_png, stamp_badge
from app.issuer.journal import JournalError, RunJournal
from app.issuer.journal import exists_in as journal_exists
from app.issuer.output import (
    OutputError,
    atomic_write_bytes,
    atomic_writer,
    check_writable,
    explain,
)
from app.issuer.payrun import PayrunRow, RowProblem, count_rows, read_payrun
from app.issuer.records import IssuerKey, non_pii_record, utc_now
from app.issuer.sealing import SealedPii, build_payload_v2, build_scan_url_v2, new_reference, seal
from service.protocol.encoding import b64url_decode, b64url_encode
from service.protocol.schemas import canonical_json

__all__ = [
    "MAX_BATCH",
    "RESULT_COLUMNS",
    "PayRun",
    "Progress",
    "RecordResult",
    "RunCancelled",
    "RunInterrupted",
    "RunSettings",
    "RunSummary",
]

MAX_BATCH = 1000
RESULTS_NAME = "results.csv"
RESULT_COLUMNS = (
    "row",
    "external_id",
    "status",
    "service_reference",
    "code",
    "reason",
    "badge",
    "pdf",
)
#: Below this many badges in a batch, worker processes cost more to start than they save.
POOL_THRESHOLD = 64

_REASONS = {
    "CONFLICT": "this reference is already registered with different data (the first record is "
    "kept); was this output folder used for another pay run?",
    "IV_REUSED": "this encryption was already used for another payslip; issue this row again in "
    "a new run (it will be encrypted afresh)",
}


class RunInterrupted(Exception):
    """The run stopped before every row was handled. It can be resumed: run it again with the
    same output folder. The message is plain text fit for a dialog or a terminal."""


class RunCancelled(RunInterrupted):
    """The user stopped the run."""


@dataclass(frozen=True)
class RunSettings:
    """What to run and where to put it."""

    source: Path
    out_dir: Path
    pdf_dir: Path | None = None
    default_schema: str | None = None
    batch_size: int = MAX_BATCH
    badge_width: int = BADGE_WIDTH
    workers: int | None = None
    """Badge worker processes; None picks the CPU count, 0 or 1 renders in this process."""

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ValueError(f"batch size must be 1 to {MAX_BATCH}")


@dataclass(frozen=True)
class RecordResult:
    """One row's outcome, as written to results.csv. Never holds personal data."""

    row: int
    external_id: str
    status: str  # created | duplicate | error | rejected
    service_reference: str = ""
    code: str = ""
    reason: str = ""
    badge: str = ""
    pdf: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("created", "duplicate")


@dataclass
class Progress:
    """Counts so far; `total` is an estimate of the rows in the file (None when unknown)."""

    rows: int = 0
    total: int | None = None
    created: int = 0
    duplicate: int = 0
    errors: int = 0
    rejected: int = 0
    batches: int = 0
    phase: str = "reading"

    @property
    def registered(self) -> int:
        return self.created + self.duplicate

    def count(self, result: RecordResult) -> None:
        self.rows += 1
        if result.status == "created":
            self.created += 1
        elif result.status == "duplicate":
            self.duplicate += 1
        elif result.status == "rejected":
            self.rejected += 1
        else:
            self.errors += 1


@dataclass(frozen=True)
class RunSummary:
    progress: Progress
    results_csv: Path
    resumed: bool
    seconds: float

    @property
    def clean(self) -> bool:
        return self.progress.errors == 0 and self.progress.rejected == 0


# --- journal entries -----------------------------------------------------------------------


@dataclass
class _Entry:
    """A sealed row: everything needed to (re)send it and to write its outputs."""

    row: int
    fingerprint: str
    external_id: str
    body: dict[str, Any] = field(repr=False)
    ciphertext: bytes = field(repr=False)
    stem: str
    pdf: str | None
    pdf_page: int
    pdf_corner: str

    @property
    def reference(self) -> str:
        return str(self.body["service_reference"])

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ciphertext"] = b64url_encode(self.ciphertext)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Entry:
        values = dict(data)
        values["ciphertext"] = b64url_decode(values["ciphertext"])
        return cls(**values)


# --- output jobs (run in worker processes) -------------------------------------------------


@dataclass(frozen=True)
class _OutputJob:
    scan_url: str
    payload: str
    width: int
    badge_path: str
    pdf_source: str | None
    pdf_path: str | None
    pdf_page: int
    pdf_corner: str


@dataclass(frozen=True)
class _OutputDone:
    badge_ok: bool
    pdf_ok: bool
    problem: str = ""
    fatal: bool = False  # the output folder itself failed (disk full, no permission)


def _write_outputs(job: _OutputJob) -> _OutputDone:
    """Render one badge and stamp one PDF; plain-text problems, never a traceback."""
    try:
        png = render_badge_png(job.scan_url, job.width)
        # Not fsynced one by one: the batch is made durable at once before it is acknowledged.
        atomic_write_bytes(Path(job.badge_path), png, durable=False)
    except OutputError as exc:
        return _OutputDone(False, False, str(exc), fatal=True)
    except BadgeError as exc:
        return _OutputDone(False, False, f"no badge: {exc}")
    if job.pdf_source is None or job.pdf_path is None:
        return _OutputDone(True, False)
    try:
        original = Path(job.pdf_source).read_bytes()
    except OSError:
        return _OutputDone(True, False, "the payslip PDF could not be read")
    try:
        stamped = stamp_badge(original, png, job.payload, job.pdf_page - 1, job.pdf_corner)
    except Exception as exc:  # a damaged PDF, a page out of range: the badge stands alone
        return _OutputDone(True, False, f"the payslip PDF could not be stamped ({_plain(exc)})")
    try:
        atomic_write_bytes(Path(job.pdf_path), stamped, durable=False)
    except OutputError as exc:
        return _OutputDone(True, False, str(exc), fatal=True)
    return _OutputDone(True, True)


def _remove_stale_temporaries(out: Path) -> None:
    """Delete temporary files a killed run left behind (`.<final name>.<random>.tmp`, made by
    `atomic_writer`); none of them was ever complete, and no final name points at them."""
    for folder in (out, out / "badges", out / "pdfs"):
        try:
            names = list(folder.glob(".*.tmp"))
        except OSError:
            continue
        for path in names:
            with contextlib.suppress(OSError):
                path.unlink()


def _follow_parent(parent: int) -> None:
    """Worker initializer: exit when the run's process is gone (killed, crashed), instead of
    rendering badges for nobody. The re-run renders them again."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()


def _settled(window: list[RecordResult | _Entry]) -> list[RecordResult]:
    """The window's results when no row in it is waiting for a batch answer."""
    results = [item for item in window if isinstance(item, RecordResult)]
    assert len(results) == len(window), "rows still waiting for a batch"
    return results


def _make_durable(paths: list[Path], out: Path) -> None:
    """Flush a batch's outputs to disk before its acknowledgement is journaled.

    One `sync()` for the batch costs about what one fsync does, where an fsync per badge costs a
    disk flush each (seconds per thousand badges); without `sync` (Windows) each file is fsynced.
    """
    if not paths:
        return
    if hasattr(os, "sync"):
        os.sync()
        return
    for path in paths:
        try:
            with open(path, "rb+") as handle:
                os.fsync(handle.fileno())
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise explain(exc, out) from None


def _plain(exc: Exception) -> str:
    """A short description of a helper's error: its own message if it is one of ours, else its
    type (third-party messages may quote document content)."""
    if isinstance(exc, IndexError):
        return "no such page"
    if type(exc).__module__.startswith(("service.", "app.")):
        return str(exc)
    return type(exc).__name__


# --- the run -------------------------------------------------------------------------------


class PayRun:
    """One pay run from a file into an output folder. Call `run()` once (from any thread).

    `on_progress` gets a `Progress` after every batch (and while reading); `on_results` gets
    every row's `RecordResult`s in file order, a batch at a time, so a GUI can stream them into a
    table without holding the file. `cancel` stops the run between batches (resumable).
    """

    def __init__(
        self,
        client: ApiClient,
        key: IssuerKey,
        scan_base: str,
        settings: RunSettings,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        on_results: Callable[[list[RecordResult]], None] | None = None,
        on_batch_registered: Callable[[int, Progress], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.scan_base = scan_base.rstrip("/")
        self.settings = settings
        self._on_progress = on_progress
        self._on_results = on_results
        self._on_batch_registered = on_batch_registered
        self._cancel = cancel or threading.Event()
        self.progress = Progress()
        self._pool: concurrent.futures.Executor | None = None

    # ------------------------------------------------------------------ public

    def run(self) -> RunSummary:
        started = time.monotonic()
        settings = self.settings
        out = settings.out_dir
        check_writable(out)
        for sub in ("badges", "pdfs") if settings.pdf_dir else ("badges",):
            check_writable(out / sub)
        if (out / RESULTS_NAME).exists() and not journal_exists(out):
            # A finished run: running it again here would issue every payslip a second time.
            raise JournalError(
                f"{out} already holds a finished pay run ({RESULTS_NAME}); choose a new output "
                "folder so no payslip is issued twice"
            )
        journal = RunJournal.open(out)
        _remove_stale_temporaries(out)
        try:
            header = self._header(journal)
            acked, pending = self._replay(journal)
            self.progress.total = count_rows(settings.source)
            with atomic_writer(out / RESULTS_NAME) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
                try:
                    writer = csv.writer(text)
                    writer.writerow(RESULT_COLUMNS)
                    self._loop(journal, header, acked, pending, writer)
                    text.flush()
                finally:
                    text.detach()  # the raw file stays open for atomic_writer to commit
            journal.remove()
        finally:
            journal.close()
            self._stop_pool()
        self.progress.phase = "done"
        self._report()
        return RunSummary(
            self.progress, out / RESULTS_NAME, journal.resumed, time.monotonic() - started
        )

    # ------------------------------------------------------------------ journal replay

    def _header(self, journal: RunJournal) -> dict[str, Any]:
        expected = {
            "t": "header",
            "v": 1,
            "key_version": self.key.key_version,
            "scan_base": self.scan_base,
            "source": self.settings.source.name,
        }
        if journal.resumed:
            first = next(journal.frames(), None)
            if first is None or first.get("t") != "header":
                raise JournalError("the run journal is damaged; choose a new output folder")
            for name in ("key_version", "scan_base", "source"):
                if first.get(name) != expected[name]:
                    what = {
                        "key_version": "issuer key",
                        "scan_base": "service",
                        "source": "pay-run file",
                    }[name]
                    raise JournalError(
                        f"this output folder holds an unfinished run with another {what}; "
                        "resume it with the same settings or choose a new output folder"
                    )
            return first
        header = {**expected, "issued_at": utc_now()}
        journal.append(header)
        return header

    @staticmethod
    def _replay(
        journal: RunJournal,
    ) -> tuple[dict[int, tuple[RecordResult, str]], dict[int, _Entry]]:
        """Acknowledged results (with the row fingerprints they were made from) and the entries
        that were journaled but never answered."""
        acked: dict[int, tuple[RecordResult, str]] = {}
        pending: dict[int, _Entry] = {}
        for index, frame in enumerate(journal.frames()):
            if index == 0:
                continue
            kind = frame.get("t")
            if kind == "batch":
                for data in frame["records"]:
                    entry = _Entry.from_json(data)
                    pending[entry.row] = entry
            elif kind == "ack":
                for data in frame["results"]:
                    fingerprint = str(data.pop("fingerprint", ""))
                    result = RecordResult(**data)
                    pending.pop(result.row, None)
                    acked[result.row] = (result, fingerprint)
        return acked, pending

    # ------------------------------------------------------------------ main loop

    def _fingerprint(self, journal: RunJournal, row: PayrunRow) -> str:
        data = {
            "schema": row.schema,
            "issued_at": row.issued_at,
            "payslip_non_pii": row.payslip_non_pii,
            "pii": row.pii_text,
            "external_id": row.external_id,
            "pdf": [row.pdf, row.pdf_page, row.pdf_corner],
        }
        return journal.mac(canonical_json(data).encode("utf-8"))

    def _seal(self, row: PayrunRow, fingerprint: str, issued_at: str) -> _Entry:
        sealed: SealedPii = seal(row.pii_text, self.key.encryption_key)
        body = non_pii_record(
            row.schema,
            row.issued_at or issued_at,
            row.payslip_non_pii,
            sealed,
            reference=new_reference(),
            key_version=self.key.key_version,
            external_id=row.external_id,
        )
        return _Entry(
            row=row.number,
            fingerprint=fingerprint,
            external_id=row.external_id,
            body=body,
            ciphertext=sealed.ciphertext,
            stem=row.file_stem,
            pdf=row.pdf,
            pdf_page=row.pdf_page,
            pdf_corner=row.pdf_corner,
        )

    def _loop(
        self,
        journal: RunJournal,
        header: dict[str, Any],
        acked: dict[int, tuple[RecordResult, str]],
        pending: dict[int, _Entry],
        writer: Any,
    ) -> None:
        settings = self.settings
        issued_at = str(header["issued_at"])
        window: list[RecordResult | _Entry] = []
        batch: list[_Entry] = []
        batch_number = 0
        rows = read_payrun(
            settings.source, default_schema=settings.default_schema, pdf_dir=settings.pdf_dir
        )
        for item in self._checked(rows):
            if isinstance(item, RowProblem):
                window.append(
                    RecordResult(
                        item.number, item.external_id, "rejected", reason="; ".join(item.reasons)
                    )
                )
            else:
                fingerprint = self._fingerprint(journal, item)
                done = acked.pop(item.number, None)
                earlier = pending.pop(item.number, None)
                if done is not None:
                    result, acked_fingerprint = done
                    if acked_fingerprint != fingerprint:
                        result = RecordResult(
                            item.number,
                            item.external_id,
                            "rejected",
                            result.service_reference,
                            reason="this row changed after an interrupted run registered it; "
                            "the registered version is kept (issue the new one in a new run)",
                        )
                    window.append(result)
                elif earlier is not None:
                    if earlier.fingerprint != fingerprint:
                        window.append(
                            RecordResult(
                                item.number,
                                item.external_id,
                                "rejected",
                                earlier.reference,
                                reason="this row changed after an interrupted run sent it; "
                                "issue it again in a new run",
                            )
                        )
                    else:
                        window.append(earlier)
                        batch.append(earlier)
                else:
                    entry = self._seal(item, fingerprint, issued_at)
                    window.append(entry)
                    batch.append(entry)
            if len(batch) >= settings.batch_size:
                batch_number += 1
                self._send(journal, batch_number, batch, window, writer)
                batch, window = [], []
            elif not batch and len(window) >= settings.batch_size:
                self._emit(_settled(window), writer)
                window = []
        if batch:
            batch_number += 1
            self._send(journal, batch_number, batch, window, writer)
        elif window:
            self._emit(_settled(window), writer)

    def _checked(self, rows: Iterator[PayrunRow | RowProblem]) -> Iterator[PayrunRow | RowProblem]:
        for item in rows:
            if self._cancel.is_set():
                raise RunCancelled(
                    "stopped; run again with the same output folder to resume where it stopped"
                )
            yield item

    def _send(
        self,
        journal: RunJournal,
        number: int,
        batch: list[_Entry],
        window: list[RecordResult | _Entry],
        writer: Any,
    ) -> None:
        # Rule 1: on disk before it is sent.
        journal.append({"t": "batch", "n": number, "records": [e.to_json() for e in batch]})
        self.progress.phase = "registering"
        self._report()
        answers = self._register(batch)
        self.progress.batches += 1
        if self._on_batch_registered is not None:
            self._on_batch_registered(number, self.progress)
        self.progress.phase = "writing badges"
        self._report()
        results = self._outputs(batch, answers)
        journal.append(
            {
                "t": "ack",
                "n": number,
                "results": [
                    {**asdict(results[e.row]), "fingerprint": e.fingerprint} for e in batch
                ],
            }
        )
        self._emit([results[w.row] if isinstance(w, _Entry) else w for w in window], writer)

    def _register(self, batch: list[_Entry]) -> list[dict[str, Any]]:
        try:
            return self.client.register_batch([e.body for e in batch])
        except (Unauthorized, Forbidden) as exc:
            raise RunInterrupted(
                f"the service refused the issuer credentials ({exc.code}); check the client id "
                "and secret, then run again with the same output folder"
            ) from None
        except ValidationFailed as exc:
            # The envelope itself was refused: a client bug, not a row's fault. Stop, resumable.
            raise RunInterrupted(
                f"the service refused the batch ({exc.message}); nothing in it was registered"
            ) from None
        except (ApiError, InvalidResponse) as exc:
            rid = f" [request {exc.request_id}]" if exc.request_id else ""
            raise RunInterrupted(
                f"the service could not register a batch ({exc.code}){rid}; what was sent is in "
                "the run journal: run again with the same output folder to resume"
            ) from None

    def _outputs(
        self, batch: list[_Entry], answers: list[dict[str, Any]]
    ) -> dict[int, RecordResult]:
        settings = self.settings
        out = settings.out_dir
        results: dict[int, RecordResult] = {}
        jobs: list[tuple[_Entry, str, _OutputJob]] = []
        for entry, answer in zip(batch, answers, strict=True):
            status = str(answer.get("status", "error"))
            if status in ("created", "duplicate"):
                badge = f"badges/{entry.stem}.png"
                pdf_out = f"pdfs/{entry.stem}.pdf" if entry.pdf else None
                job = _OutputJob(
                    scan_url=build_scan_url_v2(self.scan_base, entry.reference, entry.ciphertext),
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
                code = str(answer.get("code") or "ERROR")
                detail = str(answer.get("detail") or "")
                reason = _REASONS.get(code) or (
                    f"the service refused it: {detail}" if detail else "the service refused it"
                )
                results[entry.row] = RecordResult(
                    entry.row, entry.external_id, "error", entry.reference, code, reason
                )
        done = self._run_jobs([job for _, _, job in jobs])
        _make_durable(
            [Path(p) for _, _, job in jobs for p in (job.badge_path, job.pdf_path) if p],
            out,
        )
        for (entry, status, job), outcome in zip(jobs, done, strict=True):
            if outcome.fatal:
                raise OutputError(0, outcome.problem)
            reason = (
                ""
                if status == "created"
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
        return results

    def _run_jobs(self, jobs: list[_OutputJob]) -> list[_OutputDone]:
        workers = self.settings.workers
        if workers is None:
            # A frozen app (PyInstaller) only starts spawn workers safely when its entry point
            # calls multiprocessing.freeze_support() first; without that a worker would start
            # the whole app again, so frozen runs render in this process unless told otherwise.
            workers = 1 if getattr(sys, "frozen", False) else (os.cpu_count() or 1)
        if workers <= 1 or len(jobs) < POOL_THRESHOLD:
            return [_write_outputs(job) for job in jobs]
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_follow_parent,
                initargs=(os.getpid(),),
            )
        chunk = max(1, len(jobs) // (workers * 4))
        try:
            return list(self._pool.map(_write_outputs, jobs, chunksize=chunk))
        except concurrent.futures.process.BrokenProcessPool:
            # Workers could not start or died (a locked-down host, memory): go on in-process.
            # Rewriting a badge that a worker already wrote is harmless (same bytes, atomic).
            self._stop_pool()
            self.settings = dataclasses.replace(self.settings, workers=1)
            return [_write_outputs(job) for job in jobs]

    def _stop_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # ------------------------------------------------------------------ reporting

    def _emit(self, results: list[RecordResult], writer: Any) -> None:
        for result in results:
            self.progress.count(result)
            writer.writerow([getattr(result, name) for name in RESULT_COLUMNS])
        if self._on_results is not None and results:
            self._on_results(results)
        self._report()

    def _report(self) -> None:
        if self._on_progress is not None:
            with contextlib.suppress(Exception):
                self._on_progress(self.progress)
