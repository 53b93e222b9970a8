"""Versioned PostgreSQL migrations against a real server: fresh databases, databases stamped by
the pre-migration code, a failing migration, and `python -m service migrate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psycopg
import pytest

from service.storage import pg_migrations
from service.storage.pg_migrations import LATEST, MIGRATIONS, Migration
from service.storage.port import Issuer
from service.storage.postgres_store import PostgresStore
from tests.service.cli.test_cli import ROOT
from tests.service.storage.test_store_postgres import database_url, schema_url  # noqa: F401 - fixtures

pytestmark = pytest.mark.postgres


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_version ORDER BY 1")]


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {row[0] for row in rows}


def test_files_are_numbered_in_order_and_the_latest_is_the_schema_version() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))
    assert all(m.name.startswith(f"{m.version:04d}_") for m in MIGRATIONS)


def test_a_fresh_database_gets_every_migration_once(schema_url: str) -> None:  # noqa: F811
    PostgresStore(schema_url).close()
    PostgresStore(schema_url).close()
    assert _versions(schema_url) == list(range(1, LATEST + 1))
    assert {"records", "issuers", "clients", "keys", "pairings"} <= _tables(schema_url)


def test_a_database_stamped_1_by_the_old_code_without_pairings_is_upgraded(
    schema_url: str,  # noqa: F811
) -> None:
    """Version 1 once existed without the pairings table: version 2 adds it, data untouched."""
    with psycopg.connect(schema_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(MIGRATIONS[0].sql.split("CREATE TABLE IF NOT EXISTS pairings")[0])
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        conn.execute(
            "INSERT INTO issuers (issuer_id, name, created_at) VALUES ('iss-1', 'Acme', 'x')"
        )
    assert "pairings" not in _tables(schema_url)
    store = PostgresStore(schema_url)
    try:
        assert store.get_issuer("iss-1") == Issuer("iss-1", "Acme", "x")
    finally:
        store.close()
    assert "pairings" in _tables(schema_url)
    assert _versions(schema_url) == list(range(1, LATEST + 1))


def test_a_failing_migration_changes_nothing(
    schema_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    PostgresStore(schema_url).close()
    broken = (
        *MIGRATIONS,
        Migration(LATEST + 1, "x_add.sql", "CREATE TABLE added_by_next (id int)"),
        Migration(LATEST + 2, "y_broken.sql", "ALTER TABLE no_such_table ADD COLUMN c int"),
    )
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", broken)
    monkeypatch.setattr(pg_migrations, "LATEST", LATEST + 2)
    with psycopg.connect(schema_url, autocommit=True) as conn, pytest.raises(psycopg.Error):
        pg_migrations.migrate(conn)
    assert _versions(schema_url) == list(range(1, LATEST + 1))
    assert "added_by_next" not in _tables(schema_url)  # the whole step rolled back


def _migrate_cli(*args: str, url: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("PAYSLIP_DATABASE_URL", None)
    if url:
        env["PAYSLIP_DATABASE_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "service", "migrate", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def test_migrate_command_applies_then_reports_nothing_to_do(schema_url: str) -> None:  # noqa: F811
    first = _migrate_cli(url=schema_url)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"applied": list(range(1, LATEST + 1)), "version": LATEST}
    again = _migrate_cli("--database-url", schema_url, url=None)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"applied": [], "version": LATEST}


def test_migrate_command_without_postgresql_says_so_in_one_line() -> None:
    done = _migrate_cli(url=None)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: migrate applies to PostgreSQL: pass --database-url or set PAYSLIP_DATABASE_URL "
        "(a TinyDB store has no schema to migrate)"
    ]
