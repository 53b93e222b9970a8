"""`python -m service migrate-store --from DIR --to postgresql://...`: move a TinyDB instance up to
PostgreSQL.

Why it works the way it does:

- Idempotent and resumable: everything is inserted only when absent, records through the port's
  own `add_records` (a record already there with the same content is a DUPLICATE, not an error),
  so a run interrupted half-way is simply run again. Records go over in chunks of 1000, each one
  transaction.
- Exact: instance settings (the wrapped token signing key and HMAC keys), issuers, verifiers,
  clients (secret HMACs, disabled flags), keys (wrapped material, states, retirement times) and
  records (revocations and key pins included) are copied as stored, so every client secret,
  token and badge keeps working. The master key is not copied: the new deployment must use the
  same one (`PAYSLIP_MASTER_KEY`, or the old `master.key`), which is checked before anything is
  written.
- Verified by counts: at the end the PostgreSQL side must hold every issuer, verifier, client and
  key of the source, and per issuer at least as many records and revocations (it may already
  serve and hold newer ones), else the command fails. Pending phone pairings (10-minute links)
  are not moved.
- The source is only read: its store is opened without compaction and closed without writing.
  A TinyDB store in use by a running server can be read, but stop that server first, or records
  registered meanwhile are missed (a second run picks them up).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service.composition.instance import (
    STORE_DIR,
    InstanceError,
    domain_for,
    is_initialised,
    load_master_key,
    offline_config,
)
from service.protocol.vocabulary import KeyState, RecordStatus
from service.storage.port import AddStatus, Client, KeyVersion, Record

CHUNK = 1000


def migrate_store(source_dir: Path, database_url: str) -> dict[str, Any]:
    if not is_initialised(source_dir) or not (source_dir / STORE_DIR).is_dir():
        raise InstanceError(f"{source_dir} holds no TinyDB instance (no master key or db/)")
    try:
        from service.storage.postgres_store import PostgresStore
    except ImportError:
        raise InstanceError(
            "PostgreSQL support is not installed: pip install 'payslip-verify[postgres]'"
        ) from None
    from service.storage.tinydb_store import TinyDBStore

    master_key = load_master_key(source_dir)
    source = TinyDBStore(
        source_dir / STORE_DIR, background_compaction=False, compact_on_close=False
    )
    try:
        domain_for(source, offline_config(master_key))  # the key opens the source, or refuse
        target = PostgresStore(database_url)
        try:
            _check_target(target, source)
            copied = _copy(source, target)
            _verify_counts(source, target)
        finally:
            target.close()
    finally:
        source.close()
    return {"from": str(source_dir), **copied, "verified": True}


def _check_target(target: Any, source: Any) -> None:
    """An empty database, or one holding this same instance (a resumed run)."""
    there = target.get_setting("token_signing_key")
    if there is not None and there != source.get_setting("token_signing_key"):
        raise InstanceError(
            "the PostgreSQL database already holds another instance; point --to at an empty "
            "database (or at the one an earlier run of this command filled)"
        )


def _copy(source: Any, target: Any) -> dict[str, int]:
    """Each table in the order its rows refer to each other; every step skips what is there."""
    settings = _copy_settings(source, target)
    issuers, verifiers = _copy_parties(source, target)
    clients = _copy_clients(source, target)
    keys = _copy_keys(source, target)
    records, created, already = _copy_records(source, target)
    return {
        "settings": settings,
        "issuers": issuers,
        "verifiers": verifiers,
        "clients": clients,
        "keys": keys,
        "records": records,
        "records_created": created,
        "records_already_there": already,
    }


def _copy_settings(source: Any, target: Any) -> int:
    settings = source.export_table("settings")
    for doc in settings:
        if target.get_setting(doc["name"]) is None:
            target.set_setting(doc["name"], doc["value"])
    return len(settings)


def _copy_parties(source: Any, target: Any) -> tuple[int, int]:
    known_issuers = {i.issuer_id for i in target.list_issuers()}
    issuers = source.list_issuers()
    for issuer in issuers:
        if issuer.issuer_id not in known_issuers:
            target.add_issuer(issuer)
    known_verifiers = {v.verifier_id for v in target.list_verifiers()}
    verifiers = source.list_verifiers()
    for verifier in verifiers:
        if verifier.verifier_id not in known_verifiers:
            target.add_verifier(verifier)
    return len(issuers), len(verifiers)


def _copy_clients(source: Any, target: Any) -> int:
    clients: list[Client] = source.list_clients()
    for client in clients:
        existing = target.get_client(client.client_id)
        if existing is None:
            target.add_client(client)
        elif existing.disabled != client.disabled:
            target.set_client_disabled(client.client_id, client.disabled)
    return len(clients)


def _copy_keys(source: Any, target: Any) -> int:
    keys: list[KeyVersion] = source.list_keys()
    for key in keys:
        existing_key = target.get_key(key.key_version)
        if existing_key is None:
            # As stored: states (active, live, retired) come over unchanged, nothing demoted.
            target.add_key(key, demote_active=False)
        elif key.state == KeyState.RETIRED and existing_key.state != KeyState.RETIRED:
            target.retire_key(key.key_version, key.retired_at or "")
    return len(keys)


def _copy_records(source: Any, target: Any) -> tuple[int, int, int]:
    """Records in chunks; one that collides with a different stored record stops the copy."""
    records: list[Record] = source.all_records()
    created = already = 0
    for start in range(0, len(records), CHUNK):
        chunk = records[start : start + CHUNK]
        outcomes = target.add_records(chunk)
        for offset, (record, outcome) in enumerate(zip(chunk, outcomes, strict=True)):
            if outcome.status is AddStatus.CREATED:
                created += 1
                continue
            if outcome.status is not AddStatus.DUPLICATE:
                raise InstanceError(
                    f"record {start + offset + 1} of the source collides with a "
                    f"different record in PostgreSQL ({outcome.status.name}); nothing after it "
                    "was copied"
                )
            already += 1
            _catch_up(target, record, outcome.record)
    return len(records), created, already


def _catch_up(target: Any, record: Record, stored: Record | None) -> None:
    """A record copied by an earlier run may have been revoked or pinned in the source since."""
    if stored is None:
        return
    if record.status == RecordStatus.REVOKED and stored.status != RecordStatus.REVOKED:
        target.revoke_record(
            record.service_reference, record.issuer_id, record.revoke_reason, record.revoked_at
        )
    if record.key_version and stored.key_version is None:
        target.pin_key(record.service_reference, record.key_version)


def _verify_counts(source: Any, target: Any) -> None:
    problems = []
    for what, here, there in (
        ("issuers", source.list_issuers(), target.list_issuers()),
        ("verifiers", source.list_verifiers(), target.list_verifiers()),
        ("clients", source.list_clients(), target.list_clients()),
        ("keys", source.list_keys(), target.list_keys()),
    ):
        missing = {_id(x) for x in here} - {_id(x) for x in there}
        if missing:
            problems.append(f"{len(missing)} {what} missing")
    src, dst = source.counts(), target.counts()
    for issuer_id, count in src.records_by_issuer.items():
        # At least: the PostgreSQL side may already serve, and so hold newer records.
        if dst.records_by_issuer.get(issuer_id, 0) < count:
            problems.append(
                f"records of issuer {issuer_id}: {count} in the source, "
                f"{dst.records_by_issuer.get(issuer_id, 0)} in PostgreSQL"
            )
        if dst.revoked_by_issuer.get(issuer_id, 0) < src.revoked_by_issuer.get(issuer_id, 0):
            problems.append(f"revoked records of issuer {issuer_id} are missing")
    if problems:
        raise InstanceError("the copy does not match the source: " + "; ".join(problems))


def _id(item: Any) -> str:
    for name in ("issuer_id", "verifier_id", "client_id", "key_version"):
        if hasattr(item, name):
            return str(getattr(item, name))
    raise TypeError(type(item).__name__)
