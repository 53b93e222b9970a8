"""Faults under load on `serve --workers`: PostgreSQL restarted (503 + Retry-After, never 500, and
recovery without restarting the service), SIGTERM (no accepted request fails), and SIGKILL of
the workers in the middle of a batch (nothing partial is stored; the retry creates exactly what
is missing).

The restart test runs its own throwaway PostgreSQL cluster (initdb as the `postgres` user on a
free port), because restarting the machine's shared server would fail other people's tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from testbed import web
from testbed.cluster import (
    Instance,
    Server,
    new_instance,
    registered,
    require_redis,
    token,
    unavailable,
)
from testbed.factories import sealed_record
from testbed.waiting import records_locked, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def own_postgres(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A private PostgreSQL cluster: (URL, the pg_ctl command prefix to restart it)."""
    if not (PG_BIN / "initdb").exists() or os.geteuid() != 0 or not shutil.which("runuser"):
        unavailable("a private PostgreSQL cluster needs root, runuser and PostgreSQL 15's initdb")
    # Outside pytest's tmp tree: the postgres user may not traverse /tmp/pytest-of-root.
    base = Path(tempfile.mkdtemp(prefix="pv-pg-"))
    data = base / "pgdata"
    data.mkdir(mode=0o700)
    shutil.chown(base, "postgres", "postgres")
    shutil.chown(data, "postgres", "postgres")
    port = _free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*as_postgres, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off"
    # -l on every call: a server started without it writes to (and holds open) our pipe.
    ctl = [*as_postgres, str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-w"]
    ctl += ["-l", str(base / "log")]
    subprocess.run([*ctl, "start"], check=True, capture_output=True, timeout=60)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", ctl
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)


def test_postgresql_restarted_under_load_gives_503_never_500_and_recovers(
    tmp_path: Path,
) -> None:
    """While PostgreSQL restarts under load, requests in flight may fail with 503 + Retry-After
    (never 500). Once the database accepts connections again no request fails: every worker
    finds the pooled connections the restart killed at checkout (or tries its work once more)
    instead of answering 503 once per dead connection. Checked twice: restarted under load, and
    restarted while idle (every pooled connection is then dead when traffic resumes)."""
    require_redis()
    with own_postgres(tmp_path) as (url, ctl):
        instance = Instance.create(tmp_path / "data", url)
        with Server.start(instance, 2, "--threads", "4") as server:
            itok, vtok = token(server.url, instance.issuer), token(server.url, instance.verifier)
            key = instance.issuer["encryption_key"]
            sealed = sealed_record(key, key_version=instance.issuer["key_version"])
            web.post(
                f"{server.url}/v1/registerNonPII",
                json=sealed.body,
                headers={"Authorization": f"Bearer {itok}"},
            ).raise_for_status()
            answers: list[tuple[float, str]] = []  # (when the request was sent, outcome)
            missing_retry_after: list[int] = []
            lock = threading.Lock()

            def load(kind: str, stop: threading.Event) -> None:
                with web.client(timeout=30) as client:
                    while not stop.is_set():
                        sent = time.monotonic()
                        if kind == "verify":
                            reply = client.post(
                                f"{server.url}/v1/verifications/payload",
                                json={"barcode": sealed.payload},
                                headers={"Authorization": f"Bearer {vtok}"},
                            )
                        else:
                            reply = client.post(
                                f"{server.url}/v1/registerNonPII",
                                json=sealed_record(key).body,
                                headers={"Authorization": f"Bearer {itok}"},
                            )
                        with lock:
                            answers.append((sent, f"{kind} {reply.status_code}"))
                            if reply.status_code == 503 and "Retry-After" not in reply.headers:
                                missing_retry_after.append(reply.status_code)

            def answered_since(moment: float) -> int:
                with lock:
                    return sum(sent > moment for sent, _ in answers)

            @contextlib.contextmanager
            def loaded() -> Iterator[None]:
                stop = threading.Event()
                threads = [
                    threading.Thread(target=load, args=(kind, stop))
                    for kind in ("verify", "verify", "verify", "register")
                ]
                for thread in threads:
                    thread.start()
                try:
                    yield
                finally:
                    stop.set()
                    for thread in threads:
                        thread.join(60)

            def restart() -> float:
                subprocess.run(
                    [*ctl, "-m", "fast", "restart"], check=True, capture_output=True, timeout=60
                )
                return time.monotonic()  # pg_ctl -w returns once the server accepts connections

            with loaded():  # restarted under load
                wait_until(lambda: answered_since(0) >= 50, "50 answers before the restart", 60)
                back = restart()
                wait_until(lambda: answered_since(back) >= 200, "200 answers after it", 60)
            with loaded():  # the pools now hold up to 4 connections per worker
                wait_until(lambda: answered_since(back) >= 400, "200 more answers", 60)
            back_idle = restart()  # restarted idle: every pooled connection dies unused
            with loaded():
                wait_until(lambda: answered_since(back_idle) >= 200, "200 answers after", 60)
            outcomes = Counter(got for _, got in answers)
            assert not any(k.endswith(" 500") for k in outcomes), outcomes
            assert set(outcomes) <= {"verify 200", "verify 503", "register 201", "register 503"}
            assert missing_retry_after == []
            after = Counter(got for sent, got in answers if sent > back)
            assert set(after) <= {"verify 200", "register 201"}, after  # no 503 once back
            assert "Traceback" not in server.log()
            print(dict(outcomes))  # shown with -s: how many requests the restart cost


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    with new_instance(tmp_path_factory.mktemp("faults") / "data") as instance:
        yield instance


def test_sigterm_under_load_fails_no_accepted_request(instance: Instance) -> None:
    """Clients keep sending while the server is told to stop. A request the server accepted is
    answered in full; once it stops listening, connections are refused before anything is sent
    (a balancer sends those to another host). Nothing else may happen."""
    with Server.start(instance, 2, "--threads", "4") as server:
        vtok = token(server.url, instance.verifier)
        sealed = registered(server.url, instance)
        outcomes: Counter[str] = Counter()
        lock = threading.Lock()
        signalled = threading.Event()
        under_load = threading.Event()  # set once the load has had 20 answers

        def load() -> None:
            refused_after_signal = 0
            while refused_after_signal < 3:
                try:
                    with web.client(timeout=30) as client:
                        reply = client.post(
                            f"{server.url}/v1/verifications/payload",
                            json={"barcode": sealed.payload},
                            headers={"Authorization": f"Bearer {vtok}", "Connection": "close"},
                        )
                    outcome = f"HTTP {reply.status_code}"
                except httpx.ConnectError:
                    # Refused: nothing listens any more (it never listens again), so no pause.
                    outcome = "refused"
                    if signalled.is_set():
                        refused_after_signal += 1
                except httpx.HTTPError as exc:  # sent but not answered: a failed request
                    outcome = type(exc).__name__
                with lock:
                    outcomes[outcome] += 1
                    if outcomes["HTTP 200"] >= 20:
                        under_load.set()

        threads = [threading.Thread(target=load) for _ in range(6)]
        for thread in threads:
            thread.start()
        assert under_load.wait(60), outcomes
        signalled.set()
        server.proc.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(60)
        assert server.proc.wait(60) == 0
    assert set(outcomes) <= {"HTTP 200", "refused"}, outcomes
    assert outcomes["HTTP 200"] > 10, outcomes


def _stored(instance: Instance, references: list[str]) -> int:
    with psycopg.connect(instance.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM records WHERE service_reference = ANY(%s)", (references,)
        ).fetchone()
        assert row is not None
        return int(row[0])


def test_workers_killed_in_the_middle_of_a_batch_leave_nothing_partial(
    instance: Instance,
) -> None:
    """The workers are killed while the batch is certainly inside its transaction: the test
    holds the records table, so the batch's insert waits for it (seen in pg_stat_activity)
    until after the kill. The orphaned PostgreSQL backend then finds its client gone and ends,
    rolling back whatever it had not committed."""
    key, version = instance.issuer["encryption_key"], instance.issuer["key_version"]
    with Server.start(instance, 2) as server:
        itok = token(server.url, instance.issuer)
        headers = {"Authorization": f"Bearer {itok}", "Content-Type": "application/json"}
        records = [sealed_record(key, key_version=version).body for _ in range(1000)]
        references = [r["service_reference"] for r in records]
        body = json.dumps({"records": records}).encode()
        failed: list[BaseException] = []

        def send() -> None:
            try:
                web.post(
                    f"{server.url}/v1/registerNonPIIBatch",
                    content=body,
                    headers=headers,
                    timeout=60,
                )
            except httpx.HTTPError as exc:
                failed.append(exc)

        workers = server.workers()
        sender = threading.Thread(target=send)
        with records_locked(instance.database_url) as held:
            sender.start()
            (backend,) = wait_until(held.waiting, "the batch waiting inside its transaction")
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            sender.join(60)
            held.release()
            wait_until(lambda: not held.alive(backend), "the orphaned backend to end")
        assert failed, "the batch was answered although its worker was killed"
        wait_until(
            lambda: len(server.workers()) == 2 and not set(server.workers()) & set(workers),
            "the killed workers replaced",
        )
        server.wait_ready()
        stored = _stored(instance, references)
        assert stored in (0, 1000), stored  # one transaction: all or nothing
        retry = web.post(
            f"{server.url}/v1/registerNonPIIBatch", content=body, headers=headers, timeout=60
        )
        assert retry.status_code == 200, retry.text
        statuses = Counter(r["status"] for r in retry.json()["results"])
        assert statuses == Counter({"created": 1000 - stored, "duplicate": stored})
        assert _stored(instance, references) == 1000
