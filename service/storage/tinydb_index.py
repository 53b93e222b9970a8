"""The TinyDB store's indexes over records besides the reference: (issuer_id, iv) for the IV rule
and the per-issuer counts of records and revoked records, and of records not revoked per key.

An `Observer` of `JournaledStorage`: it is told of every document change (this thread's, another
thread's, another process's read from the journal) and of every reload, so it stays in step with
the documents and no question needs a scan of the records.
"""

from __future__ import annotations

from collections import Counter

from service.protocol.vocabulary import RecordStatus
from service.storage.journal import Doc, Tables


class RecordIndex:
    """`by_iv`: (issuer_id, iv) -> reference; `records`, `revoked`: counts per issuer_id;
    `active_by_key`, `unpinned`: records not revoked, per pinned key version / per issuer_id
    when not pinned yet."""

    def __init__(self) -> None:
        self.by_iv: dict[tuple[str, str], str] = {}
        self.records: Counter[str] = Counter()
        self.revoked: Counter[str] = Counter()
        self.active_by_key: Counter[str] = Counter()
        self.unpinned: Counter[str] = Counter()

    def reset(self, tables: Tables) -> None:
        fresh = RecordIndex()
        for doc in tables.get("records", {}).values():
            fresh._add(doc)
        self.by_iv, self.records, self.revoked = fresh.by_iv, fresh.records, fresh.revoked
        self.active_by_key, self.unpinned = fresh.active_by_key, fresh.unpinned

    def put(self, table: str, old: Doc | None, new: Doc | None) -> None:
        if table != "records":
            return
        if old is not None:
            key = (old["issuer_id"], old["iv"])
            if self.by_iv.get(key) == old["service_reference"]:
                del self.by_iv[key]
            _decrement(self.records, old["issuer_id"])
            if old.get("status") == RecordStatus.REVOKED:
                _decrement(self.revoked, old["issuer_id"])
            else:
                _decrement(*self._active_counter(old))
        if new is not None:
            self._add(new)

    def _add(self, doc: Doc) -> None:
        self.by_iv[(doc["issuer_id"], doc["iv"])] = doc["service_reference"]
        self.records[doc["issuer_id"]] += 1
        if doc.get("status") == RecordStatus.REVOKED:
            self.revoked[doc["issuer_id"]] += 1
        else:
            counter, key = self._active_counter(doc)
            counter[key] += 1

    def _active_counter(self, doc: Doc) -> tuple[Counter[str], str]:
        """Where a record that is not revoked is counted: by its key, else by its issuer."""
        key_version = doc.get("key_version")
        if key_version:
            return self.active_by_key, str(key_version)
        return self.unpinned, doc["issuer_id"]


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
