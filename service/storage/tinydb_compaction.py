"""Compaction of the journaled engine: folding the journal into a new snapshot, and when to.

Kept apart from the commit and follow paths (`tinydb_engine.py`) because it is the one
operation that replaces files, and it is built to run mostly without locks: the snapshot is
serialised from a copy of the state while writers keep committing, and only the final rename
and journal switch happen under the exclusive process lock. `journal.py` explains why each
file step is safe against a crash.

`Compaction` is a mixin of `JournaledStorage`: it works on that class's locks, journal and
state, declared below so the dependency is visible (and type-checked) rather than implied.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

from service.files.durable import replace_file, write_file
from service.storage.journal import (
    JournalCorrupt,
    JournalFile,
    ProcessLock,
    encode_snapshot,
    temp_name,
)
from service.storage.port import StoreUnavailable
from service.storage.tinydb_state import State

log = logging.getLogger(__name__)


class Compaction:
    """`compact`, the policy that triggers it after commits, and the background thread that
    runs it. Requires the attributes below, all set by `JournaledStorage.__init__`."""

    compact_lines: int
    compact_bytes: int
    background_compaction: bool
    _lock: threading.RLock
    _plock: ProcessLock
    _compact_mutex: threading.Lock
    _compactor: threading.Thread | None
    _closed: bool
    _journal: JournalFile | None
    _state: State
    _journal_path: Path
    _snapshot_path: Path
    _snapshot_bytes: int

    def _sync_locked(self) -> None:
        """Catch up with other processes' commits (the engine's; see there)."""
        raise NotImplementedError

    def compact(self, keep_history: bool = True) -> bool:
        """Fold the journal into a new snapshot. False when there was nothing to do or another
        process compacted meanwhile. `keep_history=False` carries no already-folded commits into
        the new journal (for purging destroyed key material from the files).

        The snapshot is serialised from a copy of the state taken under the lock, without any
        lock held, so writers keep committing; then, under the exclusive lock, it is renamed into
        place and the journal replaced by a new file holding the commits made meanwhile. The old
        journal is only dropped (by that rename) once the snapshot containing it is durable."""
        with self._compact_mutex:
            try:
                with self._lock:
                    if self._closed:
                        return False
                    with self._plock.hold(exclusive=False):
                        self._sync_locked()
                    journal = self._journal
                    assert journal is not None
                    state = self._state
                    if (
                        journal.lines == 0
                        and journal.base == state.seq
                        and (self._snapshot_path.exists() or not state.tables)
                        and (keep_history or not journal.recent)
                    ):
                        return False
                    captured, seq, start = journal, state.seq, journal.offset
                    history = journal.history_start(start) if keep_history else start
                    tables = {name: dict(docs) for name, docs in state.tables.items()}
                tmp = temp_name(self._snapshot_path)
                try:
                    write_file(tmp, encode_snapshot(tables, seq))
                    del tables
                    with self._lock, self._plock.hold(exclusive=True):
                        self._sync_locked()
                        journal = self._journal
                        assert journal is not None
                        if journal is not captured:
                            # Switched files: another process compacted (ours may be older).
                            # Compare objects, not inode numbers: once we closed the captured
                            # file, its inode number may already belong to a newer journal.
                            return False
                        if not journal.is_line_start(history):
                            history = start
                        replace_file(tmp, self._snapshot_path)
                        self._snapshot_bytes = os.stat(self._snapshot_path).st_size
                        JournalFile.create(self._journal_path, seq, journal.tail_bytes(history))
                        self._sync_locked()  # switch to the new journal file
                        return True
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        tmp.unlink()
            except (OSError, JournalCorrupt) as exc:
                raise StoreUnavailable(f"compaction failed: {exc}") from exc

    def wait_for_compaction(self) -> None:
        compactor = self._compactor
        if compactor is not None:
            compactor.join()

    def _over_threshold(self) -> bool:
        """Compaction is due after `compact_lines` commits, or once the journal outgrows both
        `compact_bytes` and the snapshot: rewriting the snapshot then costs at most as much as
        what was written since, so write amplification stays bounded at any size."""
        journal = self._journal
        if journal is None:
            return False
        return journal.lines >= self.compact_lines or journal.offset >= max(
            self.compact_bytes, self._snapshot_bytes
        )

    def _maybe_compact(self) -> None:
        if not self._over_threshold():
            return
        if not self.background_compaction:
            self.compact()
            return
        with self._lock:
            if self._closed or (self._compactor is not None and self._compactor.is_alive()):
                return
            self._compactor = threading.Thread(
                target=self._compact_in_background, name="tinydb-compaction", daemon=True
            )
            self._compactor.start()

    def _compact_in_background(self) -> None:
        try:
            self.compact()
        except Exception:
            log.exception("background compaction failed (the journal keeps the data)")
