"""Many clients at once over HTTP (PROTOCOL §6 uniqueness): one winner per reference and per
issuer IV, every loser told why, and a store that reopens holding exactly the winners."""

from __future__ import annotations

import os
import random
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.composition.instance import open_store
from service.hosting.server import Running, start
from service.protocol.barcode_text import build_payload_v2
from service.protocol.encoding import b64url_encode, new_reference
from service.storage.tinydb_store import TinyDBStore
from testbed import web
from testbed.factories import AU_V1, sealed_with_iv
from testbed.oauth import fetch_token
from testbed.waiting import wait_until
from tests.service.conftest import make_instance

THREADS = 16
Outcome = tuple[int, str]


@dataclass(frozen=True)
class Attempt:
    """One registration: its reference, IV, content and the ciphertext that goes with them."""

    issuer: str
    reference: str
    iv: str
    gross_cents: int
    ciphertext: bytes
    body: dict[str, Any]


def attempt(issuer: dict[str, Any], reference: str, iv: bytes, gross_cents: int) -> Attempt:
    plaintext = f"P1|Worker {gross_cents}|Role|Dept|51824753556|062-000|1234|W".encode()
    payslip = {**AU_V1["payslip_non_pii"], "gross_cents": gross_cents}
    template = {**AU_V1, "payslip_non_pii": payslip}
    key = issuer["encryption_key"]
    sealed = sealed_with_iv(key, iv, plaintext, template, reference=reference)
    return Attempt(
        issuer["issuer_id"],
        reference,
        b64url_encode(iv),
        gross_cents,
        sealed.ciphertext,
        sealed.body,
    )


@dataclass
class Instance:
    running: Running
    data_dir: Path
    issuers: list[dict[str, Any]]
    verifier: dict[str, Any]

    @property
    def url(self) -> str:
        return self.running.url

    def token(self, client: dict[str, Any]) -> str:
        return fetch_token(self.url, client["client_id"], client["client_secret"])


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[Instance]:
    data_dir = tmp_path / "data"
    created, issuer, verifier = make_instance(data_dir)
    running = start(data_dir, threads=THREADS)
    admin_token = Instance(running, data_dir, [], verifier).token(
        {"client_id": created["admin_client_id"], "client_secret": created["admin_client_secret"]}
    )
    other = web.post(
        f"{running.url}/admin/v1/issuers",
        json={"name": "Second Payroll"},
        headers={"Authorization": f"Bearer {admin_token}"},
        timeout=30,
    ).json()
    inst = Instance(running, data_dir, [issuer, other], verifier)
    try:
        yield inst
    finally:
        inst.running.stop()


def race(jobs: list[Callable[[httpx.Client], Any]]) -> list[Any]:
    """Run the jobs on THREADS threads that start together, each with its own connection."""
    barrier = threading.Barrier(min(THREADS, len(jobs)))
    local = threading.local()
    clients: list[httpx.Client] = []  # closed after the race: a client left open leaks sockets

    def run(job: Callable[[httpx.Client], Any], index: int) -> Any:
        if not hasattr(local, "client"):
            local.client = httpx.Client(verify=False, timeout=60)
            clients.append(local.client)
        if index < THREADS:
            barrier.wait(timeout=30)
        return job(local.client)

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            return list(pool.map(run, jobs, range(len(jobs))))
    finally:
        for client in clients:
            client.close()


def register(url: str, token: str, body: dict[str, Any]) -> Callable[[httpx.Client], Outcome]:
    def job(client: httpx.Client) -> Outcome:
        reply = client.post(
            f"{url}/v1/registerNonPII", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        code = reply.json().get("code", "") if reply.status_code >= 400 else ""
        return reply.status_code, code

    return job


def reopened(data_dir: Path) -> dict[str, Any]:
    store = open_store(data_dir)
    try:
        assert isinstance(store, TinyDBStore)
        return {r.service_reference: r for r in store.all_records()}
    finally:
        store.close()


def test_one_winner_per_reference(instance: Instance) -> None:
    issuer = instance.issuers[0]
    token = instance.token(issuer)
    rounds = []
    jobs = []
    for _ in range(4):
        reference = new_reference()
        attempts = [attempt(issuer, reference, os.urandom(12), 1000 + t) for t in range(THREADS)]
        attempts[1] = attempts[0]  # two clients resend byte-identical content
        rounds.append(attempts)
        jobs += [register(instance.url, token, a.body) for a in attempts]
    outcomes = race(jobs)
    verifier_token = instance.token(instance.verifier)
    for index, attempts in enumerate(rounds):
        results = outcomes[index * THREADS : (index + 1) * THREADS]
        statuses = Counter(results)
        assert statuses[(201, "")] == 1, results
        winner = attempts[[r[0] for r in results].index(201)]
        for a, result in zip(attempts, results, strict=True):
            if result[0] == 200:
                assert a.body == winner.body  # only an identical resend is a duplicate
            elif result[0] != 201:
                assert result == (409, "CONFLICT"), result
        assert statuses[(200, "")] == (1 if winner is attempts[0] else 0)
        reply = web.post(
            f"{instance.url}/v1/verifications/payload",
            json={"barcode": build_payload_v2(winner.reference, winner.ciphertext)},
            headers={"Authorization": f"Bearer {verifier_token}"},
            timeout=30,
        )
        assert reply.status_code == 200, reply.text
        assert reply.json()["payslip"]["payslip_non_pii"]["gross_cents"] == winner.gross_cents
    instance.running.stop()
    stored = reopened(instance.data_dir)
    assert set(stored) == {attempts[0].reference for attempts in rounds}


def test_one_winner_per_issuer_iv(instance: Instance) -> None:
    mine, theirs = instance.issuers
    tokens = [instance.token(mine), instance.token(theirs)]
    ivs = [os.urandom(12) for _ in range(3)]
    attempts = [
        attempt(issuer, new_reference(), iv, 2000 + t)
        for iv in ivs
        for t, issuer in enumerate([mine] * (THREADS - 2) + [theirs] * 2)
    ]
    jobs = [
        register(instance.url, tokens[a.issuer == theirs["issuer_id"]], a.body) for a in attempts
    ]
    outcomes = race(jobs)
    winners: dict[tuple[str, str], list[Attempt]] = defaultdict(list)
    for a, result in zip(attempts, outcomes, strict=True):
        if result == (201, ""):
            winners[(a.issuer, a.iv)].append(a)
        else:
            assert result == (409, "IV_REUSED"), result
    assert sorted(len(w) for w in winners.values()) == [1] * 6
    assert {key for key in winners} == {
        (issuer["issuer_id"], b64url_encode(iv)) for iv in ivs for issuer in (mine, theirs)
    }
    instance.running.stop()
    stored = reopened(instance.data_dir)
    assert set(stored) == {w[0].reference for w in winners.values()}


def test_colliding_batches_and_singles_keep_every_rule(instance: Instance) -> None:
    """16 threads, references and IVs drawn from small shared pools, singles and batches mixed."""
    issuer = instance.issuers[0]
    token = instance.token(issuer)
    rng = random.Random(20261113)
    references = [new_reference() for _ in range(24)]
    ivs = [os.urandom(12) for _ in range(24)]
    attempts = [
        attempt(issuer, rng.choice(references), rng.choice(ivs), 3000 + n) for n in range(160)
    ]
    # Some exact resends of earlier attempts, which may end up as duplicates.
    attempts += [attempts[rng.randrange(len(attempts))] for _ in range(20)]
    rng.shuffle(attempts)

    def batch(chunk: list[Attempt]) -> Callable[[httpx.Client], list[Outcome]]:
        def job(client: httpx.Client) -> list[Outcome]:
            def admitted() -> httpx.Response | None:
                reply = client.post(
                    f"{instance.url}/v1/registerNonPIIBatch",
                    json={"records": [a.body for a in chunk]},
                    headers={"Authorization": f"Bearer {token}"},
                )
                if reply.status_code != 503:
                    return reply
                # The concurrent batch limit: nothing was processed; retry (sooner than told).
                assert reply.json()["code"] == "SERVICE_UNAVAILABLE"
                assert int(reply.headers["retry-after"]) >= 1
                return None

            reply = wait_until(admitted, "a free batch slot", 60, interval=0.02)
            assert reply.status_code == 200, reply.text
            table = {"created": 201, "duplicate": 200, "error": 409}
            return [(table[r["status"]], r.get("code", "")) for r in reply.json()["results"]]

        return job

    def single(a: Attempt) -> Callable[[httpx.Client], list[Outcome]]:
        job = register(instance.url, token, a.body)
        return lambda client: [job(client)]

    jobs: list[Callable[[httpx.Client], list[Outcome]]] = []
    planned: list[list[Attempt]] = []
    index = 0
    while index < len(attempts):
        size = rng.choice([1, 1, 5, 12])
        chunk = attempts[index : index + size]
        index += size
        planned.append(chunk)
        jobs.append(single(chunk[0]) if size == 1 else batch(chunk))
    outcomes = [result for results in race(jobs) for result in results]
    flat = [a for chunk in planned for a in chunk]
    assert len(outcomes) == len(flat)

    created = [a for a, r in zip(flat, outcomes, strict=True) if r == (201, "")]
    assert len({a.reference for a in created}) == len(created)  # one winner per reference
    assert len({a.iv for a in created}) == len(created)  # one winner per IV
    by_reference = {a.reference: a for a in created}
    taken_ivs = {a.iv for a in created}
    for a, result in zip(flat, outcomes, strict=True):
        if result == (201, ""):
            continue
        assert result in {(200, ""), (409, "CONFLICT"), (409, "IV_REUSED")}, result
        winner = by_reference.get(a.reference)
        if result == (200, ""):
            assert winner is not None and winner.body == a.body
        elif result[1] == "CONFLICT":
            assert winner is not None and winner.body != a.body
        else:
            assert a.iv in taken_ivs
            assert winner is None or winner.body != a.body
    instance.running.stop()
    stored = reopened(instance.data_dir)
    assert set(stored) == set(by_reference)
    for reference, record in stored.items():
        winner = by_reference[reference]
        assert record.iv == winner.iv
        assert record.payslip_non_pii["gross_cents"] == winner.gross_cents
