"""The PostgreSQL adapter of the storage port, for instances that outgrow a single JSON file.

Several server processes (``--workers N``) and hosts may share one database, so every uniqueness
rule of the port is enforced by the database itself (primary key on the reference, UNIQUE on
``(issuer_id, iv)``), never by process-local state, and nothing read from it is cached: a key
retired or a client disabled through one host is refused by every other at once.

The adapter is split by concern:

- ``pg_database.py``: the connection pool, error mapping (every psycopg error becomes
  ``StoreUnavailable``), dead connections found at checkout and one retry on a lost one;
- ``pg_records.py``: records (the batch insert and its concurrency rule, reads, pins,
  revocations, counts);
- ``pg_admin.py``: issuers, verifiers, clients, keys, phone pairings and settings;
- ``pg_rows.py``: rows to and from the port's dataclasses;
- ``pg_migrations.py`` and ``migrations/``: the versioned schema, applied when the store opens
  (under an advisory lock, on a direct connection first, so an unreachable database fails fast
  with one error).
"""

from __future__ import annotations

from typing import Final

from service.storage import pg_migrations
from service.storage.pg_admin import AdminTables
from service.storage.pg_database import PgDatabase, migrate_database
from service.storage.pg_records import RecordTables

__all__ = ["SCHEMA_VERSION", "PostgresStore", "migrate_database"]

SCHEMA_VERSION: Final = pg_migrations.LATEST
"""The newest migration this code knows; a database newer than that is refused."""


class PostgresStore(RecordTables, AdminTables):
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
        self._db = PgDatabase(
            database_url,
            pool_size,
            connect_timeout=connect_timeout,
            pool_wait_timeout=pool_wait_timeout,
            migrate=migrate,
        )

    def ping(self) -> bool:
        """See the port. Waits at most a second for a pooled connection (a readiness probe must
        answer quickly; a pool busy for that long reports not ready, which is fair). A pooled
        connection found dead is replaced and the query tried once more, so the answer is
        about the server as it is now."""
        return self._db.ping()

    def close(self) -> None:
        """Close the pool (waiting briefly for busy connections); later calls raise
        StoreUnavailable."""
        self._db.close()
