"""The journaled engine under the TinyDB store: `JournaledStorage`, a TinyDB `Storage` that is
a store of record.

TinyDB as shipped re-parses and rewrites its whole JSON file on every operation (365 ms per
insert at 100k records), corrupts it when killed mid-write and has no locking (FINDINGS.md).
This engine keeps the TinyDB-layout state in memory (`tinydb_state.py`), commits each change as
one fsynced journal line, and compacts the journal into a TinyDB-format snapshot `store.json`
(`tinydb_compaction.py`; `journal.py` owns the files and says why each step is safe). It
follows other processes (the admin CLI) by tailing the journal under an `fcntl.flock`.

It knows nothing of the port's tables beyond the key field of each (given by the caller), so
stock `TinyDB(data_dir, storage=JournaledStorage)` works on it too (`read`/`write`), with stock
TinyDB's semantics: a read-modify-write through its tables is not atomic across writers;
`transact` is.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, TypeVar, cast

from tinydb.storages import Storage

from service.storage.journal import (
    JOURNAL_NAME,
    LOCK_NAME,
    SNAPSHOT_NAME,
    Doc,
    Entry,
    JournalCorrupt,
    JournalFile,
    ProcessLock,
    encode_entry,
    read_snapshot,
    remove_stale_temp_files,
)
from service.storage.port import StoreUnavailable
from service.storage.tinydb_compaction import Compaction
from service.storage.tinydb_state import Gap, NullObserver, Observer, State, Tx

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")

DEFAULT_COMPACT_LINES = 20_000
DEFAULT_COMPACT_BYTES = 64 * 1024 * 1024


class JournalOptions(TypedDict, total=False):
    """`JournaledStorage`'s tuning keywords (defaults and meaning there), as `TinyDBStore` takes
    them and passes them on unchanged."""

    compact_lines: int
    compact_bytes: int
    background_compaction: bool
    compact_on_close: bool
    refresh_interval: float


class JournaledStorage(Compaction, Storage):
    """A TinyDB storage that is a store of record: journal + snapshot, see `journal.py`.

    Every public method is thread-safe. One `threading.RLock` serialises this instance's
    threads; the `flock` on `store.lock` serialises processes. Reads first compare one `os.stat`
    of the journal with what was last seen (about a microsecond) and only take locks and read
    when another process committed or compacted.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        key_fields: Mapping[str, str] | None = None,
        observer: Observer | None = None,
        compact_lines: int = DEFAULT_COMPACT_LINES,
        compact_bytes: int = DEFAULT_COMPACT_BYTES,
        background_compaction: bool = True,
        compact_on_close: bool = True,
        refresh_interval: float = 0.0,
    ) -> None:
        super().__init__()
        self.refresh_interval = refresh_interval
        """Seconds between checks for other processes' commits on the read path (0: every read).
        A server sets a few milliseconds: each check is a syscall that drops the GIL, and four
        per verification cost a busy threaded server a sixth of its throughput."""
        self._checked = 0.0
        self.directory = Path(path)
        self.key_fields: Mapping[str, str] = dict(key_fields or {})
        self._observer: Observer = observer if observer is not None else NullObserver()
        self.compact_lines = compact_lines
        self.compact_bytes = compact_bytes
        self.background_compaction = background_compaction
        self.compact_on_close = compact_on_close
        self._journal_path = self.directory / JOURNAL_NAME
        self._snapshot_path = self.directory / SNAPSHOT_NAME
        self._lock = threading.RLock()
        self._compact_mutex = threading.Lock()
        self._compactor: threading.Thread | None = None
        self._closed = False
        self._wrote = False
        self._snapshot_bytes = 0
        self._sig: tuple[int, int, int] = (0, 0, 0)
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._plock = ProcessLock(self.directory / LOCK_NAME)
        except OSError as exc:
            raise StoreUnavailable(f"cannot open data directory {self.directory}: {exc}") from exc
        try:
            with self._lock:
                with self._plock.hold(exclusive=True):
                    if not self._journal_path.exists():
                        _, seq = read_snapshot(self._snapshot_path)
                        JournalFile.create(self._journal_path, seq)
                    remove_stale_temp_files(self.directory)
                self._journal: JournalFile | None = None
                self._state = State({}, 0, self.key_fields)
                self._reload_locked()
        except (OSError, ValueError, JournalCorrupt) as exc:
            self._plock.close()
            raise StoreUnavailable(f"cannot open store in {self.directory}: {exc}") from exc

    # --- TinyDB's Storage interface ---------------------------------------------------------

    def read(self) -> dict[str, dict[str, Any]] | None:
        """A deep copy of all tables: TinyDB's stock `Table` mutates documents in place during
        updates, which must not touch the committed state. O(data); the fast paths are `get`,
        `docs` and the `TinyDBStore` methods."""
        self.refresh()
        with self._lock:
            tables = {name: docs for name, docs in self._state.tables.items() if docs}
            copied = json.loads(json.dumps(tables)) if tables else None
        return cast("dict[str, dict[str, Any]] | None", copied)

    def write(self, data: dict[str, dict[str, Any]]) -> None:
        """Replace the whole state, as TinyDB's contract says, as one durable commit of the
        documents that differ. Like stock TinyDB, a read-modify-write through `read`/`write` is
        not atomic across writers; `transact` is."""

        def diff(tx: Tx) -> None:
            current = self._state.tables
            for name in current.keys() | data.keys():
                old_docs = current.get(name, {})
                new_docs = {str(k): v for k, v in data.get(name, {}).items()}
                for doc_id in old_docs.keys() | new_docs.keys():
                    new = new_docs.get(doc_id)
                    if new != old_docs.get(doc_id):
                        tx.put_id(name, doc_id, None if new is None else dict(new))

        self.transact(diff)

    def close(self) -> None:
        """Finish a running compaction, compact once more if this instance wrote anything (so
        the next open reads one snapshot and a short journal; a read-only admin command does not
        rewrite the server's snapshot), release the files. Idempotent."""
        if self._closed:
            return
        compactor = self._compactor
        if compactor is not None:
            compactor.join()
        if self.compact_on_close and (self._wrote or self._over_threshold()):
            try:
                self.compact()
            except (StoreUnavailable, OSError) as exc:
                log.warning("compaction on close failed (the journal keeps the data): %s", exc)
        with self._lock:
            self._closed = True
            if self._journal is not None:
                self._journal.close()
            self._plock.close()

    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Catch up with commits and compactions by other processes. One stat when nothing
        changed."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        if self.refresh_interval:
            now = time.monotonic()
            if now - self._checked < self.refresh_interval:
                return
            self._checked = now
        try:
            st = os.stat(self._journal_path)
        except OSError as exc:
            raise StoreUnavailable(f"journal unavailable: {exc}") from exc
        if (st.st_ino, st.st_size, st.st_mtime_ns) == self._sig:
            return
        with self._lock:
            try:
                with self._plock.hold(exclusive=False):
                    self._sync_locked()
            except (OSError, ValueError, JournalCorrupt) as exc:
                raise StoreUnavailable(f"cannot read the journal: {exc}") from exc

    def get(self, table: str, key: Any) -> Doc | None:
        """The document with this key (the table's key field), without copying. Treat it as
        read-only: committed documents are replaced, never mutated."""
        self.refresh()
        state = self._state
        doc_id = state.keys.get(table, {}).get(key)
        return None if doc_id is None else state.tables[table].get(doc_id)

    def docs(self, table: str) -> list[Doc]:
        self.refresh()
        with self._lock:
            return list(self._state.tables.get(table, {}).values())

    @property
    def seq(self) -> int:
        """The sequence number of the last commit this instance has applied."""
        return self._state.seq

    @property
    def compacted_seq(self) -> int:
        """The last commit contained in the snapshot (the current journal's base)."""
        journal = self._journal
        return 0 if journal is None else journal.base

    def purged_up_to(self, seq: int) -> bool:
        """Whether no file holds the state before commit `seq` any more: the snapshot contains
        it and the journal carries no history."""
        self.refresh()
        with self._lock:
            journal = self._journal
            return (
                journal is not None
                and journal.base >= seq
                and all(s > journal.base for _, s in journal.recent)
            )

    @property
    def journal_lines(self) -> int:
        """Commit lines in the current journal file (what the next compaction folds in)."""
        journal = self._journal
        return 0 if journal is None else journal.lines

    def run_locked(self, fn: Callable[[], T]) -> T:
        """Run `fn` under the thread lock after catching up (e.g. to read several indexes
        consistently)."""
        self.refresh()
        with self._lock:
            return fn()

    # --- writing ----------------------------------------------------------------------------

    def transact(self, fn: Callable[[Tx], R]) -> R:
        """Run `fn` on the current state under both locks and commit its writes as one fsynced
        journal line. Nothing reaches memory unless the line is on disk; on an OSError the
        journal is rolled back and `StoreUnavailable` raised with the state untouched."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        with self._lock:
            try:
                with self._plock.hold(exclusive=True):
                    self._sync_locked()
                    state = self._state
                    tx = Tx(state, self.key_fields)
                    result = fn(tx)
                    if tx.ops:
                        journal = self._journal
                        assert journal is not None
                        line = encode_entry(state.seq + 1, tx.ops)
                        journal.cut_torn_tail()
                        journal.append(line, state.seq + 1)
                        self._wrote = True
                        state.apply(tx.ops, self.key_fields, self._observer)
                        state.seq += 1
                        self._sig = journal.signature()
            except (OSError, JournalCorrupt) as exc:
                raise StoreUnavailable(f"store write failed: {exc}") from exc
        if tx.ops:
            self._maybe_compact()
        return result

    # --- following the files ----------------------------------------------------------------

    def _sync_locked(self) -> None:
        """Apply what other processes committed since we last looked. Caller holds the thread
        lock and the process lock (shared or exclusive), so no append is half-written."""
        try:
            st = os.stat(self._journal_path)
            journal = self._journal
            assert journal is not None
            if st.st_ino != journal.ino:
                # Compacted by another process: drain what we had not seen from the old file
                # (still readable through our descriptor), then continue in the new one, whose
                # history covers a few compactions we may have missed entirely.
                self._replay(journal.read_new(self._state.seq)[0])
                new = JournalFile(self._journal_path)
                try:
                    self._replay(new.read_new(self._state.seq)[0])
                    if self._state.seq < new.base:
                        raise Gap(f"missed commits up to {new.base}")
                except BaseException:
                    new.close()
                    raise
                journal.close()
                self._journal = journal = new
                self._snapshot_bytes = _size(self._snapshot_path)
                st = os.fstat(journal.fd)
            if st.st_size < journal.offset:
                raise Gap("journal shrank")  # shrunk under us: only a full reload is trustworthy
            self._replay(journal.read_new(self._state.seq)[0])
            self._sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        except Gap:
            self._reload_locked()

    def _replay(self, entries: list[Entry]) -> None:
        self._state.replay(entries, self.key_fields, self._observer)

    def _reload_locked(self) -> None:
        """Build the state from the snapshot and the journal. The journal is opened first: a
        journal's base is never newer than any snapshot renamed into place after it existed, so
        together they always cover every commit."""
        for _attempt in range(5):
            journal = JournalFile(self._journal_path)
            try:
                tables, seq = read_snapshot(self._snapshot_path)
                if journal.base > seq:
                    raise JournalCorrupt(
                        f"journal starts after commit {journal.base} but the snapshot "
                        f"{self._snapshot_path} only holds up to {seq}"
                    )
                state = State(tables, seq, self.key_fields)
                with self._plock.hold(exclusive=False):
                    entries, _torn = journal.read_new(seq)
                    st = os.fstat(journal.fd)
                try:
                    state.replay(entries, self.key_fields, NullObserver())
                except Gap as exc:
                    raise JournalCorrupt(str(exc)) from exc
            except BaseException:
                journal.close()
                raise
            if os.stat(self._journal_path).st_ino != journal.ino:
                journal.close()
                continue  # compacted while we read; the new pair is consistent, read it
            old = self._journal
            self._snapshot_bytes = _size(self._snapshot_path)
            self._observer.reset(state.tables)
            self._state = state
            self._journal = journal
            self._sig = (st.st_ino, st.st_size, st.st_mtime_ns)
            if old is not None:
                old.close()
            return
        raise StoreUnavailable("the store kept being compacted while loading it")


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
