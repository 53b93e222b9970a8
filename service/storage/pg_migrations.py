"""Versioned PostgreSQL migrations: ordered SQL files in service/storage/migrations.

`NNNN_name.sql` is version NNNN. `schema_version` (one row per applied version) says where a
database stands. `migrate` applies every pending file in order, all in one transaction under an
advisory lock, so several workers or hosts starting at once apply each file exactly once and a
failing file leaves the database at its previous version (PostgreSQL DDL is transactional).
A database newer than this code is refused: old code must not write a schema it does not know.

Writing a migration: a new file with the next number; never edit a released one. Keep it
backwards compatible with the previous release's code when it can be (add, don't rename), so
hosts can be upgraded one at a time (docs/deploy.md, "Upgrades").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

__all__ = ["LATEST", "MIGRATIONS", "Migration", "SchemaTooNew", "current_version", "migrate"]

SCHEMA_LOCK: Final = 0x5056_7363_6865_6D61
"""Advisory lock key ("PVschema"), the one the pre-migration code took for its DDL too."""

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


class SchemaTooNew(Exception):
    """The database was migrated by newer code than this."""


def _load() -> tuple[Migration, ...]:
    found = []
    for entry in resources.files("service.storage.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration files are not numbered 1..n without gaps: {versions}")
    return tuple(found)


MIGRATIONS: Final = _load()
LATEST: Final = MIGRATIONS[-1].version

_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_version (
    version     integer PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


def current_version(conn: Any) -> int:
    """0 for an empty database."""
    exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not _first(exists):
        return 0
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(_first(row) or 0)


def migrate(conn: Any) -> list[int]:
    """Apply pending migrations on `conn` (autocommit connection); return the versions applied."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute(_VERSION_TABLE)
        current = current_version(conn)
        if current > LATEST:
            raise SchemaTooNew(
                f"database schema version {current} is newer than this code ({LATEST}); "
                "upgrade the service"
            )
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            conn.execute(migration.sql)
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (migration.version,))
            applied.append(migration.version)
    return applied


def _first(row: Any) -> Any:
    if row is None:
        return None
    if isinstance(row, dict):
        return next(iter(row.values()))
    return row[0]
