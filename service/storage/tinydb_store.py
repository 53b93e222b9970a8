"""The TinyDB adapter of the storage port: a store of record for desktops and small instances.

TinyDB as shipped is neither fast nor durable enough to be one (FINDINGS.md); it stays the
product's database, made durable through its own extension points. The adapter is split by
concern so each part can be read alone:

- `journal.py`: the files (TinyDB-format snapshot, append-only journal, process lock) and the
  only code that touches them.
- `tinydb_state.py`: the documents in memory and the transaction (`Tx`) that collects writes.
- `tinydb_engine.py`: `JournaledStorage`, the TinyDB `Storage` that commits each transaction as
  one fsynced journal line, follows other processes' commits and compacts.
- `tinydb_index.py`: the indexes over records the port needs besides the reference ((issuer_id,
  iv) for the IV rule, counts per issuer), kept in step with every change.
- this module: `TinyDBStore`, the `Store` port on top (records by reference and every small
  table by its id, so lookups cost microseconds), and the uniqueness rules applied inside one
  exclusive transaction.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, Unpack, cast

from service.protocol.vocabulary import KeyState, RecordStatus
from service.storage.add_rule import resolve_additions
from service.storage.journal import Doc
from service.storage.port import (
    AddOutcome,
    Client,
    Counts,
    Issuer,
    KeyVersion,
    Pairing,
    Record,
    StoreUnavailable,
    VerificationRead,
    Verifier,
)
from service.storage.tinydb_engine import JournaledStorage, JournalOptions
from service.storage.tinydb_index import RecordIndex
from service.storage.tinydb_state import Tx

__all__ = ["KEY_FIELDS", "MIN_FREE_BYTES", "TinyDBStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

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


def _record(doc: Doc) -> Record:
    """A stored record with its status as the enum (documents hold the plain word once they
    have been read back from disk)."""
    return _build(Record, {**doc, "status": RecordStatus(doc["status"])})


def _key(doc: Doc) -> KeyVersion:
    """A stored key with its state as the enum (see `_record`)."""
    return _build(KeyVersion, {**doc, "state": KeyState(doc["state"])})


def _as_doc(obj: Any) -> Doc:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


MIN_FREE_BYTES = 4 * 1024 * 1024
"""Below this much free disk the store reports not ready: a 1000-record batch's journal line
is about 0.7 MB, and a compaction rewrites the snapshot beside the old one."""


class TinyDBStore:
    """The `Store` port on TinyDB with a journal. Safe for many threads and several processes
    (the server and the admin CLI) on one data directory; every mutation is fsynced before it
    returns and survives kill -9."""

    def __init__(self, data_dir: Path, **options: Unpack[JournalOptions]) -> None:
        """`options`: how the journal compacts and follows other processes (`JournaledStorage`)."""
        self.data_dir = Path(data_dir)
        self._index = RecordIndex()
        self.storage = JournaledStorage(
            self.data_dir, key_fields=KEY_FIELDS, observer=self._index, **options
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
                return None if doc is None else _record(doc)

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
        return None if doc is None else _record(doc)

    def read_for_verification(
        self, service_reference: str, client_id: str | None = None
    ) -> VerificationRead:
        """See the port. In memory, so simply the separate reads."""
        client = None if client_id is None else self.get_client(client_id)
        record = self.get_record(service_reference)
        if record is None:
            return VerificationRead(None, client=client)
        keys = tuple(
            _key(d)
            for d in self.storage.docs("keys")
            if d["issuer_id"] == record.issuer_id or d["key_version"] == record.key_version
        )
        return VerificationRead(record, self.get_issuer(record.issuer_id), keys, client)

    def export_table(self, table: str) -> list[dict[str, Any]]:
        """Every committed document of a table, as plain dicts (not part of the port: used by
        `migrate-store` to move an instance to PostgreSQL)."""
        return [dict(doc) for doc in self.storage.docs(table)]

    def all_records(self) -> list[Record]:
        """Every record, in insertion order (not part of the port: used by `migrate-store`)."""
        return [_record(doc) for doc in self.storage.docs("records")]

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
            if doc["status"] == RecordStatus.REVOKED:
                return _record(doc)
            new = {**doc, "status": RecordStatus.REVOKED, "revoked_at": at, "revoke_reason": reason}
            tx.put("records", new)
            return _record(new)

        return self.storage.transact(run)

    def counts(self) -> Counts:
        index = self._index
        return self.storage.run_locked(
            lambda: Counts(
                dict(index.records),
                dict(index.revoked),
                dict(index.active_by_key),
                dict(index.unpinned),
            )
        )

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

    def touch_client(self, client_id: str, at: str) -> None:
        def run(tx: Tx) -> None:
            doc = tx.get("clients", client_id)
            if doc is not None and doc.get("last_used_at") != at:
                tx.put("clients", {**doc, "last_used_at": at})

        self.storage.transact(run)

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
                        and doc["state"] == KeyState.ACTIVE
                        and doc["key_version"] != key.key_version
                    ):
                        tx.put("keys", {**doc, "state": KeyState.LIVE})
            tx.put("keys", _as_doc(key))

        self.storage.transact(run)

    def get_key(self, key_version: str) -> KeyVersion | None:
        doc = self.storage.get("keys", key_version)
        return None if doc is None else _key(doc)

    def list_keys(self, issuer_id: str | None = None) -> list[KeyVersion]:
        return [
            _key(d)
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
            if doc["state"] == KeyState.RETIRED and not doc["wrapped"]:
                return _key(doc)
            new = {**doc, "state": KeyState.RETIRED, "wrapped": "", "retired_at": at}
            tx.put("keys", new)
            return _key(new)

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

    def replace_setting(self, name: str, expected: str | None, value: str) -> bool:
        def run(tx: Tx) -> bool:
            doc = tx.get("settings", name)
            if (None if doc is None else doc["value"]) != expected:
                return False
            tx.put("settings", {"name": name, "value": value})
            return True

        return bool(self.storage.transact(run))

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
