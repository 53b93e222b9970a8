"""The PostgreSQL adapter's records: adding them (batches), reading, pinning, revoking, counting.

`add_records` resolves outcomes in Python with the shared rule in ``add_rule.py`` (the port's rules
are ordered and depend on earlier records of the same call), then inserts all CREATED rows in one
transaction. It runs optimistically under a *shared* advisory lock, so concurrent batches proceed
in parallel. If a concurrent writer committed a colliding row in between (unique violation,
deadlock), or if the verdicts include IV_REUSED (the one verdict no constraint re-checks), it
rolls back and retries under the *exclusive* form of the same lock, which excludes every other
batch, so the retry runs serially, sees a stable table and cannot collide again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from psycopg import errors as pg_errors

from service.storage.add_rule import resolve_additions
from service.storage.pg_database import Conn, PgDatabase, Retry, transaction
from service.storage.pg_rows import (
    RECORD_INSERT,
    client_from_row,
    key_from_row,
    record_from_row,
    record_params,
)
from service.storage.port import AddOutcome, AddStatus, Counts, Issuer, Record, VerificationRead

log = logging.getLogger("service.storage.postgres_store")

# Advisory lock key (bigint, per database). Arbitrary constant ("PVrecord").
RECORDS_LOCK: Final = 0x5056_7265_636F_7264


class _RetryExclusivelyError(Exception):
    """The optimistic attempt cannot guarantee a serial result: retry under the exclusive lock."""


def _add_records_once(conn: Conn, records: list[Record], exclusive: bool) -> list[AddOutcome]:
    """One attempt. Optimistic (shared lock) attempts give up, rolling back, whenever their
    result might not match a serial execution; the exclusive attempt is serial by design."""
    refs = sorted({r.service_reference for r in records})
    issuer_ids = [r.issuer_id for r in records]
    ivs = [r.iv for r in records]
    try:
        with transaction(conn):
            lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
            conn.execute(f"SELECT {lock}(%s)", (RECORDS_LOCK,))
            # One statement, hence one snapshot, for both lookups: two statements could see
            # an IV committed by another writer but not the reference committed with it.
            # LATERAL forces one index probe per wanted pair; a plain join may pick a hash
            # join over a full scan when statistics are stale.
            rows = conn.execute(
                "SELECT * FROM records WHERE service_reference = ANY(%s) "
                "UNION ALL "
                "SELECT r.* FROM unnest(%s::text[], %s::text[]) AS w(issuer_id, iv) "
                "CROSS JOIN LATERAL (SELECT * FROM records "
                "  WHERE issuer_id = w.issuer_id AND iv = w.iv) AS r",
                (refs, issuer_ids, ivs),
            ).fetchall()
            stored_by_ref = {row["service_reference"]: record_from_row(row) for row in rows}
            stored_ivs = {(row["issuer_id"], row["iv"]) for row in rows}
            plan = resolve_additions(records, stored_by_ref.get, stored_ivs)
            outcomes, created = plan.outcomes, plan.created
            if not exclusive and any(o.status is AddStatus.IV_REUSED for o in outcomes):
                # IV_REUSED is the one verdict that rests on a reference being *absent*
                # without inserting it, so no constraint would catch a concurrent writer
                # inserting it (whose serial verdict would then be CONFLICT or DUPLICATE).
                # Rare (it is a client error), so it simply takes the serial path.
                raise _RetryExclusivelyError("IV_REUSED verdicts are decided serially")
            if created:
                # Sorted inserts make lock waits between concurrent batches less likely to
                # form cycles; a deadlock still only costs a retry.
                created_rows = sorted(created, key=lambda r: r.service_reference)
                with conn.cursor() as cur:
                    cur.executemany(RECORD_INSERT, [record_params(r) for r in created_rows])
    except (
        pg_errors.UniqueViolation,
        pg_errors.DeadlockDetected,
        pg_errors.SerializationFailure,
    ) as exc:
        if exclusive:
            raise  # cannot happen while every writer takes the lock; surface it loudly
        raise _RetryExclusivelyError(type(exc).__name__) from exc
    return outcomes


class RecordTables:
    """The record half of `PostgresStore` (a mixin: it runs on the store's `_db`)."""

    _db: PgDatabase

    def add_records(self, records: Sequence[Record]) -> list[AddOutcome]:
        """See the port. One transaction, one commit, all CREATED rows inserted together."""
        if not records:
            return []
        batch = list(records)
        try:
            return self._db.run(
                lambda conn: _add_records_once(conn, batch, exclusive=False),
                Retry.BEFORE_COMMIT,
            )
        except _RetryExclusivelyError as why:
            log.info("add_records retried under the exclusive lock: %s", why)
        return self._db.run(
            lambda conn: _add_records_once(conn, batch, exclusive=True), Retry.BEFORE_COMMIT
        )

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
        as they are; the client, the issuer and the keys as JSON objects (small rows)."""

        def work(conn: Conn) -> VerificationRead:
            row = conn.execute(
                "SELECT r.*, "
                "(SELECT to_jsonb(c) FROM clients AS c WHERE c.client_id = %s) AS client_row, "
                "(SELECT to_jsonb(i) FROM issuers AS i WHERE i.issuer_id = r.issuer_id) "
                "  AS issuer_row, "
                "(SELECT jsonb_agg(to_jsonb(k) ORDER BY k.seq) FROM keys AS k "
                "  WHERE k.issuer_id = r.issuer_id OR k.key_version = r.key_version) AS key_rows "
                "FROM (SELECT 1) AS one "
                "LEFT JOIN records AS r ON r.service_reference = %s",
                (client_id, service_reference),
            ).fetchone()
            assert row is not None  # the one-row FROM always yields a row
            client = client_from_row(row["client_row"]) if row["client_row"] else None
            if row["service_reference"] is None:
                return VerificationRead(None, client=client)
            issuer = row["issuer_row"]
            return VerificationRead(
                record_from_row(row),
                Issuer(issuer["issuer_id"], issuer["name"], issuer["created_at"])
                if issuer
                else None,
                tuple(key_from_row(k) for k in row["key_rows"] or ()),
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
                    "UPDATE records SET status = 'revoked', revoked_at = %s, revoke_reason = %s "
                    "WHERE service_reference = %s AND issuer_id = %s AND status <> 'revoked' "
                    "RETURNING *",
                    (at, reason, service_reference, issuer_id),
                ).fetchone()
                if row is None:
                    row = conn.execute(
                        "SELECT * FROM records WHERE service_reference = %s AND issuer_id = %s",
                        (service_reference, issuer_id),
                    ).fetchone()
            return record_from_row(row) if row else None

        return self._db.run(work, Retry.SAFE)  # a repeat finds the first revocation

    def counts(self) -> Counts:
        """Records (revoked included) and revoked records per issuer; issuers with none absent."""

        def work(conn: Conn) -> Counts:
            result = Counts()
            for row in conn.execute(
                "SELECT issuer_id, count(*) AS total, "
                "count(*) FILTER (WHERE status = 'revoked') AS revoked "
                "FROM records GROUP BY issuer_id ORDER BY issuer_id"
            ):
                result.records_by_issuer[row["issuer_id"]] = row["total"]
                if row["revoked"]:
                    result.revoked_by_issuer[row["issuer_id"]] = row["revoked"]
            return result

        return self._db.run(work, Retry.SAFE)
