"""The TinyDB store's documents in memory, and the transaction that changes them.

Split from the engine (`tinydb_engine.py`) because this part touches no file and takes no
lock: it is the pure bookkeeping of "which documents exist, under which id, found by which
key", and the write-set a transaction collects before the engine makes it durable. The engine
decides when operations are committed (after the journal line is fsynced) and only then applies
them here, so nothing in this module can ever hold an unacknowledged write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from service.storage.journal import Doc, Entry, Op, Tables


class Gap(Exception):
    """The journal skips sequence numbers this state has not seen: only a reload from the
    snapshot can be trusted."""


class Observer(Protocol):
    """Keeps derived indexes in step with the documents, whoever changed them (this thread,
    another thread, another process via the journal, or a reload)."""

    def reset(self, tables: Tables) -> None: ...
    def put(self, table: str, old: Doc | None, new: Doc | None) -> None: ...


class NullObserver:
    """For a storage without derived indexes, and for building a state that is not live yet."""

    def reset(self, tables: Tables) -> None:
        pass

    def put(self, table: str, old: Doc | None, new: Doc | None) -> None:
        pass


class State:
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

    def replay(
        self, entries: Iterable[Entry], key_fields: Mapping[str, str], observer: Observer
    ) -> None:
        """Apply journal entries in sequence order. Entries already contained (in the snapshot,
        or applied before the journal was rotated) are skipped; a missing one raises `Gap`
        before anything after it is applied."""
        for entry in entries:
            if entry.seq <= self.seq:
                continue
            if entry.seq != self.seq + 1:
                raise Gap(f"journal jumps from {self.seq} to {entry.seq}")
            self.apply(entry.ops, key_fields, observer)
            self.seq = entry.seq


class Tx:
    """A read-modify-write in progress, under the thread lock and the exclusive process lock.

    Reads see the committed state plus this transaction's own writes; writes are collected as
    operations and become one journal line (one fsync) when the transaction function returns."""

    def __init__(self, state: State, key_fields: Mapping[str, str]) -> None:
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
