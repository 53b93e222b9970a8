"""kill -9 in the middle of a pay run: every registration the server acknowledged is on disk and
verifies after a restart, and a batch in flight at the kill is stored whole or not at all."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.composition.instance import domain_for, load_master_key, offline_config, open_store
from service.hosting.server import start
from testbed.factories import Sealed, sealed_record
from testbed.oauth import fetch_token
from tests.service.conftest import make_instance

ROOT = Path(__file__).resolve().parents[3]
ROUNDS = 3
WRITERS = 4
BATCH = 8
ACKS_PER_ROUND = 60


def serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", "0", "--data-dir", str(data_dir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    match = re.fullmatch(r"listening on (http://\S+)\n", line)
    if not match:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        pytest.fail(f"the server did not start: {line!r}")
    return proc, match.group(1)


def issuer_token(url: str, issuer: dict[str, Any]) -> str:
    return fetch_token(url, issuer["client_id"], issuer["client_secret"])


class PayRun:
    """Writers streaming batches until told to stop or the server dies."""

    def __init__(self, url: str, token: str, issuer: dict[str, Any]) -> None:
        self.url, self.token, self.issuer = url, token, issuer
        self.changed = threading.Condition()
        self.acknowledged: dict[str, Sealed] = {}
        self.in_flight: list[list[Sealed]] = []
        self.writing = WRITERS
        self.failures: list[AssertionError] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, daemon=True) for _ in range(WRITERS)]

    def _write(self) -> None:
        try:
            self._write_batches()
        except AssertionError as exc:  # an answer the server must not give
            with self.changed:
                self.failures.append(exc)
        finally:
            with self.changed:
                self.writing -= 1
                self.changed.notify_all()

    def _write_batches(self) -> None:
        key, key_version = self.issuer["encryption_key"], self.issuer["key_version"]
        with httpx.Client(verify=False, timeout=30) as client:
            while not self.stop.is_set():
                batch = [sealed_record(key, key_version=key_version) for _ in range(BATCH)]
                try:
                    reply = client.post(
                        f"{self.url}/v1/registerNonPIIBatch",
                        json={"records": [s.body for s in batch]},
                        headers={"Authorization": f"Bearer {self.token}"},
                    )
                except httpx.HTTPError:
                    with self.changed:
                        self.in_flight.append(batch)  # no answer: stored whole or not at all
                    return
                if reply.status_code == 503:
                    continue  # the concurrent batch limit; nothing was processed
                assert reply.status_code == 200, reply.text
                results = reply.json()["results"]
                with self.changed:
                    for sealed, result in zip(batch, results, strict=True):
                        assert result["status"] in ("created", "duplicate"), result
                        self.acknowledged[sealed.reference] = sealed
                    self.changed.notify_all()

    def run_until(self, count: int, timeout: float) -> None:
        """Returns once `count` registrations are acknowledged: the kill follows a count, not
        the clock, so a loaded machine only makes the round slower. Fails on an unexpected
        answer, or when `timeout` passes first."""
        for thread in self.threads:
            thread.start()
        with self.changed:
            self.changed.wait_for(
                lambda: len(self.acknowledged) >= count or self.failures or not self.writing,
                timeout,
            )
            assert not self.failures, self.failures[0]
            assert len(self.acknowledged) >= count, f"only {len(self.acknowledged)} acknowledged"

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)
        assert not self.failures, self.failures[0]


def check_on_disk(
    data_dir: Path, acknowledged: dict[str, Sealed], in_flight: list[list[Sealed]]
) -> None:
    store = open_store(data_dir)
    try:
        verification = domain_for(store, offline_config(load_master_key(data_dir))).verification
        for reference, sealed in acknowledged.items():
            assert store.get_record(reference) is not None, reference
            result = verification.verify(sealed.payload)
            assert result.verified is True
            assert result.service_reference == reference
        for batch in in_flight:
            present = [store.get_record(s.reference) is not None for s in batch]
            assert all(present) or not any(present), present
            for sealed, stored in zip(batch, present, strict=True):
                if stored:
                    assert verification.verify(sealed.payload).verified is True
    finally:
        store.close()


@pytest.mark.slow
def test_acknowledged_registrations_survive_sigkill(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _, issuer, verifier = make_instance(data_dir)
    acknowledged: dict[str, Sealed] = {}
    in_flight: list[list[Sealed]] = []
    for _ in range(ROUNDS):
        proc, url = serve(data_dir)
        run = PayRun(url, issuer_token(url, issuer), issuer)
        try:
            run.run_until(ACKS_PER_ROUND, timeout=60)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.stdout is not None
            proc.stdout.close()
        run.finish()
        assert proc.returncode == -signal.SIGKILL
        acknowledged.update(run.acknowledged)
        in_flight += run.in_flight
        check_on_disk(data_dir, acknowledged, in_flight)
    assert len(acknowledged) >= ROUNDS * ACKS_PER_ROUND

    # A normal server on the crashed directory serves every acknowledged record.
    running = start(data_dir)
    try:
        token = fetch_token(running.url, verifier["client_id"], verifier["client_secret"])
        with httpx.Client(verify=False, timeout=30) as client:
            for sealed in list(acknowledged.values())[::7]:
                reply = client.post(
                    f"{running.url}/v1/verifications/payload",
                    json={"barcode": sealed.scan_url(running.url)},
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert reply.status_code == 200, reply.text
                assert reply.json()["verified"] is True
            # A resend of an acknowledged record is a duplicate, not a second record.
            issuer_tok = issuer_token(running.url, issuer)
            resend = next(iter(acknowledged.values()))
            again = client.post(
                f"{running.url}/v1/registerNonPII",
                json=resend.body,
                headers={"Authorization": f"Bearer {issuer_tok}"},
            )
            assert again.status_code == 200, again.text
        counts = running.store.counts().records_by_issuer
        stored_in_flight = sum(
            1 for batch in in_flight for s in batch if running.store.get_record(s.reference)
        )
        assert counts[issuer["issuer_id"]] == len(acknowledged) + stored_in_flight
    finally:
        running.stop()
