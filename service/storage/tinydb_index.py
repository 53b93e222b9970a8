"""The TinyDB store's indexes over records besides the reference: (issuer_id, iv) for the IV rule
and the per-issuer counts of records and revoked records.

An `Observer` of `JournaledStorage`: it is told of every document change (this thread's, another
thread's, another process's read from the journal) and of every reload, so it stays in step with
the documents and no question needs a scan of the records.
"""

from __future__ import annotations

from collections import Counter

from service.protocol.vocabulary import RecordStatus
from service.storage.journal import Doc, Tables


class RecordIndex:
    """`by_iv`: (issuer_id, iv) -> reference; `records`, `revoked`: counts per issuer_id."""

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
            if doc.get("status") == RecordStatus.REVOKED:
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
            if old.get("status") == RecordStatus.REVOKED:
                _decrement(self.revoked, old["issuer_id"])
        if new is not None:
            self.by_iv[(new["issuer_id"], new["iv"])] = new["service_reference"]
            self.records[new["issuer_id"]] += 1
            if new.get("status") == RecordStatus.REVOKED:
                self.revoked[new["issuer_id"]] += 1


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
