"""`python -m service migrate`: bring a PostgreSQL database's schema up to this code's version.

`serve` applies pending migrations itself at start (under an advisory lock, so many workers and
hosts may start at once); this command lets an operator do it as a separate upgrade step first,
and see where the database stands (docs/deploy.md, "Upgrades").
"""

from __future__ import annotations

from typing import Any

from service.composition.instance import InstanceError, resolve_store


def migrate(database_url: str | None) -> dict[str, Any]:
    kind, url = resolve_store(None, database_url)
    if kind != "postgres" or url is None:
        raise InstanceError(
            "migrate applies to PostgreSQL: pass --database-url or set PAYSLIP_DATABASE_URL "
            "(a TinyDB store has no schema to migrate)"
        )
    try:
        from service.storage.pg_migrations import LATEST
        from service.storage.postgres_store import migrate_database
    except ImportError:
        raise InstanceError(
            "PostgreSQL support is not installed: pip install 'payslip-verify[postgres]'"
        ) from None
    applied = migrate_database(url)
    return {"applied": applied, "version": LATEST}
