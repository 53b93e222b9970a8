"""The chaos soak's load (issue 22): client threads that verify, register and send batches
against the server while the faults run, and the tally of what they were answered (statuses,
latencies, unexpected answers with when they were sent, the records acknowledged). Out of
bench/chaos_soak.py to keep it under the module size rule.
"""

from __future__ import annotations

import collections
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.soak_processes import Service  # noqa: E402
from service.protocol.vocabulary import BatchItemStatus  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402

ALLOWED_REFUSALS = {503, 429}
BATCH = 20


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statuses: collections.Counter[tuple[str, str]] = collections.Counter()
        self.unexpected: collections.Counter[str] = collections.Counter()
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.acknowledged: list[str] = []
        self.started = time.monotonic()
        self.fault = "none yet"  # the latest fault and when it began, for each error's line
        self.details: list[str] = []

    def note(
        self, op: str, outcome: str, seconds: float, unexpected: str | None, detail: str = ""
    ) -> None:
        with self.lock:
            self.statuses[(op, outcome)] += 1
            self.latency[op].append(seconds)
            if unexpected:
                self.unexpected[f"{op}: {unexpected}"] += 1
                # When it happened and what it said: the clue to its cause (a drain, a restart).
                at = time.monotonic() - self.started - seconds
                self.details.append(
                    f"sent at {at:6.1f} s, {seconds * 1000:.0f} ms, after {self.fault}:"
                    f" {op} {unexpected} {detail[:160]!r}"
                )


def access_token(url: str, client: dict[str, str]) -> str:
    reply = httpx.post(
        f"{url}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "audience": url,
        },
        timeout=30,
    )
    reply.raise_for_status()
    return str(reply.json()["access_token"])


def client_loop(
    service: Service,
    instance: dict[str, Any],
    tally: Tally,
    stop: threading.Event,
    tokens: dict[str, str],
) -> None:
    key = instance["issuer"]["encryption_key"]
    rng = random.Random()
    with httpx.Client(timeout=60) as http:
        while not stop.is_set():
            pick = rng.random()
            if pick < 0.7 and tally.acknowledged:
                op = "verify"
                payload = rng.choice(tally.acknowledged)
                call: tuple[str, Any, str] = (
                    "/v1/verifications/payload",
                    {"barcode": payload},
                    tokens["verifier"],
                )
                made: list[Any] = []
            elif pick < 0.9:
                op = "register"
                made = [sealed_record(key)]
                call = ("/v1/registerNonPII", made[0].body, tokens["issuer"])
            else:
                op = "batch"
                made = [sealed_record(key) for _ in range(BATCH)]
                call = (
                    "/v1/registerNonPIIBatch",
                    {"records": [m.body for m in made]},
                    tokens["issuer"],
                )
            path, body, bearer = call
            started = time.monotonic()
            try:
                reply = http.post(
                    f"{service.url}{path}", json=body, headers={"Authorization": f"Bearer {bearer}"}
                )
            except httpx.ConnectError as exc:
                refused = "refused" in str(exc).lower() or isinstance(
                    exc.__cause__, ConnectionRefusedError
                )
                expected = refused and service.down.is_set()
                tally.note(
                    op,
                    "refused" if refused else "connect error",
                    0.0,
                    None if expected else type(exc).__name__,
                    repr(exc.__cause__ or exc),
                )
                time.sleep(0.2)
                continue
            except httpx.HTTPError as exc:
                # A worker SIGKILLed mid-request resets that request's connection: the fault
                # itself, not the service failing. Anything else is unexpected.
                by_kill = started - service.killed_at < 3.0
                outcome = "cut by the worker kill" if by_kill else type(exc).__name__
                tally.note(
                    op,
                    outcome,
                    time.monotonic() - started,
                    None if by_kill else type(exc).__name__,
                    repr(exc.__cause__ or exc),
                )
                continue
            seconds = time.monotonic() - started
            status = reply.status_code
            unexpected = None
            if status >= 300 and not (
                status in ALLOWED_REFUSALS and reply.headers.get("retry-after")
            ):
                unexpected = f"{status} {reply.text[:120]}"
            tally.note(op, str(status), seconds, unexpected)
            if status in ALLOWED_REFUSALS:
                time.sleep(min(float(reply.headers.get("retry-after", "1")), 1.0))
            if op == "register" and status == 201:
                with tally.lock:
                    tally.acknowledged.append(made[0].payload)
            elif op == "batch" and status == 200:
                results = reply.json()["results"]
                with tally.lock:
                    tally.acknowledged.extend(
                        m.payload
                        for m, r in zip(made, results, strict=True)
                        if r["status"] == BatchItemStatus.CREATED
                    )
