"""Reads never depend on writes (issue 15, item 4): on a full disk, verification answers.

The data directory lives on a real 16 MiB tmpfs that the test fills to the last byte. A record
registered without `key_version` writes its key pin at its first verification; that write now
fails, and the verification must still answer. Registrations get 503 with Retry-After, /readyz
reports the store cannot write, and everything recovers without a restart once space is freed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed import web
from testbed.factories import sealed_record
from tests.service.conftest import start_live


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: this test must run)")
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(folder: Path) -> Path:
    """Write until the file system refuses even 512 bytes more."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for size in (1 << 20, 1 << 16, 1 << 12, 512):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * size)
    return filler


def test_verification_answers_on_a_full_disk_and_recovers(small_disk: Path) -> None:
    live = start_live(small_disk / "data")
    running, issuer = live.running, live.issuer
    assert running is not None
    try:
        issuer_token, verifier_token = live.issuer_token(), live.verifier_token()
        unpinned = [sealed_record(issuer["encryption_key"]) for _ in range(30)]
        for sealed in unpinned:
            assert live.post("/v1/registerNonPII", sealed.body, issuer_token).status_code == 201
        assert web.get(f"{live.url}/readyz", timeout=10).status_code == 200

        filler = _fill(small_disk)
        ready = web.get(f"{live.url}/readyz", timeout=10)
        assert ready.status_code == 503
        assert "disk is full" in ready.json()["detail"]

        for sealed in unpinned:  # each first verification tries to write its pin, and cannot
            reply = live.verify(sealed.payload, verifier_token)
            assert reply.status_code == 200, reply.text
            assert reply.json()["verified"] is True
        refused = live.post(
            "/v1/registerNonPII", sealed_record(issuer["encryption_key"]).body, issuer_token
        )
        assert refused.status_code == 503
        assert int(refused.headers["Retry-After"]) >= 1
        # Appends that still fit the journal's last allocated page may land; the rest cannot.
        unwritten = [
            s for s in unpinned if running.store.get_record(s.reference).key_version is None
        ]
        assert unwritten, "the disk was not full: every pin was written"

        filler.unlink()  # an operator frees space; no restart
        assert web.get(f"{live.url}/readyz", timeout=10).status_code == 200
        late = sealed_record(issuer["encryption_key"])
        assert live.post("/v1/registerNonPII", late.body, issuer_token).status_code == 201
        for sealed in [*unpinned, late]:
            assert live.verify(sealed.payload, verifier_token).json()["verified"] is True
        pins = {running.store.get_record(s.reference).key_version for s in unpinned}
        assert pins == {issuer["key_version"]}  # the best-effort pins were written after all
    finally:
        running.stop()
