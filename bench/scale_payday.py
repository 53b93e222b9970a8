"""The scale-out benchmark's pay day: batches of 1000 records from 8 clients with
verifications from 2 mixed in, against a server with several workers; records/s, verify p99 and
errors (must be 0). Out of bench/scale_bench.py to keep it under the module size rule.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale_servers import seed, start, stop  # noqa: E402
from service.protocol.vocabulary import BatchItemStatus  # noqa: E402
from testbed.cluster import Instance, token  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402


class _PayDayLoad:
    """The pay day's client threads and what they count, under one lock."""

    ISSUERS = 8
    VERIFIERS = 2

    def __init__(self, url: str, batches: int) -> None:
        self.url = url
        self.remaining = list(range(batches))
        self.errors: list[str] = []
        self.verify_times: list[float] = []
        self.created = 0
        self.resent = 0
        self.lock = threading.Lock()

    def post(self, client: httpx.Client, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return client.post(f"{self.url}{path}", **kwargs)
        except httpx.RemoteProtocolError:  # closed while idle, before our request was read
            with self.lock:
                self.resent += 1
            return client.post(f"{self.url}{path}", **kwargs)

    def guarded(self, work: Callable[[], None], kind: str) -> threading.Thread:
        """A thread running `work`; an exception in it is counted as an error."""

        def run() -> None:
            try:
                work()
            except Exception as exc:
                with self.lock:
                    self.errors.append(f"{kind} client failed: {type(exc).__name__}: {exc}")

        return threading.Thread(target=run)

    def _take_batch(self) -> bool:
        with self.lock:
            if not self.remaining:
                return False
            self.remaining.pop()
            return True

    def _send_batch(
        self, client: httpx.Client, body: bytes, headers: dict[str, str]
    ) -> httpx.Response:
        for _attempt in range(30):
            reply = self.post(client, "/v1/registerNonPIIBatch", content=body, headers=headers)
            if reply.status_code != 503:  # the instance's batch limit: come back
                break
            time.sleep(float(reply.headers.get("Retry-After", "1")))
        return reply

    def issuer(self, key: str, version: str, itok: str) -> None:
        headers = {"Authorization": f"Bearer {itok}", "Content-Type": "application/json"}
        with httpx.Client(timeout=120) as client:
            while self._take_batch():
                records = [sealed_record(key, key_version=version).body for _ in range(1000)]
                reply = self._send_batch(client, json.dumps({"records": records}).encode(), headers)
                with self.lock:
                    if reply.status_code != 200:
                        self.errors.append(f"batch HTTP {reply.status_code}")
                    else:
                        self.created += sum(
                            r["status"] == BatchItemStatus.CREATED for r in reply.json()["results"]
                        )

    def verifier(self, stop_at: threading.Event, payloads: list[str], vtok: str) -> None:
        with httpx.Client(timeout=30) as client:
            i = 0
            while not stop_at.is_set():
                started = time.perf_counter()
                reply = self.post(
                    client,
                    "/v1/verifications/payload",
                    json={"barcode": payloads[i % len(payloads)]},
                    headers={"Authorization": f"Bearer {vtok}"},
                )
                with self.lock:
                    if reply.status_code != 200:
                        self.errors.append(f"verify HTTP {reply.status_code}")
                    self.verify_times.append(time.perf_counter() - started)
                i += 1

    def run(self, instance: Instance, payloads: list[str], itok: str, vtok: str) -> float:
        """Every batch sent by the issuers while the verifiers verify; the issuers' seconds."""
        key, version = instance.issuer["encryption_key"], instance.issuer["key_version"]
        done = threading.Event()
        verifiers = [
            self.guarded(lambda: self.verifier(done, payloads, vtok), "verifier")
            for _ in range(self.VERIFIERS)
        ]
        issuers = [
            self.guarded(lambda: self.issuer(key, version, itok), "issuer")
            for _ in range(self.ISSUERS)
        ]
        started = time.perf_counter()
        for thread in [*verifiers, *issuers]:
            thread.start()
        for thread in issuers:
            thread.join()
        elapsed = time.perf_counter() - started
        done.set()
        for thread in verifiers:
            thread.join()
        return elapsed


def payday(instance: Instance, tmp: Path, batches: int, workers: int = 4) -> None:
    """Batches of 1000 from 8 clients and verifications from 2, all at once. Every record must
    be created and every request answered: an exception in a client thread is an error too. A
    request sent on a kept-alive connection just as the server closed it for idleness fails
    before any answer; like any HTTP client (RFC 9112 §9.3.1) the clients send it once more
    (every request here is idempotent) and the count of such resends is printed."""
    proc = start("gunicorn", workers, instance, tmp / "metrics")
    url = proc.url  # type: ignore[attr-defined]
    load = _PayDayLoad(url, batches)
    try:
        itok = token(url, instance.issuer)
        vtok = token(url, instance.verifier)
        payloads = seed(url, itok, instance, 1000)
        elapsed = load.run(instance, payloads, itok, vtok)
    finally:
        stop(proc)
    errors, verify_times, created = load.errors, load.verify_times, load.created
    if created != batches * 1000:
        errors.append(f"{created} records created, not {batches * 1000}")
    p99 = (
        statistics.quantiles(verify_times, n=100)[98] * 1000
        if len(verify_times) > 100
        else float("nan")
    )
    print(
        f"pay day ({workers} workers): {batches} batches of 1000 from 8 clients "
        f"in {elapsed:.1f} s: "
        f"{created / elapsed:,.0f} records/s; {len(verify_times)} verifications mixed in, "
        f"p99 {p99:.1f} ms; errors {len(errors)} (target 0); requests resent on a connection "
        f"closed while idle {load.resent}",
        flush=True,
    )
    if errors:
        raise SystemExit(f"errors during the pay day: {errors[:5]}")
