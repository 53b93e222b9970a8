"""The PostgreSQL adapter's records: adding them (batches), reading, pinning, revoking, counting.

`add_records` decides verdicts in Python with the shared rule in ``add_rule.py`` (the port's rules
are ordered and depend on earlier records of the same call) and writes all CREATED rows with one
COPY in one transaction. Attempts go from cheapest to serial, each repeated in the next mode only
when it cannot guarantee the result of a serial execution:

1. NEW, when the batch's records do not collide with each other (a pay run): under a *shared*
   advisory lock, COPY every record without looking anything up. Any stored or concurrently
   committed row with one of the references or (issuer_id, iv) pairs fails the COPY (unique
   constraints), so success means every verdict is CREATED.
2. CHECKED: under the shared lock, look up the stored rows the batch collides with, decide, COPY
   the CREATED ones. Concurrent batches proceed in parallel.
3. SERIAL, when a concurrent writer committed a colliding row in between (unique violation,
   deadlock) or a verdict is IV_REUSED (the one verdict no constraint re-checks): the same steps
   under the *exclusive* form of the lock, which excludes every other batch, so the table is
   stable and nothing can collide.

A failed attempt rolls back completely (one transaction), so a batch is never partly stored.
"""

from __future__ import annotations

import enum
import logging
import operator
from collections.abc import Sequence
from functools import partial
from typing import Final

import orjson
from psycopg import errors as pg_errors
from psycopg.rows import DictRow

from service.protocol.vocabulary import RecordStatus
from service.storage.add_rule import resolve_additions
from service.storage.pg_database import Conn, PgDatabase, Retry, transaction
from service.storage.pg_rows import (
    RECORD_COPY,
    client_from_row,
    key_from_row,
    record_copy_values,
    record_from_row,
)
from service.storage.port import AddOutcome, AddStatus, Counts, Issuer, Record, VerificationRead

log = logging.getLogger("service.storage.postgres_store")

# Advisory lock key (bigint, per database). Arbitrary constant ("PVrecord").
RECORDS_LOCK: Final = 0x5056_7265_636F_7264


class _Mode(enum.Enum):
    """How one attempt of `add_records` runs, cheapest first (see the module docstring)."""

    NEW = "new"
    """Shared lock, no lookup: every record is taken to be new, so any collision with a stored
    row fails the COPY (unique violation) and the attempt is repeated CHECKED."""
    CHECKED = "checked"
    """Shared lock, the stored rows the batch collides with looked up, verdicts decided."""
    SERIAL = "serial"
    """Exclusive lock: no other batch runs, so the verdicts are those of a serial execution."""


class _NextModeError(Exception):
    """This attempt cannot guarantee a serial result: roll back and repeat in the next mode."""


_NEXT = {_Mode.NEW: _Mode.CHECKED, _Mode.CHECKED: _Mode.SERIAL}


def _stored_rows(conn: Conn, records: list[Record]) -> list[DictRow]:
    """The stored records the batch collides with, by reference or by (issuer_id, iv).

    One statement, hence one snapshot, for both lookups: two statements could see an IV
    committed by another writer but not the reference committed with it. LATERAL forces one
    index probe per wanted pair; a plain join may pick a hash join over a full scan when
    statistics are stale."""
    return conn.execute(
        "SELECT * FROM records WHERE service_reference = ANY(%s) "
        "UNION ALL "
        "SELECT r.* FROM unnest(%s::text[], %s::text[]) AS w(issuer_id, iv) "
        "CROSS JOIN LATERAL (SELECT * FROM records "
        "  WHERE issuer_id = w.issuer_id AND iv = w.iv) AS r",
        (
            sorted({r.service_reference for r in records}),
            [r.issuer_id for r in records],
            [r.iv for r in records],
        ),
    ).fetchall()


_by_reference = operator.attrgetter("service_reference")


def _copy_in(conn: Conn, created: list[Record]) -> None:
    """Insert with COPY, sorted by reference: concurrent batches then wait for each other's
    rows in one order, which makes deadlocks unlikely (one still only costs a retry)."""
    with conn.cursor().copy(RECORD_COPY) as copy:
        for record in sorted(created, key=_by_reference):
            copy.write_row(record_copy_values(record))


def _add_records_once(
    conn: Conn, records: list[Record], mode: _Mode, alone: list[AddOutcome]
) -> list[AddOutcome]:
    """One attempt, one transaction. Attempts under the shared lock give up, rolling back,
    whenever their result might not match a serial execution. `alone`: the verdicts if nothing
    were stored (all CREATED in NEW mode), which a NEW attempt returns when its COPY succeeds."""
    try:
        with transaction(conn):
            lock = (
                "pg_advisory_xact_lock" if mode is _Mode.SERIAL else "pg_advisory_xact_lock_shared"
            )
            conn.execute(f"SELECT {lock}(%s)", (RECORDS_LOCK,))
            if mode is _Mode.NEW:
                _copy_in(conn, records)
                return alone
            rows = _stored_rows(conn, records)
            stored_by_ref = {row["service_reference"]: record_from_row(row) for row in rows}
            stored_ivs = {(row["issuer_id"], row["iv"]) for row in rows}
            plan = resolve_additions(records, stored_by_ref.get, stored_ivs)
            if mode is _Mode.CHECKED and any(
                o.status is AddStatus.IV_REUSED for o in plan.outcomes
            ):
                # IV_REUSED is the one verdict that rests on a reference being *absent*
                # without inserting it, so no constraint would catch a concurrent writer
                # inserting it (whose serial verdict would then be CONFLICT or DUPLICATE).
                # Rare (it is a client error), so it simply takes the serial path.
                raise _NextModeError("IV_REUSED verdicts are decided serially")
            if plan.created:
                _copy_in(conn, plan.created)
            return plan.outcomes
    except (
        pg_errors.UniqueViolation,
        pg_errors.DeadlockDetected,
        pg_errors.SerializationFailure,
    ) as exc:
        if mode is _Mode.SERIAL:
            raise  # cannot happen while every writer takes the lock; surface it loudly
        raise _NextModeError(type(exc).__name__) from exc


class RecordTables:
    """The record half of `PostgresStore` (a mixin: it runs on the store's `_db`)."""

    _db: PgDatabase

    def add_records(self, records: Sequence[Record]) -> list[AddOutcome]:
        """See the port. One transaction, one commit, all CREATED rows inserted together."""
        if not records:
            return []
        batch = list(records)
        # A batch whose records do not collide with each other is most likely all new (a pay
        # run): try it without looking anything up.
        alone = resolve_additions(batch, lambda _: None, ())
        mode = _Mode.NEW if len(alone.created) == len(batch) else _Mode.CHECKED
        while True:
            try:
                return self._db.run(
                    partial(_add_records_once, records=batch, mode=mode, alone=alone.outcomes),
                    Retry.BEFORE_COMMIT,
                )
            except _NextModeError as why:
                log.debug("add_records repeated %s: %s", _NEXT[mode].value, why)
                mode = _NEXT[mode]

    def get_record(self, service_reference: str) -> Record | None:
        def work(conn: Conn) -> Record | None:
            row = conn.execute(
                "SELECT * FROM records WHERE service_reference = %s",
                (service_reference,),
            ).fetchone()
            return record_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)

    def read_for_verification(
        self, service_reference: str, client_id: str | None = None
    ) -> VerificationRead:
        """See the port: one statement, one snapshot, one round trip. The record's columns come
        as they are; the client, the issuer and the keys as JSON text (small rows), parsed by
        orjson: psycopg's jsonb loader (the stdlib's) was ~15 % of this read's client CPU."""

        def work(conn: Conn) -> VerificationRead:
            row = conn.execute(
                "SELECT r.*, "
                "(SELECT to_jsonb(c) FROM clients AS c WHERE c.client_id = %s)::text "
                "  AS client_row, "
                "(SELECT to_jsonb(i) FROM issuers AS i WHERE i.issuer_id = r.issuer_id)::text "
                "  AS issuer_row, "
                "(SELECT jsonb_agg(to_jsonb(k) ORDER BY k.seq) FROM keys AS k "
                "  WHERE k.issuer_id = r.issuer_id OR k.key_version = r.key_version)::text "
                "  AS key_rows "
                "FROM (SELECT 1) AS one "
                "LEFT JOIN records AS r ON r.service_reference = %s",
                (client_id, service_reference),
            ).fetchone()
            assert row is not None  # the one-row FROM always yields a row
            client = client_from_row(orjson.loads(row["client_row"])) if row["client_row"] else None
            if row["service_reference"] is None:
                return VerificationRead(None, client=client)
            issuer = orjson.loads(row["issuer_row"]) if row["issuer_row"] else None
            return VerificationRead(
                record_from_row(row),
                Issuer(issuer["issuer_id"], issuer["name"], issuer["created_at"])
                if issuer
                else None,
                tuple(key_from_row(k) for k in orjson.loads(row["key_rows"] or "[]")),
                client,
            )

        return self._db.run(work, Retry.SAFE)

    def pin_key(self, service_reference: str, key_version: str) -> None:
        """See the port. Only an unpinned record is changed: a pin, once set, is never moved."""

        def work(conn: Conn) -> None:
            conn.execute(
                "UPDATE records SET key_version = %s "
                "WHERE service_reference = %s AND key_version IS NULL",
                (key_version, service_reference),
            )

        self._db.run(work, Retry.SAFE)

    def revoke_record(
        self, service_reference: str, issuer_id: str, reason: str | None, at: str
    ) -> Record | None:
        """See the port. The conditional UPDATE makes concurrent repeats keep the first one."""

        def work(conn: Conn) -> Record | None:
            with transaction(conn):
                row = conn.execute(
                    "UPDATE records SET status = %s, revoked_at = %s, revoke_reason = %s "
                    "WHERE service_reference = %s AND issuer_id = %s AND status <> %s "
                    "RETURNING *",
                    (
                        RecordStatus.REVOKED,
                        at,
                        reason,
                        service_reference,
                        issuer_id,
                        RecordStatus.REVOKED,
                    ),
                ).fetchone()
                if row is None:
                    row = conn.execute(
                        "SELECT * FROM records WHERE service_reference = %s AND issuer_id = %s",
                        (service_reference, issuer_id),
                    ).fetchone()
            return record_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)  # a repeat finds the first revocation

    def counts(self) -> Counts:
        """Records (revoked included) and revoked records per issuer, and records not revoked
        per key (or per issuer while unpinned); keys and issuers with none absent."""

        def work(conn: Conn) -> Counts:
            result = Counts()
            for row in conn.execute(
                "SELECT issuer_id, count(*) AS total, "
                "count(*) FILTER (WHERE status = %s) AS revoked "
                "FROM records GROUP BY issuer_id ORDER BY issuer_id",
                (RecordStatus.REVOKED,),
            ):
                result.records_by_issuer[row["issuer_id"]] = row["total"]
                if row["revoked"]:
                    result.revoked_by_issuer[row["issuer_id"]] = row["revoked"]
            for row in conn.execute(
                "SELECT issuer_id, key_version, count(*) AS active FROM records "
                "WHERE status <> %s GROUP BY issuer_id, key_version",
                (RecordStatus.REVOKED,),
            ):
                if row["key_version"]:
                    by_key = result.active_by_key
                    by_key[row["key_version"]] = by_key.get(row["key_version"], 0) + row["active"]
                else:
                    result.unpinned_by_issuer[row["issuer_id"]] = row["active"]
            return result

        return self._db.run(work, Retry.SAFE)
