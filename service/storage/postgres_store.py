"""The PostgreSQL adapter of the storage port, for instances that outgrow a single JSON file.

Why it looks the way it does:

- Several server processes (``--workers N``) may share one database, so every uniqueness rule of
  the port is enforced by the database itself (primary key on the reference, UNIQUE on
  ``(issuer_id, iv)``), never by process-local state.
- ``add_records`` resolves outcomes in Python with the shared rule in ``add_rule.py`` (the
  port's rules are ordered and depend on earlier records of the same call), then inserts all
  CREATED rows in one transaction. It runs optimistically under a *shared* advisory lock, so
  concurrent batches proceed in parallel. If a concurrent writer committed a colliding row in
  between (unique violation, deadlock), or if the verdicts include IV_REUSED (the one verdict no
  constraint re-checks), it rolls back and retries under the *exclusive* form of the same lock,
  which excludes every other batch, so the retry runs serially, sees a stable table and cannot
  collide again.
- Connections come from psycopg_pool (at most ``pool_size`` per process; after a lost connection
  every idle one is tested and replaced, so a database restart fails only the requests in flight
  and those that meet a dead connection before the check ends). Connections run in autocommit
  mode and every multi-statement operation opens an explicit transaction, so no connection is
  ever returned to the pool with a transaction open.
- The schema is versioned (service/storage/pg_migrations.py, SQL files in
  service/storage/migrations): opening the store applies pending migrations under an advisory
  lock, on a direct connection first, so an unreachable database fails fast with one error.
- The port does not say what adding an existing issuer, verifier, client or key does. Replacing
  would be the dangerous reading: two workers running ``KeyRing.create_key`` for one issuer at
  once compute the same next key_version, and a silent replace would destroy a key whose raw
  material was already handed to a caller (likewise a client's secret). So ``add_*`` is a plain
  INSERT and a duplicate id fails like any other database error, with ``StoreUnavailable``
  (rolling back ``add_key``'s demotion too). Ids are random otherwise, so only races hit this.
- Every psycopg error is mapped to ``StoreUnavailable``: the domain must not know about psycopg,
  and the HTTP layer turns that exception into SERVICE_UNAVAILABLE.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from service.storage import pg_migrations
from service.storage.add_rule import resolve_additions
from service.storage.port import (
    AddOutcome,
    AddStatus,
    Client,
    Counts,
    Issuer,
    KeyVersion,
    Pairing,
    Record,
    StoreUnavailable,
    Verifier,
)

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

Conn = psycopg.Connection[DictRow]

SCHEMA_VERSION: Final = pg_migrations.LATEST
"""The newest migration this code knows; a database newer than that is refused."""

# Advisory lock key (bigint, per database). Arbitrary constant ("PVrecord").
_RECORDS_LOCK: Final = 0x5056_7265_636F_7264

# Column lists are spelled out in every statement (no string building), so every query is a
# literal that a reviewer and ruff's injection check can read as is.
_RECORD_INSERT: Final = (
    'INSERT INTO records (service_reference, issuer_id, "schema", issued_at, payslip_non_pii, '
    "iv, tag, key_version, fingerprint, registered_at, status, revoked_at, revoke_reason) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


class _RetryExclusivelyError(Exception):
    """The optimistic attempt cannot guarantee a serial result: retry under the exclusive lock."""


def _record_params(record: Record) -> tuple[Any, ...]:
    return (
        record.service_reference,
        record.issuer_id,
        record.schema,
        record.issued_at,
        Jsonb(record.payslip_non_pii),
        record.iv,
        record.tag,
        record.key_version,
        record.fingerprint,
        record.registered_at,
        record.status,
        record.revoked_at,
        record.revoke_reason,
    )


def _record_from_row(row: DictRow) -> Record:
    return Record(
        service_reference=row["service_reference"],
        issuer_id=row["issuer_id"],
        schema=row["schema"],
        issued_at=row["issued_at"],
        payslip_non_pii=row["payslip_non_pii"],
        iv=row["iv"],
        tag=row["tag"],
        key_version=row["key_version"],
        fingerprint=row["fingerprint"],
        registered_at=row["registered_at"],
        status=row["status"],
        revoked_at=row["revoked_at"],
        revoke_reason=row["revoke_reason"],
    )


def _key_from_row(row: DictRow) -> KeyVersion:
    return KeyVersion(
        key_version=row["key_version"],
        issuer_id=row["issuer_id"],
        number=row["number"],
        state=row["state"],
        wrapped=row["wrapped"],
        created_at=row["created_at"],
        retired_at=row["retired_at"],
    )


def _client_from_row(row: DictRow) -> Client:
    return Client(
        client_id=row["client_id"],
        role=row["role"],
        owner_id=row["owner_id"],
        name=row["name"],
        secret_hmac=row["secret_hmac"],
        created_at=row["created_at"],
        disabled=row["disabled"],
    )


def _conninfo(database_url: str, connect_timeout: float) -> str:
    try:
        params = conninfo_to_dict(database_url)
    except psycopg.Error:
        # The message may quote the URL, password included: keep it out of the exception.
        raise StoreUnavailable("the database URL is not a valid libpq URL") from None
    # Defaults the URL may override: bounded connect time, and TCP keepalives so a vanished
    # server (network partition, failover) turns into an error instead of a hung request.
    defaults = {
        "connect_timeout": str(max(1, round(connect_timeout))),
        "keepalives": "1",
        "keepalives_idle": "30",
        "keepalives_interval": "10",
        "keepalives_count": "3",
    }
    return make_conninfo("", **{**defaults, **params})


class PostgresStore:
    """`Store` on PostgreSQL 15+. Thread-safe; safe to share one database among processes.

    `database_url` is a libpq URL or conninfo string (``postgresql://user@host:5432/db``; a
    ``?options=-csearch_path%3Dname`` suffix selects a schema). The schema is created at open.
    Raises `StoreUnavailable` when the database cannot be reached or is newer than this code.
    """

    def __init__(
        self,
        database_url: str,
        pool_size: int = 4,
        *,
        connect_timeout: float = 5.0,
        pool_wait_timeout: float = 10.0,
        migrate: bool = True,
    ) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self._checking = threading.Lock()
        conninfo = _conninfo(database_url, connect_timeout)
        if migrate:
            migrate_database(conninfo)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=pool_size,
            timeout=pool_wait_timeout,
            kwargs={"autocommit": True, "row_factory": dict_row},
            name="payslip",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=max(connect_timeout, 1.0))
        except PoolTimeout:
            self._pool.close()
            raise StoreUnavailable("cannot connect to the database") from None

    # --- plumbing ------------------------------------------------------------------------
    def _run(self, work: Callable[[Conn], T]) -> T:
        """Run `work` on a pooled connection, turning every psycopg error into StoreUnavailable."""
        if self._pool.closed:
            raise StoreUnavailable("the store is closed")
        try:
            with self._pool.connection() as conn:
                return work(conn)
        except PoolTimeout:
            log.warning("PostgreSQL: no pooled connection free in time")
            raise StoreUnavailable("no database connection free in time") from None
        except psycopg.Error as exc:
            if exc.sqlstate is None:  # client side (connect, lost socket): the text says where
                log.warning("PostgreSQL unavailable: %s: %s", type(exc).__name__, exc)
            else:  # server side: its DETAIL may quote submitted values, so only the SQLSTATE
                log.warning("PostgreSQL error %s (%s)", exc.sqlstate, type(exc).__name__)
            if isinstance(exc, psycopg.OperationalError):
                self._check_idle_soon()
            raise StoreUnavailable(f"database error: {type(exc).__name__}") from exc

    def _check_idle_soon(self) -> None:
        """A lost connection usually means the server restarted or failed over, so the idle ones
        are dead too: test and replace them all now (in the background) rather than failing one
        request per dead connection. Cheaper than testing every connection at every checkout,
        which cost a fifth of verify throughput."""
        if not self._checking.acquire(blocking=False):
            return

        def check() -> None:
            try:
                self._pool.check()
            except psycopg.Error:
                pass  # still down: the next failure schedules another check
            finally:
                self._checking.release()

        threading.Thread(target=check, name="payslip-pool-check", daemon=True).start()

    # --- records -------------------------------------------------------------------------
    def add_records(self, records: Sequence[Record]) -> list[AddOutcome]:
        """See the port. One transaction, one commit, all CREATED rows inserted together."""
        if not records:
            return []
        batch = list(records)
        try:
            return self._run(partial(self._add_records_once, records=batch, exclusive=False))
        except _RetryExclusivelyError as why:
            log.info("add_records retried under the exclusive lock: %s", why)
        return self._run(partial(self._add_records_once, records=batch, exclusive=True))

    @staticmethod
    def _add_records_once(conn: Conn, records: list[Record], exclusive: bool) -> list[AddOutcome]:
        """One attempt. Optimistic (shared lock) attempts give up, rolling back, whenever their
        result might not match a serial execution; the exclusive attempt is serial by design."""
        refs = sorted({r.service_reference for r in records})
        issuer_ids = [r.issuer_id for r in records]
        ivs = [r.iv for r in records]
        try:
            with conn.transaction():
                lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
                conn.execute(f"SELECT {lock}(%s)", (_RECORDS_LOCK,))
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
                stored_by_ref = {row["service_reference"]: _record_from_row(row) for row in rows}
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
                        cur.executemany(_RECORD_INSERT, [_record_params(r) for r in created_rows])
        except (
            pg_errors.UniqueViolation,
            pg_errors.DeadlockDetected,
            pg_errors.SerializationFailure,
        ) as exc:
            if exclusive:
                raise  # cannot happen while every writer takes the lock; surface it loudly
            raise _RetryExclusivelyError(type(exc).__name__) from exc
        return outcomes

    def get_record(self, service_reference: str) -> Record | None:
        def work(conn: Conn) -> Record | None:
            row = conn.execute(
                "SELECT * FROM records WHERE service_reference = %s",
                (service_reference,),
            ).fetchone()
            return _record_from_row(row) if row else None

        return self._run(work)

    def pin_key(self, service_reference: str, key_version: str) -> None:
        """See the port. Only an unpinned record is changed: a pin, once set, is never moved."""

        def work(conn: Conn) -> None:
            conn.execute(
                "UPDATE records SET key_version = %s "
                "WHERE service_reference = %s AND key_version IS NULL",
                (key_version, service_reference),
            )

        self._run(work)

    def revoke_record(
        self, service_reference: str, issuer_id: str, reason: str | None, at: str
    ) -> Record | None:
        """See the port. The conditional UPDATE makes concurrent repeats keep the first one."""

        def work(conn: Conn) -> Record | None:
            with conn.transaction():
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
            return _record_from_row(row) if row else None

        return self._run(work)

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

        return self._run(work)

    # --- issuers, verifiers, clients -----------------------------------------------------
    def add_issuer(self, issuer: Issuer) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO issuers (issuer_id, name, created_at) VALUES (%s, %s, %s)",
                (issuer.issuer_id, issuer.name, issuer.created_at),
            )
        )

    def get_issuer(self, issuer_id: str) -> Issuer | None:
        def work(conn: Conn) -> Issuer | None:
            row = conn.execute(
                "SELECT issuer_id, name, created_at FROM issuers WHERE issuer_id = %s",
                (issuer_id,),
            ).fetchone()
            return Issuer(**row) if row else None

        return self._run(work)

    def list_issuers(self) -> list[Issuer]:
        """In insertion order."""
        return self._run(
            lambda conn: [
                Issuer(**row)
                for row in conn.execute(
                    "SELECT issuer_id, name, created_at FROM issuers ORDER BY seq"
                )
            ]
        )

    def add_verifier(self, verifier: Verifier) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO verifiers (verifier_id, name, created_at) VALUES (%s, %s, %s)",
                (verifier.verifier_id, verifier.name, verifier.created_at),
            )
        )

    def list_verifiers(self) -> list[Verifier]:
        """In insertion order."""
        return self._run(
            lambda conn: [
                Verifier(**row)
                for row in conn.execute(
                    "SELECT verifier_id, name, created_at FROM verifiers ORDER BY seq"
                )
            ]
        )

    def add_client(self, client: Client) -> None:
        """Insert. An existing id is refused with StoreUnavailable (module docstring)."""
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO clients "
                "(client_id, role, owner_id, name, secret_hmac, created_at, disabled) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    client.client_id,
                    client.role,
                    client.owner_id,
                    client.name,
                    client.secret_hmac,
                    client.created_at,
                    client.disabled,
                ),
            )
        )

    def get_client(self, client_id: str) -> Client | None:
        def work(conn: Conn) -> Client | None:
            row = conn.execute(
                "SELECT * FROM clients WHERE client_id = %s", (client_id,)
            ).fetchone()
            return _client_from_row(row) if row else None

        return self._run(work)

    def list_clients(self) -> list[Client]:
        """In insertion order."""
        return self._run(
            lambda conn: [
                _client_from_row(row) for row in conn.execute("SELECT * FROM clients ORDER BY seq")
            ]
        )

    def set_client_disabled(self, client_id: str, disabled: bool) -> bool:
        """See the port."""

        def work(conn: Conn) -> bool:
            cur = conn.execute(
                "UPDATE clients SET disabled = %s WHERE client_id = %s", (disabled, client_id)
            )
            return cur.rowcount > 0

        return self._run(work)

    # --- keys ----------------------------------------------------------------------------
    def add_key(self, key: KeyVersion, demote_active: bool) -> None:
        """See the port. Demotion and insert share one transaction, so there is never a moment
        with two active keys or none. An existing key_version is refused with StoreUnavailable
        (module docstring) and the demotion is rolled back with it."""

        def work(conn: Conn) -> None:
            with conn.transaction():
                if demote_active:
                    conn.execute(
                        "UPDATE keys SET state = 'live' "
                        "WHERE issuer_id = %s AND state = 'active' AND key_version <> %s",
                        (key.issuer_id, key.key_version),
                    )
                conn.execute(
                    "INSERT INTO keys "
                    "(key_version, issuer_id, number, state, wrapped, created_at, retired_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        key.key_version,
                        key.issuer_id,
                        key.number,
                        key.state,
                        key.wrapped,
                        key.created_at,
                        key.retired_at,
                    ),
                )

        self._run(work)

    def get_key(self, key_version: str) -> KeyVersion | None:
        def work(conn: Conn) -> KeyVersion | None:
            row = conn.execute(
                "SELECT * FROM keys WHERE key_version = %s", (key_version,)
            ).fetchone()
            return _key_from_row(row) if row else None

        return self._run(work)

    def list_keys(self, issuer_id: str | None = None) -> list[KeyVersion]:
        """In insertion order, optionally only one issuer's."""

        def work(conn: Conn) -> list[KeyVersion]:
            if issuer_id is None:
                cur = conn.execute("SELECT * FROM keys ORDER BY seq")
            else:
                cur = conn.execute(
                    "SELECT * FROM keys WHERE issuer_id = %s ORDER BY seq",
                    (issuer_id,),
                )
            return [_key_from_row(row) for row in cur]

        return self._run(work)

    def retire_key(self, key_version: str, at: str) -> KeyVersion | None:
        """See the port. A repeat keeps the first retirement time; the material stays empty."""

        def work(conn: Conn) -> KeyVersion | None:
            row = conn.execute(
                "UPDATE keys SET state = 'retired', wrapped = '', "
                "retired_at = COALESCE(retired_at, %s) "
                "WHERE key_version = %s RETURNING *",
                (at, key_version),
            ).fetchone()
            return _key_from_row(row) if row else None

        return self._run(work)

    # --- phone pairings -------------------------------------------------------------------
    def add_pairing(self, pairing: Pairing) -> None:
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO pairings (pairing_id, client_id, secret_hmac, created_at, expires_at) "
                "VALUES (%s, %s, %s, %s, %s)",
                (
                    pairing.pairing_id,
                    pairing.client_id,
                    pairing.secret_hmac,
                    pairing.created_at,
                    pairing.expires_at,
                ),
            )
        )

    def take_pairing(self, pairing_id: str, secret_hmac: str) -> Pairing | None:
        """See the port: one DELETE ... RETURNING, so two takers cannot both get the row."""

        def work(conn: Conn) -> Pairing | None:
            row = conn.execute(
                "DELETE FROM pairings WHERE pairing_id = %s AND secret_hmac = %s "
                "RETURNING pairing_id, client_id, secret_hmac, created_at, expires_at",
                (pairing_id, secret_hmac),
            ).fetchone()
            return Pairing(**row) if row else None

        return self._run(work)

    def purge_pairings(self, expired_before: str) -> int:
        def work(conn: Conn) -> int:
            cur = conn.execute("DELETE FROM pairings WHERE expires_at < %s", (expired_before,))
            return cur.rowcount

        return self._run(work)

    # --- instance settings ---------------------------------------------------------------
    def get_setting(self, name: str) -> str | None:
        def work(conn: Conn) -> str | None:
            row = conn.execute("SELECT value FROM settings WHERE name = %s", (name,)).fetchone()
            return row["value"] if row else None

        return self._run(work)

    def set_setting(self, name: str, value: str) -> None:
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO settings (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (name, value),
            )
        )

    # --- lifecycle -----------------------------------------------------------------------
    def ping(self) -> bool:
        """See the port. Waits at most a second for a pooled connection (a readiness probe must
        answer quickly; a pool busy for that long reports not ready, which is fair). When a
        pooled connection turns out dead (server restarted since), one more try on another
        answers for the server as it is now (the failure also schedules the idle check)."""
        if self._pool.closed:
            return False
        for _ in range(2):
            try:
                self._run_with_timeout(lambda conn: conn.execute("SELECT 1").fetchone(), 1.0)
            except StoreUnavailable:
                continue
            return True
        return False

    def _run_with_timeout(self, work: Callable[[Conn], T], timeout: float) -> T:
        try:
            with self._pool.connection(timeout=timeout) as conn:
                return work(conn)
        except psycopg.Error as exc:  # PoolTimeout included
            if isinstance(exc, psycopg.OperationalError):
                self._check_idle_soon()
            raise StoreUnavailable(f"database error: {type(exc).__name__}") from exc

    def close(self) -> None:
        """Close the pool (waiting briefly for busy connections); later calls raise
        StoreUnavailable."""
        self._pool.close(timeout=5.0)


def migrate_database(database_url: str) -> list[int]:
    """Apply pending migrations on one direct connection; returns the versions applied.
    StoreUnavailable when the database cannot be reached or is newer than this code."""
    try:
        conninfo = _conninfo(database_url, 5.0)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            applied = pg_migrations.migrate(conn)
    except pg_migrations.SchemaTooNew as exc:
        raise StoreUnavailable(str(exc)) from None
    except psycopg.Error as exc:
        if exc.sqlstate is None:
            log.warning("PostgreSQL unavailable: %s: %s", type(exc).__name__, exc)
        else:
            log.warning("PostgreSQL error %s (%s)", exc.sqlstate, type(exc).__name__)
        raise StoreUnavailable(f"database error: {type(exc).__name__}") from exc
    if applied:
        log.info("PostgreSQL schema migrated to version %s", applied[-1])
    return applied
