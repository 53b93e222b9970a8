"""`python -m service migrate-store`: a TinyDB office moved up to PostgreSQL. Every record verifies
on the new store with the old credentials, a second run changes nothing, the old data directory
is untouched, and a database of another instance is refused in one line."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from service.hosting.server import start
from testbed import web
from testbed.factories import sealed_record
from testbed.oauth import token_body
from tests.commands import run_module
from tests.service.conftest import LiveService, in_process_client
from tests.service.storage.test_store_postgres import database_url, schema_url  # noqa: F401 - fixtures

pytestmark = pytest.mark.postgres


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full.pop("PAYSLIP_DATABASE_URL", None)
    full.pop("PAYSLIP_MASTER_KEY", None)
    return run_module("service", *args, env=full)


def _fingerprint(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


@pytest.mark.own_server("the instance's server is stopped and its whole directory moved")
def test_a_tinydb_instance_moves_to_postgresql_and_every_record_verifies(
    live: LiveService,
    schema_url: str,  # noqa: F811
) -> None:
    key = live.issuer["encryption_key"]
    itok = live.issuer_token()
    sealed = [sealed_record(key, key_version=live.issuer["key_version"]) for _ in range(30)]
    sealed += [sealed_record(key) for _ in range(20)]  # unpinned: pinned at first verification
    batch = live.post("/v1/registerNonPIIBatch", {"records": [s.body for s in sealed]}, itok)
    assert batch.status_code == 200, batch.text
    assert live.verify(sealed[-1].payload).status_code == 200  # pins that one
    revoked = sealed[0]
    assert live.post(f"/v1/records/{revoked.reference}/revoke", {}, itok).status_code == 200
    admin = live.admin_token()
    second_desk = live.post("/admin/v1/verifiers", {"name": "Closed desk"}, admin).json()
    live.running.stop()
    disabled = _cli(
        "admin",
        "--data-dir",
        str(live.data_dir),
        "disable-client",
        "--client-id",
        second_desk["client_id"],
    )
    assert disabled.returncode == 0, disabled.stderr
    before = _fingerprint(live.data_dir)

    moved = _cli("migrate-store", "--from", str(live.data_dir), "--to", schema_url)
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    assert report["records"] == 50 and report["records_created"] == 50
    assert report["issuers"] == 1 and report["verified"] is True
    assert _fingerprint(live.data_dir) == before  # the old directory is untouched

    again = json.loads(
        _cli("migrate-store", "--from", str(live.data_dir), "--to", schema_url).stdout
    )
    assert again["records_created"] == 0 and again["records_already_there"] == 50

    # The same instance served from PostgreSQL: old credentials, every badge.
    running = start(live.data_dir, database_url=schema_url, store_kind="postgres")
    client = in_process_client(running)
    try:
        service = LiveService(
            running,
            live.data_dir,
            live.admin_id,
            live.admin_secret,
            live.issuer,
            live.verifier,
            http=client,
        )
        vtok = service.verifier_token()
        for item in sealed:
            reply = service.verify(item.payload, vtok)
            assert reply.status_code == 200, reply.text
            assert reply.json()["verified"] is (item is not revoked)
        desk = token_body(second_desk["client_id"], second_desk["client_secret"], running.url)
        refused = web.post(f"{running.url}/oauth/token", json=desk)
        assert refused.status_code in (400, 401), refused.text  # disabled stays disabled
    finally:
        client.close()
        running.stop()


def test_a_database_of_another_instance_is_refused_in_one_line(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
) -> None:
    other = _cli("init", "--data-dir", str(tmp_path / "other"), env={})
    assert other.returncode == 0
    taken = _cli("init", "--data-dir", str(tmp_path / "pg"), env={})
    assert taken.returncode == 0
    first = _cli("migrate-store", "--from", str(tmp_path / "pg"), "--to", schema_url)
    assert first.returncode == 0, first.stderr
    done = _cli("migrate-store", "--from", str(tmp_path / "other"), "--to", schema_url)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "already holds another instance" in lines[0], done.stderr


def test_a_directory_without_an_instance_is_refused_in_one_line(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
) -> None:
    done = _cli("migrate-store", "--from", str(tmp_path / "nothing"), "--to", schema_url)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nothing'} holds no TinyDB instance (no master key or db/)"
    ]
