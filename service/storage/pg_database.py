"""The PostgreSQL adapter's connections: the pool, error mapping, and one retry on a lost one.

Why it looks the way it does:

- Connections come from psycopg_pool (at most ``pool_size`` per process), in autocommit mode;
  every multi-statement operation opens an explicit transaction (`transaction`), so no
  connection is ever returned to the pool with a transaction open.
- A server restart or failover kills every pooled connection. A killed connection has something
  to read while it sits idle (the server's "terminating connection" message, or the end of the
  stream), so at checkout a non-blocking poll of its socket (a few microseconds, no round trip)
  finds it, and it is replaced before any work is sent on it. Testing every connection with a
  query at checkout (psycopg_pool's ``check``) would cost a round trip per request, a fifth of
  verify throughput when measured.
- A connection can still die between checkout and use, or without a word (a partition). Work
  then fails with an OperationalError on a now broken connection, and `run` tries once more on
  another connection when that is certainly safe (`Retry`): reads and idempotent writes always,
  transactions only if the failure came before their COMMIT was sent (the server rolls back
  what it never saw committed), plain INSERTs never. So after a restart clients see no 503 once
  the database is back; requests in flight during the restart itself may still get one.
- Every psycopg error is mapped to ``StoreUnavailable``: the domain must not know about psycopg,
  and the HTTP layer turns that exception into SERVICE_UNAVAILABLE. Server-side errors are logged
  by SQLSTATE only: their DETAIL may quote submitted values.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import select
import threading
from collections.abc import Callable, Iterator
from typing import Final, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from service.storage import pg_migrations
from service.storage.port import StoreUnavailable

__all__ = ["Conn", "PgDatabase", "Retry", "conninfo", "migrate_database", "transaction"]

log = logging.getLogger("service.storage.postgres_store")

T = TypeVar("T")

Conn = psycopg.Connection[DictRow]

_POLL_IN: Final = getattr(select, "POLLIN", 1) | getattr(select, "POLLHUP", 16)


class Retry(enum.Enum):
    """When `PgDatabase.run` may repeat work whose connection broke under it."""

    SAFE = "safe"
    """Reads, and writes whose repeat changes nothing (conditional updates, upserts)."""
    BEFORE_COMMIT = "before-commit"
    """A `transaction`: repeated only when the failure came before its COMMIT was sent."""
    NEVER = "never"
    """A single statement that may have committed (a plain INSERT, a DELETE ... RETURNING)."""


_attempt = threading.local()


@contextlib.contextmanager
def transaction(conn: Conn) -> Iterator[None]:
    """`conn.transaction()` that notes when its COMMIT is about to be sent, for `Retry`."""
    with conn.transaction():
        yield
        _attempt.committing = True


def conninfo(database_url: str, connect_timeout: float) -> str:
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


def _log_error(exc: psycopg.Error) -> None:
    if exc.sqlstate is None:  # client side (connect, lost socket): the text says where
        log.warning("PostgreSQL unavailable: %s: %s", type(exc).__name__, exc)
    else:  # server side: its DETAIL may quote submitted values, so only the SQLSTATE
        log.warning("PostgreSQL error %s (%s)", exc.sqlstate, type(exc).__name__)


def _unavailable(exc: psycopg.Error) -> StoreUnavailable:
    return StoreUnavailable(f"database error: {type(exc).__name__}")


def _has_unread_input(conn: Conn) -> bool:
    """Whether an idle connection's socket is readable: the server said something (a restart's
    FATAL message) or closed it. A healthy idle connection has nothing to read."""
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:
        return True
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, _POLL_IN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll, few descriptors
    return bool(readable)


class PgDatabase:
    """A connection pool on one database, and the one way work runs on it (`run`)."""

    def __init__(
        self,
        database_url: str,
        pool_size: int,
        *,
        connect_timeout: float,
        pool_wait_timeout: float,
        migrate: bool,
    ) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self._checking = threading.Lock()
        self._pool_size = pool_size
        info = conninfo(database_url, connect_timeout)
        if migrate:
            migrate_database(info)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            info,
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

    @property
    def closed(self) -> bool:
        return self._pool.closed

    def run(self, work: Callable[[Conn], T], retry: Retry, timeout: float | None = None) -> T:
        """Run `work` on a pooled connection; every psycopg error becomes StoreUnavailable.
        A connection that breaks under the work is retried once on another, as `retry` allows.
        `timeout`: how long to wait for a free connection (the pool's default otherwise)."""
        if self._pool.closed:
            raise StoreUnavailable("the store is closed")
        for attempt in (1, 2):
            try:
                conn = self._checkout(timeout)
            except PoolTimeout:
                log.warning("PostgreSQL: no pooled connection free in time")
                raise StoreUnavailable("no database connection free in time") from None
            except psycopg.Error as exc:
                _log_error(exc)
                raise _unavailable(exc) from exc
            _attempt.committing = False
            try:
                return work(conn)
            except psycopg.Error as exc:
                lost = conn.broken or conn.closed
                if lost:
                    self._check_idle_soon()
                if attempt == 1 and lost and self._may_repeat(retry):
                    log.info("PostgreSQL connection lost under %s work; trying once more", retry)
                    continue
                _log_error(exc)
                raise _unavailable(exc) from exc
            finally:
                self._pool.putconn(conn)
        raise AssertionError("unreachable")  # the second attempt returns or raises

    @staticmethod
    def _may_repeat(retry: Retry) -> bool:
        if retry is Retry.BEFORE_COMMIT:
            return not getattr(_attempt, "committing", False)
        return retry is Retry.SAFE

    def _checkout(self, timeout: float | None) -> Conn:
        """A pooled connection not found dead at checkout (see the module docstring)."""
        for _ in range(self._pool_size + 1):
            conn = self._pool.getconn(timeout)
            if not _has_unread_input(conn):
                return conn
            try:  # perhaps only a notice: a real round trip decides
                ConnectionPool.check_connection(conn)
            except psycopg.Error:
                self._pool.putconn(conn)  # broken: the pool replaces it in the background
                self._check_idle_soon()
                continue
            return conn
        return self._pool.getconn(timeout)  # every one was dead: a fresh one, or the error

    def _check_idle_soon(self) -> None:
        """A lost connection usually means the server restarted or failed over, so the idle ones
        are dead too: test and replace them all now, in the background."""
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

    def ping(self) -> bool:
        """Whether the database answers a query, waiting at most a second for a connection (a
        readiness probe must answer quickly; a pool busy that long reports not ready)."""
        if self._pool.closed:
            return False
        try:
            self.run(lambda conn: conn.execute("SELECT 1").fetchone(), Retry.SAFE, timeout=1.0)
        except StoreUnavailable:
            return False
        return True

    def close(self) -> None:
        """Close the pool, waiting briefly for busy connections."""
        self._pool.close(timeout=5.0)


def migrate_database(database_url: str) -> list[int]:
    """Apply pending migrations on one direct connection; returns the versions applied.
    StoreUnavailable when the database cannot be reached or is newer than this code."""
    try:
        info = conninfo(database_url, 5.0)
        with psycopg.connect(info, autocommit=True) as conn:
            applied = pg_migrations.migrate(conn)
    except pg_migrations.SchemaTooNew as exc:
        raise StoreUnavailable(str(exc)) from None
    except psycopg.Error as exc:
        _log_error(exc)
        raise _unavailable(exc) from exc
    if applied:
        log.info("PostgreSQL schema migrated to version %s", applied[-1])
    return applied
