"""A pay run's badges and stamped PDFs, written on every core while the run goes on.

The run's own process checks, seals and registers the next batch while worker processes draw the
badges (and stamp the PDFs) of the batch before it: `OutputPool.submit` returns at once with a
`Pending` batch, and `Pending.wait` collects it when the run is ready to acknowledge it. Jobs go
out in chunks (one inter-process round trip per few dozen badges) and report each finished chunk
through `on_done`, from a pool thread, so a progress display can count badges as they are written.

Worker processes are spawned (fork is unsafe with the GUI's threads) and exit when the run's
process is gone. When workers cannot start or die, the rest is done in this process.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable
from pathlib import Path

from app.output.files import explain
from app.output.jobs import OutputDone, OutputJob, follow_parent, write_chunk, write_outputs

__all__ = [
    "CHUNK",
    "POOL_THRESHOLD",
    "OutputDone",
    "OutputJob",
    "OutputPool",
    "Pending",
    "make_durable",
    "remove_stale_temporaries",
    "write_outputs",
]

#: Below this many jobs in a batch, worker processes cost more to start than they save.
POOL_THRESHOLD = 64
#: Jobs per inter-process round trip (a badge is ~1-2 ms; a round trip ~0.2 ms).
CHUNK = 25


def remove_stale_temporaries(out: Path) -> None:
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


def make_durable(paths: list[Path], out: Path) -> None:
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


DoneCallback = Callable[[list[OutputJob], list[OutputDone]], None]


class Pending:
    """A batch's jobs on their way: `wait()` returns every job's outcome, in job order."""

    def __init__(self, pool: OutputPool, chunks: list[list[OutputJob]]) -> None:
        self._pool = pool
        self._chunks = chunks
        self._futures: list[concurrent.futures.Future[list[OutputDone]] | None] = []

    def _start(self, executor: concurrent.futures.Executor | None) -> None:
        for chunk in self._chunks:
            if executor is None:
                self._futures.append(None)  # done in this process, in wait()
                continue
            future = executor.submit(write_chunk, chunk)
            future.add_done_callback(self._pool._reporter(chunk))
            self._futures.append(future)

    def wait(self, tick: Callable[[], None] | None = None, every: float = 0.1) -> list[OutputDone]:
        """Every outcome in job order; `tick` is called about every `every` seconds meanwhile
        (on this thread: a run reports its progress from it)."""
        live = [f for f in self._futures if f is not None]
        while live:
            _, pending = concurrent.futures.wait(live, timeout=every)
            if tick is not None:
                tick()
            live = list(pending)
        outcomes: list[OutputDone] = []
        for chunk, future in zip(self._chunks, self._futures, strict=True):
            done: list[OutputDone] | None = None
            if future is not None:
                try:
                    done = future.result()
                except concurrent.futures.process.BrokenProcessPool:
                    # Workers could not start or died (a locked-down host, memory): go on here.
                    # Rewriting a badge a worker already wrote is harmless (same bytes, atomic).
                    self._pool.broken()
            if done is None:
                done = write_chunk(chunk)
                self._pool._report(chunk, done)
                if tick is not None:
                    tick()
            outcomes.extend(done)
        return outcomes


class OutputPool:
    """Worker processes for a run's outputs (started on first use, one per CPU by default)."""

    def __init__(self, workers: int | None, on_done: DoneCallback | None = None) -> None:
        if workers is None:
            # A frozen app (PyInstaller) only starts spawn workers safely when its entry point
            # calls multiprocessing.freeze_support() first; without that a worker would start
            # the whole app again, so frozen runs render in this process unless told otherwise.
            workers = 1 if getattr(sys, "frozen", False) else (os.cpu_count() or 1)
        self.workers = workers
        self._on_done = on_done
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def submit(self, jobs: list[OutputJob]) -> Pending:
        """Start `jobs` (worker processes when there are enough of them to repay starting)."""
        use_workers = self.workers > 1 and len(jobs) >= POOL_THRESHOLD
        # In this process too, chunk by chunk: progress is reported between chunks.
        pending = Pending(self, [jobs[i : i + CHUNK] for i in range(0, len(jobs), CHUNK)])
        pending._start(self._ensure() if use_workers else None)
        return pending

    def _ensure(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=follow_parent,
                initargs=(os.getpid(),),
            )
        return self._executor

    def _reporter(
        self, chunk: list[OutputJob]
    ) -> Callable[[concurrent.futures.Future[list[OutputDone]]], None]:
        def done(future: concurrent.futures.Future[list[OutputDone]]) -> None:
            if not future.cancelled() and future.exception() is None:
                self._report(chunk, future.result())

        return done

    def _report(self, chunk: list[OutputJob], outcomes: list[OutputDone]) -> None:
        if self._on_done is not None:
            with contextlib.suppress(Exception):
                self._on_done(chunk, outcomes)

    def broken(self) -> None:
        """Workers are unusable: stop them and do the rest in this process."""
        self.close()
        self.workers = 1

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
