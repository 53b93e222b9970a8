"""Running a pay run: check every row, seal, journal, register in batches, write the outputs.

Before anything is written, rows this issuer issued before into another folder (its ledger,
`app.issuer.ledger`) stop the run (`AlreadyIssued`) unless the settings skip them or issue them
again. The order of work per batch is what makes a run safe to kill at any moment:

1. rows are read and checked one at a time; a bad row becomes a `rejected` result at once;
2. each good row is sealed (fresh IV) and given its reference;
3. the whole batch (references, IVs, tags, ciphertexts, bodies) is appended to the encrypted run
   journal and fsynced, and only then
4. sent with registerNonPIIBatch (up to 1000 records), and the registered ones written to the
   issuer's ledger (a resent batch's again: the ledger keeps a reference once);
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

This module holds only the order of work; the pieces live beside it: `journal_replay` (what the
journal holds and reading it back), `reconcile` (each row against what an interrupted run left),
`outputs` (badges and PDFs on the worker processes, acknowledged once durable) and `results`
(the settings, results and errors callers see).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from app.api import ApiClient
from app.api.errors import (
    ApiError,
    Forbidden,
    InvalidResponse,
    Unauthorized,
    ValidationFailed,
    unreachable_words,
)
from app.issuer.export.combined_pdf import (
    SPLIT_DIR,
    assign_pages,
    page_texts,
    people_of,
    split_pdf,
)
from app.issuer.journal import JournalError, RunJournal
from app.issuer.journal import exists_in as journal_exists
from app.issuer.ledger import Issued, Ledger, issued
from app.issuer.progress import Progress
from app.issuer.records import IssuerKey
from app.issuer.row_status import RowStatus
from app.issuer.run.issued_before import issued_before, skipped_reason
from app.issuer.run.journal_replay import Acked, Entry, Pending, fingerprint, open_header, replay
from app.issuer.run.outputs import BatchOutputs, Window
from app.issuer.run.reconcile import reconcile
from app.issuer.run.results import (
    RESULT_COLUMNS,
    RESULTS_NAME,
    RecordResult,
    RunCancelled,
    RunInterrupted,
    RunSettings,
    RunSummary,
)
from app.issuer.run.rows import PayrunRow, RowProblem
from app.issuer.run.source import PayrunSource
from app.issuer.workers import remove_stale_temporaries
from app.output.files import atomic_writer, check_writable
from service.protocol.schemas import BatchResultItem

__all__ = ["REPORT_EVERY", "PayRun"]

#: Progress reports at most this often (seconds) while rows are checked or outputs written.
REPORT_EVERY = 0.1


def _settled(window: Window) -> list[RecordResult]:
    """The window's results when no row in it is waiting for a batch answer."""
    results = [item for item in window if isinstance(item, RecordResult)]
    assert len(results) == len(window), "rows still waiting for a batch"
    return results


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
        ledger: Ledger | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.scan_base = scan_base.rstrip("/")
        if settings.combined_pdf is not None:
            # Each row's pages are split into a private folder and stamped from there.
            settings = dataclasses.replace(settings, pdf_dir=settings.out_dir / SPLIT_DIR)
        self.settings = settings
        self._notes: dict[int, str] = {}
        self._pdf_names: dict[int, str] | None = None
        self._on_progress = on_progress
        self._on_results = on_results
        self._on_batch_registered = on_batch_registered
        self._cancel = cancel or threading.Event()
        self._ledger = ledger
        self._skip: dict[int, Issued] = {}
        self.progress = Progress()
        self._counts = threading.Lock()  # pool threads count finished badges and PDFs
        self._outputs = BatchOutputs(
            settings, self.scan_base, self.progress, self._counts, self._tick
        )
        self._started = time.monotonic()
        self._reported = 0.0

    # ------------------------------------------------------------------ public

    def run(self) -> RunSummary:
        self._started = time.monotonic()
        settings = self.settings
        out = settings.out_dir
        # Opened once: what kind of file it is is decided here, for the header check, the
        # ledger's look, the combined PDF's split, the count and the rows alike.
        source = self._source = PayrunSource.open(settings.source, settings.mapping)
        source.check_header()
        check_writable(out)
        for sub in ("badges", "pdfs") if settings.pdf_dir else ("badges",):
            check_writable(out / sub)
        if (out / RESULTS_NAME).exists() and not journal_exists(out):
            # A finished run: running it again here would issue every payslip a second time.
            raise JournalError(
                f"{out} already holds a finished pay run ({RESULTS_NAME}); choose a new output "
                "folder so no payslip is issued twice"
            )
        # Rows issued before (another folder, another day): stop before anything is written.
        self._skip = issued_before(settings, self._ledger, source)
        journal = RunJournal.open(out)
        remove_stale_temporaries(out)
        notes: tuple[str, ...] = ()
        try:
            header = open_header(journal, self.key, self.scan_base, settings.source)
            if settings.combined_pdf is not None:
                notes = self._split_combined()
            acked, pending = replay(journal)
            self.progress.total = source.count()
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
            self._outputs.close()
            if settings.combined_pdf is not None:
                # The split pages are payslips: never left behind, remade on a resume.
                shutil.rmtree(out / SPLIT_DIR, ignore_errors=True)
        self.progress.phase = "done"
        self._report()
        return RunSummary(
            self.progress,
            out / RESULTS_NAME,
            journal.resumed,
            time.monotonic() - self._started,
            notes,
        )

    def _split_combined(self) -> tuple[str, ...]:
        """Assign the combined PDF's pages to rows and split them out (PROTOCOL §12)."""
        settings = self.settings
        assert settings.combined_pdf is not None and settings.pdf_dir is not None
        self.progress.phase = "checking"
        self._report()
        texts = page_texts(settings.combined_pdf)
        people = people_of(self._source.raw_rows(default_schema=settings.default_schema))
        assignment = assign_pages(texts, people)
        self._pdf_names = split_pdf(settings.combined_pdf, assignment, settings.pdf_dir)
        self._notes = {row: "; ".join(n) for row, n in assignment.row_notes.items()}
        return tuple(assignment.summary())

    # ------------------------------------------------------------------ main loop

    def _loop(
        self,
        journal: RunJournal,
        header: dict[str, Any],
        acked: Acked,
        pending: Pending,
        writer: Any,
    ) -> None:
        settings = self.settings
        progress = self.progress
        issued_at = str(header["issued_at"])
        window: Window = []
        batch: list[Entry] = []
        batch_number = 0
        rows = self._source.rows(
            default_schema=settings.default_schema,
            pdf_dir=settings.pdf_dir,
            pdf_names=self._pdf_names,
        )
        for item in self._checked(rows):
            if isinstance(item, RowProblem):
                window.append(
                    RecordResult(
                        item.number,
                        item.external_id,
                        RowStatus.REJECTED,
                        reason="; ".join(item.reasons),
                    )
                )
            elif item.number in self._skip:
                earlier = self._skip[item.number]
                window.append(
                    RecordResult(
                        item.number,
                        item.external_id,
                        RowStatus.SKIPPED,
                        earlier.reference,
                        reason=skipped_reason(earlier),
                    )
                )
            else:
                decided = reconcile(
                    item,
                    fingerprint(journal, item),
                    acked,
                    pending,
                    key=self.key,
                    issued_at=issued_at,
                )
                if decided.result is not None:
                    if decided.kind == "done":
                        # Handled by the interrupted run: count it as done in every phase.
                        self._count_done(item, decided.result)
                    window.append(decided.result)
                else:
                    assert decided.entry is not None
                    self._accept(item)
                    window.append(decided.entry)
                    batch.append(decided.entry)
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

    def _count_done(self, row: PayrunRow, result: RecordResult) -> None:
        progress = self.progress
        with self._counts:
            progress.accepted += 1
            progress.answered += 1
            progress.refused += not result.ok
            progress.badges += bool(result.badge)
            progress.with_pdf += row.pdf is not None
            progress.pdfs += row.pdf is not None and result.ok

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
        batch: list[Entry],
        window: Window,
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
        self._remember(batch, answers)
        refused = sum(not RowStatus.of_answer(a.status).registered for a in answers)
        with self._counts:
            self.progress.batches += 1
            self.progress.answered += len(batch)
            self.progress.refused += refused
        if self._on_batch_registered is not None:
            self._on_batch_registered(number, self.progress)
        self._settle(journal, writer)
        self._outputs.start(number, batch, answers, window)
        self._report()

    def _remember(self, batch: list[Entry], answers: list[BatchResultItem]) -> None:
        """Write the registered records to the issuer's ledger (a resent batch's duplicates
        again: the ledger keeps the first line of a reference)."""
        if self._ledger is None:
            return
        out = self.settings.out_dir
        try:
            self._ledger.record(
                issued(e.external_id, e.body["payslip_non_pii"], e.reference, out)
                for e, a in zip(batch, answers, strict=True)
                if RowStatus.of_answer(a.status).registered
            )
        except OSError as exc:
            raise RunInterrupted(
                f"the list of issued payslips could not be written ({exc.strerror or exc}); "
                "run again with the same output folder to resume"
            ) from None

    def _register(self, batch: list[Entry]) -> list[BatchResultItem]:
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
            words = unreachable_words(exc)  # "refused" or "did not answer", with the address
            if words:
                raise RunInterrupted(
                    f"{words[:1].lower()}{words[1:].rstrip('.?')}{rid}; what was sent is in the "
                    "run journal: run again with the same output folder to resume"
                ) from None
            raise RunInterrupted(
                f"the service could not register a batch ({exc.code}){rid}; what was sent is in "
                "the run journal: run again with the same output folder to resume"
            ) from None

    def _settle(self, journal: RunJournal, writer: Any) -> None:
        """Acknowledge the batch in flight (see `BatchOutputs.settle`) and emit its results."""
        results = self._outputs.settle(journal)
        if results is not None:
            self._emit(results, writer)

    def _settle_quietly(self, journal: RunJournal, writer: Any) -> None:
        """Settle the batch in flight while the run is failing: the first error is the one
        the user sees, and anything this one hits is left for the re-run to redo."""
        with contextlib.suppress(Exception):
            self._settle(journal, writer)

    # ------------------------------------------------------------------ reporting

    def _emit(self, results: list[RecordResult], writer: Any) -> None:
        if self._notes:
            results = [self._noted(r) for r in results]
        for result in results:
            self.progress.count(result)
            writer.writerow([getattr(result, name) for name in RESULT_COLUMNS])
        if self._on_results is not None and results:
            self._on_results(results)
        self._report()

    def _noted(self, result: RecordResult) -> RecordResult:
        note = self._notes.get(result.row)
        if not note:
            return result
        return dataclasses.replace(result, reason="; ".join(r for r in (result.reason, note) if r))

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
