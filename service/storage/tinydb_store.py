"""The TinyDB adapter of the storage port: a store of record for desktops and small instances.

TinyDB as shipped re-parses and rewrites its whole JSON file on every operation (365 ms per
insert at 100k records), corrupts it when killed mid-write and has no locking (FINDINGS.md). It
stays the product's database, made durable through its own extension points:

- `JournaledStorage` (a `tinydb.storages.Storage`) keeps the TinyDB-layout state in memory,
  commits each change as one fsynced journal line, and compacts the journal into a TinyDB-format
  snapshot `store.json` (see `journal.py` for the files and why each step is safe). It follows
  other processes (the admin CLI) by tailing the journal under an `fcntl.flock`.
  Stock `TinyDB(data_dir, storage=JournaledStorage)` works on it too (`read`/`write`), with
  stock TinyDB's semantics: a read-modify-write through its tables is not atomic across writers.
- `TinyDBStore` implements the port on top, with dict indexes (records by reference, by
  (issuer_id, iv), and every small table by its id) so lookups cost microseconds, and the
  uniqueness rules applied inside one exclusive transaction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import operator
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from tinydb.storages import Storage

from service.protocol.durable import replace_file, write_file
from service.storage.add_rule import resolve_additions
from service.storage.journal import (
    JOURNAL_NAME,
    LOCK_NAME,
    SNAPSHOT_NAME,
    Doc,
    Entry,
    JournalCorrupt,
    JournalFile,
    Op,
    ProcessLock,
    Tables,
    encode_entry,
    encode_snapshot,
    read_snapshot,
    remove_stale_temp_files,
    temp_name,
)
from service.storage.port import (
    AddOutcome,
    Client,
    Counts,
    Issuer,
    KeyVersion,
    Pairing,
    Record,
    StoreUnavailable,
    Verifier,
)

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")

DEFAULT_COMPACT_LINES = 20_000
DEFAULT_COMPACT_BYTES = 64 * 1024 * 1024


class Observer(Protocol):
    """Keeps derived indexes in step with the documents, whoever changed them (this thread,
    another thread, another process via the journal, or a reload)."""

    def reset(self, tables: Tables) -> None: ...
    def put(self, table: str, old: Doc | None, new: Doc | None) -> None: ...


class _Gap(Exception):
    """The journal skips sequence numbers this process has not seen: reload from the snapshot."""


class _State:
    """Everything derived from the files. Swapped whole on reload, so lock-free readers see
    either the old or the new state, never a mix."""

    __slots__ = ("keys", "next_ids", "seq", "tables")

    def __init__(self, tables: Tables, seq: int, key_fields: Mapping[str, str]) -> None:
        self.tables = tables
        self.seq = seq
        self.keys: dict[str, dict[Any, str]] = {t: {} for t in key_fields}
        self.next_ids: dict[str, int] = {}
        for name, docs in tables.items():
            field = key_fields.get(name)
            index = self.keys.setdefault(name, {})
            for doc_id, doc in docs.items():
                if field is not None:
                    index[doc.get(field)] = doc_id
                self._bump(name, doc_id)

    def _bump(self, table: str, doc_id: str) -> None:
        try:
            n = int(doc_id) + 1
        except ValueError:
            return  # not a TinyDB integer id (written by other tooling): no id to reserve
        if n > self.next_ids.get(table, 1):
            self.next_ids[table] = n

    def apply(self, ops: Iterable[Op], key_fields: Mapping[str, str], observer: Observer) -> None:
        """Apply committed operations. The document is stored before the index points to it, so
        a lock-free reader that finds an id in an index also finds the document."""
        for table, doc_id, new in ops:
            docs = self.tables.setdefault(table, {})
            old = docs.get(doc_id)
            if new is None:
                docs.pop(doc_id, None)
            else:
                docs[doc_id] = new
                self._bump(table, doc_id)
            field = key_fields.get(table)
            if field is not None:
                index = self.keys.setdefault(table, {})
                if old is not None and index.get(old.get(field)) == doc_id:
                    del index[old.get(field)]
                if new is not None:
                    index[new.get(field)] = doc_id
            observer.put(table, old, new)


class _NullObserver:
    def reset(self, tables: Tables) -> None:
        pass

    def put(self, table: str, old: Doc | None, new: Doc | None) -> None:
        pass


class Tx:
    """A read-modify-write in progress, under the thread lock and the exclusive process lock.

    Reads see the committed state plus this transaction's own writes; writes are collected as
    operations and become one journal line (one fsync) when the transaction function returns."""

    def __init__(self, state: _State, key_fields: Mapping[str, str]) -> None:
        self._state = state
        self._key_fields = key_fields
        self.ops: list[Op] = []
        self._pending: dict[tuple[str, Any], tuple[str, Doc | None]] = {}
        self._next_ids: dict[str, int] = {}

    def get(self, table: str, key: Any) -> Doc | None:
        pending = self._pending.get((table, key))
        if pending is not None:
            return pending[1]
        doc_id = self._state.keys.get(table, {}).get(key)
        return None if doc_id is None else self._state.tables[table].get(doc_id)

    def docs(self, table: str) -> list[Doc]:
        """Committed documents of a table (not this transaction's writes)."""
        return list(self._state.tables.get(table, {}).values())

    def new_id(self, table: str) -> str:
        n = max(self._next_ids.get(table, 1), self._state.next_ids.get(table, 1))
        self._next_ids[table] = n + 1
        return str(n)

    def put(self, table: str, doc: Doc) -> None:
        """Insert or replace the document with the same key (the table's key field)."""
        key = doc[self._key_fields[table]]
        pending = self._pending.get((table, key))
        if pending is not None:
            doc_id = pending[0]
        else:
            existing = self._state.keys.get(table, {}).get(key)
            doc_id = existing if existing is not None else self.new_id(table)
        self._pending[(table, key)] = (doc_id, doc)
        self.ops.append((table, doc_id, doc))

    def delete(self, table: str, key: Any) -> None:
        """Delete the document with this key, if there is one."""
        pending = self._pending.get((table, key))
        doc_id = pending[0] if pending is not None else self._state.keys.get(table, {}).get(key)
        if doc_id is None:
            return
        self._pending[(table, key)] = (doc_id, None)
        self.ops.append((table, doc_id, None))

    def put_id(self, table: str, doc_id: str, doc: Doc | None) -> None:
        """Write by TinyDB document id (None deletes): what TinyDB's own table API needs."""
        self.ops.append((table, doc_id, doc))


class JournaledStorage(Storage):
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
        self._observer: Observer = observer if observer is not None else _NullObserver()
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
                self._state = _State({}, 0, self.key_fields)
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

    # --- compaction -------------------------------------------------------------------------

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
                self._apply_entries(journal.read_new(self._state.seq)[0])
                new = JournalFile(self._journal_path)
                try:
                    self._apply_entries(new.read_new(self._state.seq)[0])
                    if self._state.seq < new.base:
                        raise _Gap
                except BaseException:
                    new.close()
                    raise
                journal.close()
                self._journal = journal = new
                self._snapshot_bytes = _size(self._snapshot_path)
                st = os.fstat(journal.fd)
            if st.st_size < journal.offset:
                raise _Gap  # shrunk under us: only a full reload is trustworthy
            self._apply_entries(journal.read_new(self._state.seq)[0])
            self._sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        except _Gap:
            self._reload_locked()

    def _apply_entries(self, entries: list[Entry]) -> None:
        state = self._state
        for entry in entries:
            if entry.seq <= state.seq:
                continue  # already in the snapshot or applied before a rotation
            if entry.seq != state.seq + 1:
                raise _Gap
            state.apply(entry.ops, self.key_fields, self._observer)
            state.seq = entry.seq

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
                state = _State(tables, seq, self.key_fields)
                with self._plock.hold(exclusive=False):
                    entries, _torn = journal.read_new(seq)
                    st = os.fstat(journal.fd)
                for entry in entries:
                    if entry.seq <= state.seq:
                        continue
                    if entry.seq != state.seq + 1:
                        raise JournalCorrupt(f"journal jumps from {state.seq} to {entry.seq}")
                    state.apply(entry.ops, self.key_fields, _NullObserver())
                    state.seq = entry.seq
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


# --- the port adapter ----------------------------------------------------------------------

KEY_FIELDS: Mapping[str, str] = {
    "records": "service_reference",
    "issuers": "issuer_id",
    "verifiers": "verifier_id",
    "clients": "client_id",
    "keys": "key_version",
    "settings": "name",
    "pairings": "pairing_id",
}

_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(Record))
_record_values = operator.attrgetter(*_RECORD_FIELDS)


def _record_doc(record: Record) -> Doc:
    """A shallow dict of the record: `dataclasses.asdict` deep-copies (25 ms per 1000 records,
    more than the whole durable commit); the nested `payslip_non_pii` is shared with a frozen
    Record, which nobody mutates."""
    return dict(zip(_RECORD_FIELDS, _record_values(record), strict=True))


def _build(cls: Callable[..., T], doc: Doc) -> T:
    """Rebuild a port dataclass; fields a newer version added are ignored, not fatal."""
    try:
        return cls(**doc)
    except TypeError:
        names = {f.name for f in dataclasses.fields(cast(Any, cls))}
        return cls(**{k: v for k, v in doc.items() if k in names})


def _as_doc(obj: Any) -> Doc:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


class _RecordIndex:
    """Indexes over records the port needs besides the reference: (issuer_id, iv) for the IV
    rule, and per-issuer counts, kept in step by `JournaledStorage`."""

    def __init__(self) -> None:
        self.by_iv: dict[tuple[str, str], str] = {}
        self.records: Counter[str] = Counter()
        self.revoked: Counter[str] = Counter()

    def reset(self, tables: Tables) -> None:
        by_iv: dict[tuple[str, str], str] = {}
        records: Counter[str] = Counter()
        revoked: Counter[str] = Counter()
        for doc in tables.get("records", {}).values():
            by_iv[(doc["issuer_id"], doc["iv"])] = doc["service_reference"]
            records[doc["issuer_id"]] += 1
            if doc.get("status") == "revoked":
                revoked[doc["issuer_id"]] += 1
        self.by_iv, self.records, self.revoked = by_iv, records, revoked

    def put(self, table: str, old: Doc | None, new: Doc | None) -> None:
        if table != "records":
            return
        if old is not None:
            key = (old["issuer_id"], old["iv"])
            if self.by_iv.get(key) == old["service_reference"]:
                del self.by_iv[key]
            _decrement(self.records, old["issuer_id"])
            if old.get("status") == "revoked":
                _decrement(self.revoked, old["issuer_id"])
        if new is not None:
            self.by_iv[(new["issuer_id"], new["iv"])] = new["service_reference"]
            self.records[new["issuer_id"]] += 1
            if new.get("status") == "revoked":
                self.revoked[new["issuer_id"]] += 1


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]


MIN_FREE_BYTES = 4 * 1024 * 1024
"""Below this much free disk the store reports not ready: a 1000-record batch's journal line
is about 0.7 MB, and a compaction rewrites the snapshot beside the old one."""


class TinyDBStore:
    """The `Store` port on TinyDB with a journal. Safe for many threads and several processes
    (the server and the admin CLI) on one data directory; every mutation is fsynced before it
    returns and survives kill -9."""

    def __init__(
        self,
        data_dir: Path,
        *,
        compact_lines: int = DEFAULT_COMPACT_LINES,
        compact_bytes: int = DEFAULT_COMPACT_BYTES,
        background_compaction: bool = True,
        compact_on_close: bool = True,
        refresh_interval: float = 0.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self._index = _RecordIndex()
        self.storage = JournaledStorage(
            self.data_dir,
            key_fields=KEY_FIELDS,
            observer=self._index,
            compact_lines=compact_lines,
            compact_bytes=compact_bytes,
            background_compaction=background_compaction,
            compact_on_close=compact_on_close,
            refresh_interval=refresh_interval,
        )

    def __enter__(self) -> TinyDBStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- records ------------------------------------------------------------------------

    def add_records(self, records: Sequence[Record]) -> list[AddOutcome]:
        """See the port. The rule (`add_rule.py`) is applied and all CREATED records written in
        one exclusive transaction, so threads and processes cannot both win a reference or IV."""

        def run(tx: Tx) -> list[AddOutcome]:
            def stored(reference: str) -> Record | None:
                doc = tx.get("records", reference)
                return None if doc is None else _build(Record, doc)

            # The index is read inside the transaction: a reload replaces it.
            plan = resolve_additions(records, stored, self._index.by_iv)
            for record in plan.created:
                tx.put("records", _record_doc(record))
            return plan.outcomes

        if not records:
            return []
        return self.storage.transact(run)

    def get_record(self, service_reference: str) -> Record | None:
        doc = self.storage.get("records", service_reference)
        return None if doc is None else _build(Record, doc)

    def export_table(self, table: str) -> list[dict[str, Any]]:
        """Every committed document of a table, as plain dicts (not part of the port: used by
        `migrate-store` to move an instance to PostgreSQL)."""
        return [dict(doc) for doc in self.storage.docs(table)]

    def all_records(self) -> list[Record]:
        """Every record, in insertion order (not part of the port: used by `migrate-store`)."""
        return [_build(Record, doc) for doc in self.storage.docs("records")]

    def pin_key(self, service_reference: str, key_version: str) -> None:
        """Pins only an unpinned record: when two verifications race, the first pin stays."""
        current = self.storage.get("records", service_reference)
        if current is None or current["key_version"] is not None:
            return

        def run(tx: Tx) -> None:
            doc = tx.get("records", service_reference)
            if doc is not None and doc["key_version"] is None:
                tx.put("records", {**doc, "key_version": key_version})

        self.storage.transact(run)

    def revoke_record(
        self, service_reference: str, issuer_id: str, reason: str | None, at: str
    ) -> Record | None:
        def run(tx: Tx) -> Record | None:
            doc = tx.get("records", service_reference)
            if doc is None or doc["issuer_id"] != issuer_id:
                return None
            if doc["status"] == "revoked":
                return _build(Record, doc)
            new = {**doc, "status": "revoked", "revoked_at": at, "revoke_reason": reason}
            tx.put("records", new)
            return _build(Record, new)

        return self.storage.transact(run)

    def counts(self) -> Counts:
        index = self._index
        return self.storage.run_locked(lambda: Counts(dict(index.records), dict(index.revoked)))

    # --- issuers, verifiers, clients ----------------------------------------------------

    def _put(self, table: str, doc: Doc) -> None:
        self.storage.transact(lambda tx: tx.put(table, doc))

    def add_issuer(self, issuer: Issuer) -> None:
        self._put("issuers", _as_doc(issuer))

    def get_issuer(self, issuer_id: str) -> Issuer | None:
        doc = self.storage.get("issuers", issuer_id)
        return None if doc is None else _build(Issuer, doc)

    def list_issuers(self) -> list[Issuer]:
        return [_build(Issuer, d) for d in self.storage.docs("issuers")]

    def add_verifier(self, verifier: Verifier) -> None:
        self._put("verifiers", _as_doc(verifier))

    def list_verifiers(self) -> list[Verifier]:
        return [_build(Verifier, d) for d in self.storage.docs("verifiers")]

    def add_client(self, client: Client) -> None:
        self._put("clients", _as_doc(client))

    def get_client(self, client_id: str) -> Client | None:
        doc = self.storage.get("clients", client_id)
        return None if doc is None else _build(Client, doc)

    def list_clients(self) -> list[Client]:
        return [_build(Client, d) for d in self.storage.docs("clients")]

    def set_client_disabled(self, client_id: str, disabled: bool) -> bool:
        def run(tx: Tx) -> bool:
            doc = tx.get("clients", client_id)
            if doc is None:
                return False
            if doc.get("disabled") != disabled:
                tx.put("clients", {**doc, "disabled": disabled})
            return True

        return self.storage.transact(run)

    # --- phone pairings -----------------------------------------------------------------

    def add_pairing(self, pairing: Pairing) -> None:
        self._put("pairings", _as_doc(pairing))

    def take_pairing(self, pairing_id: str, secret_hmac: str) -> Pairing | None:
        def run(tx: Tx) -> Pairing | None:
            doc = tx.get("pairings", pairing_id)
            if doc is None or doc.get("secret_hmac") != secret_hmac:
                return None
            tx.delete("pairings", pairing_id)
            return _build(Pairing, doc)

        return self.storage.transact(run)

    def purge_pairings(self, expired_before: str) -> int:
        def run(tx: Tx) -> int:
            docs = tx.docs("pairings")
            stale = [d["pairing_id"] for d in docs if d["expires_at"] < expired_before]
            for pairing_id in stale:
                tx.delete("pairings", pairing_id)
            return len(stale)

        return self.storage.transact(run)

    # --- keys ---------------------------------------------------------------------------

    def add_key(self, key: KeyVersion, demote_active: bool) -> None:
        def run(tx: Tx) -> None:
            if demote_active:
                for doc in tx.docs("keys"):
                    if (
                        doc["issuer_id"] == key.issuer_id
                        and doc["state"] == "active"
                        and doc["key_version"] != key.key_version
                    ):
                        tx.put("keys", {**doc, "state": "live"})
            tx.put("keys", _as_doc(key))

        self.storage.transact(run)

    def get_key(self, key_version: str) -> KeyVersion | None:
        doc = self.storage.get("keys", key_version)
        return None if doc is None else _build(KeyVersion, doc)

    def list_keys(self, issuer_id: str | None = None) -> list[KeyVersion]:
        return [
            _build(KeyVersion, d)
            for d in self.storage.docs("keys")
            if issuer_id is None or d["issuer_id"] == issuer_id
        ]

    def retire_key(self, key_version: str, at: str) -> KeyVersion | None:
        """Overwrites the wrapped key, then compacts at once: until then the material would
        still sit in older journal lines and in the previous snapshot. (Freed disk blocks are not
        scrubbed; the key is wrapped under the master key anyway.)"""

        def run(tx: Tx) -> KeyVersion | None:
            doc = tx.get("keys", key_version)
            if doc is None:
                return None
            if doc["state"] == "retired" and not doc["wrapped"]:
                return _build(KeyVersion, doc)
            new = {**doc, "state": "retired", "wrapped": "", "retired_at": at}
            tx.put("keys", new)
            return _build(KeyVersion, new)

        retired = self.storage.transact(run)
        if retired is not None:
            self._purge_history()
        return retired

    def _purge_history(self) -> None:
        target = self.storage.seq
        self.storage.wait_for_compaction()
        for _attempt in range(3):
            self.storage.compact(keep_history=False)
            if self.storage.purged_up_to(target):
                return
        log.warning("could not compact after retiring a key; old material stays in the journal")

    # --- settings -----------------------------------------------------------------------

    def get_setting(self, name: str) -> str | None:
        doc = self.storage.get("settings", name)
        return None if doc is None else cast(str, doc["value"])

    def set_setting(self, name: str, value: str) -> None:
        self._put("settings", {"name": name, "value": value})

    # --- lifecycle ----------------------------------------------------------------------

    def ping(self) -> bool:
        """Readable and writable data directory with room to write, and the journal can be
        followed. A full disk reports not ready: verifications still answer from what is
        stored, but registrations (and compaction) would fail."""
        try:
            self.storage.refresh()
            if shutil.disk_usage(self.data_dir).free < MIN_FREE_BYTES:
                return False
            return os.access(self.data_dir, os.R_OK | os.W_OK | os.X_OK)
        except (StoreUnavailable, OSError):
            return False

    def close(self) -> None:
        self.storage.close()
