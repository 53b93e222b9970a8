"""Running a pay run: check every row, seal, journal, register in batches, write the outputs.

The order of work per batch is what makes a run safe to kill at any moment:

1. rows are read and checked one at a time; a bad row becomes a `rejected` result at once;
2. each good row is sealed (fresh IV) and given its reference;
3. the whole batch (references, IVs, tags, ciphertexts, bodies) is appended to the encrypted run
   journal and fsynced, and only then
4. sent with registerNonPIIBatch (up to 1000 records);
5. badges (and stamped PDFs) of the created and duplicate records are written, each via a
   temporary file and a rename, and made durable;
6. an acknowledgement with the per-record results is journaled.

Steps 5 and 6 of batch N overlap steps 1-4 of batch N+1: worker processes (one per core,
`app.issuer.workers`) write batch N's files while this process checks, seals and registers the
next batch, and batch N is settled (waited for, made durable, acknowledged, its results emitted in
file order) right after batch N+1 is registered, or before anything that must follow it. A
failure settles the batch in flight before it propagates, so a re-run redoes as little as
possible; a kill at any point leaves at most two batches journaled and unacknowledged, which a
re-run resends as duplicates and draws again.

A re-run with the same output folder replays the journal: acknowledged rows keep their results
(nothing is sent again), a batch that was journaled but not acknowledged is resent byte for byte
(the service answers `duplicate` for what it already has), and the rest is new. When every row is
handled, `results.csv` is renamed into place and the journal is deleted.

Progress (`app.issuer.progress`) counts every phase with its total, for a determinate display.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
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
from app.issuer.badges import BADGE_WIDTH
from app.issuer.journal import JournalError, RunJournal
from app.issuer.journal import exists_in as journal_exists
from app.issuer.output import OutputError, atomic_writer, check_writable
from app.issuer.payrun import PayrunRow, RowProblem, count_rows, read_payrun
from app.issuer.progress import PHASES, PhaseCount, Progress
from app.issuer.records import IssuerKey, non_pii_record, utc_now
from app.issuer.sealing import SealedPii, build_payload_v2, build_scan_url_v2, new_reference, seal
from app.issuer.workers import (
    OutputDone,
    OutputJob,
    OutputPool,
    Pending,
    make_durable,
    remove_stale_temporaries,
)
from service.protocol.encoding import b64url_decode, b64url_encode
from service.protocol.schemas import canonical_json

__all__ = [
    "MAX_BATCH",
    "PHASES",
    "RESULT_COLUMNS",
    "PayRun",
    "PhaseCount",
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
#: Progress reports at most this often (seconds) while rows are checked or outputs written.
REPORT_EVERY = 0.1

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
        """The journal form (the body is shared, not copied: the journal serialises it at
        once; `dataclasses.asdict` deep-copied it, a tenth of a millisecond per row)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["ciphertext"] = b64url_encode(self.ciphertext)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Entry:
        values = dict(data)
        values["ciphertext"] = b64url_decode(values["ciphertext"])
        return cls(**values)


def _settled(window: list[RecordResult | _Entry]) -> list[RecordResult]:
    """The window's results when no row in it is waiting for a batch answer."""
    results = [item for item in window if isinstance(item, RecordResult)]
    assert len(results) == len(window), "rows still waiting for a batch"
    return results


@dataclass
class _Inflight:
    """A registered batch whose badges and PDFs are being written (acknowledged once done)."""

    number: int
    batch: list[_Entry]
    window: list[RecordResult | _Entry]
    results: dict[int, RecordResult]  # rows the service refused
    jobs: list[tuple[_Entry, str, OutputJob]]  # (entry, status, job) of the others
    pending: Pending


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
        self._counts = threading.Lock()  # pool threads count finished badges and PDFs
        self._pool = OutputPool(settings.workers, on_done=self._outputs_done)
        self._inflight: _Inflight | None = None
        self._started = time.monotonic()
        self._reported = 0.0

    # ------------------------------------------------------------------ public

    def run(self) -> RunSummary:
        self._started = time.monotonic()
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
        remove_stale_temporaries(out)
        try:
            header = self._header(journal)
            acked, pending = self._replay(journal)
            self.progress.total = count_rows(settings.source)
            self._report()
            with atomic_writer(out / RESULTS_NAME) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
                try:
                    writer = csv.writer(text)
                    writer.writerow(RESULT_COLUMNS)
                    try:
                        self._loop(journal, header, acked, pending, writer)
                    except BaseException:
                        # Acknowledge what the workers already wrote, so a re-run redoes less.
                        self._settle_quietly(journal, writer)
                        raise
                    text.flush()
                finally:
                    text.detach()  # the raw file stays open for atomic_writer to commit
            journal.remove()
        finally:
            journal.close()
            self._pool.close()
        self.progress.phase = "done"
        self._report()
        return RunSummary(
            self.progress, out / RESULTS_NAME, journal.resumed, time.monotonic() - self._started
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
        progress = self.progress
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
                    else:  # handled by the interrupted run: count it as done in every phase
                        with self._counts:
                            progress.accepted += 1
                            progress.answered += 1
                            progress.refused += not result.ok
                            progress.badges += bool(result.badge)
                            progress.with_pdf += item.pdf is not None
                            progress.pdfs += item.pdf is not None and result.ok
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
                        self._accept(item)
                        window.append(earlier)
                        batch.append(earlier)
                else:
                    self._accept(item)
                    entry = self._seal(item, fingerprint, issued_at)
                    window.append(entry)
                    batch.append(entry)
            if len(batch) >= settings.batch_size:
                batch_number += 1
                self._send(journal, batch_number, batch, window, writer)
                batch, window = [], []
            elif not batch and len(window) >= settings.batch_size:
                self._settle(journal, writer)  # results stay in file order
                self._emit(_settled(window), writer)
                window = []
        progress.total, progress.total_exact = progress.checked, True
        if batch:
            batch_number += 1
            self._send(journal, batch_number, batch, window, writer)
            self._settle(journal, writer)
        else:
            self._settle(journal, writer)
            if window:
                self._emit(_settled(window), writer)

    def _accept(self, row: PayrunRow) -> None:
        with self._counts:
            self.progress.accepted += 1
            self.progress.with_pdf += row.pdf is not None

    def _checked(self, rows: Iterator[PayrunRow | RowProblem]) -> Iterator[PayrunRow | RowProblem]:
        for item in rows:
            if self._cancel.is_set():
                raise RunCancelled(
                    "stopped; run again with the same output folder to resume where it stopped"
                )
            self.progress.checked += 1
            self.progress.phase = "checking"
            self._tick()
            yield item

    def _send(
        self,
        journal: RunJournal,
        number: int,
        batch: list[_Entry],
        window: list[RecordResult | _Entry],
        writer: Any,
    ) -> None:
        """Journal and register a batch, then acknowledge the batch before it (whose outputs
        the workers were writing meanwhile) and start this one's outputs."""
        # Rule 1: on disk before it is sent.
        journal.append({"t": "batch", "n": number, "records": [e.to_json() for e in batch]})
        self.progress.phase = "registering"
        self._report()
        try:
            answers = self._register(batch)
        except BaseException:
            self._settle_quietly(journal, writer)
            raise
        refused = sum(str(a.get("status")) not in ("created", "duplicate") for a in answers)
        with self._counts:
            self.progress.batches += 1
            self.progress.answered += len(batch)
            self.progress.refused += refused
        if self._on_batch_registered is not None:
            self._on_batch_registered(number, self.progress)
        self._settle(journal, writer)
        self._inflight = self._start_outputs(number, batch, answers, window)
        self._report()

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

    def _start_outputs(
        self,
        number: int,
        batch: list[_Entry],
        answers: list[dict[str, Any]],
        window: list[RecordResult | _Entry],
    ) -> _Inflight:
        settings = self.settings
        out = settings.out_dir
        results: dict[int, RecordResult] = {}
        jobs: list[tuple[_Entry, str, OutputJob]] = []
        for entry, answer in zip(batch, answers, strict=True):
            status = str(answer.get("status", "error"))
            if status in ("created", "duplicate"):
                badge = f"badges/{entry.stem}.png"
                pdf_out = f"pdfs/{entry.stem}.pdf" if entry.pdf else None
                job = OutputJob(
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
        pending = self._pool.submit([job for _, _, job in jobs])
        return _Inflight(number, batch, window, results, jobs, pending)

    def _settle(self, journal: RunJournal, writer: Any) -> None:
        """Wait for the batch in flight, make its files durable, journal its acknowledgement
        and emit its window's results."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return
        out = self.settings.out_dir
        # Each worker job draws a badge and stamps its PDF: PDFs are what a wait is mostly for
        # when the batch has any (a stamp costs several badges).
        stamps = any(job.pdf_source for _, _, job in inflight.jobs)
        self.progress.phase = "pdfs" if stamps else "badges"
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
        journal.append(
            {
                "t": "ack",
                "n": inflight.number,
                "results": [
                    {**vars(results[e.row]), "fingerprint": e.fingerprint} for e in inflight.batch
                ],
            }
        )
        self._emit(
            [results[w.row] if isinstance(w, _Entry) else w for w in inflight.window], writer
        )

    def _settle_quietly(self, journal: RunJournal, writer: Any) -> None:
        """Settle the batch in flight while the run is failing: the first error is the one
        the user sees, and anything this one hits is left for the re-run to redo."""
        with contextlib.suppress(Exception):
            self._settle(journal, writer)

    def _outputs_done(self, jobs: list[OutputJob], outcomes: list[OutputDone]) -> None:
        """Count finished badges and PDFs (called from a pool thread, or this one)."""
        with self._counts:
            self.progress.badges += sum(o.badge_ok for o in outcomes)
            self.progress.pdfs += sum(job.pdf_source is not None for job in jobs)

    # ------------------------------------------------------------------ reporting

    def _emit(self, results: list[RecordResult], writer: Any) -> None:
        for result in results:
            self.progress.count(result)
            writer.writerow([getattr(result, name) for name in RESULT_COLUMNS])
        if self._on_results is not None and results:
            self._on_results(results)
        self._report()

    def _tick(self) -> None:
        """Report at most every 0.1 s (rows are checked far faster than a screen redraws)."""
        if time.monotonic() - self._reported >= REPORT_EVERY:
            self._report()

    def _report(self) -> None:
        self._reported = time.monotonic()
        self.progress.elapsed = self._reported - self._started
        if self._on_progress is not None:
            with contextlib.suppress(Exception):
                self._on_progress(self.progress)
