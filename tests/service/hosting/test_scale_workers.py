"""`serve --workers N` on gunicorn, with a real PostgreSQL and Redis: what an operator notices.

A killed worker is replaced, SIGTERM lets in-flight requests finish, workers are recycled after
`--max-requests`, the WSGI entry point runs under gunicorn configured from the environment, and
setups that cannot share state are refused with one line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from testbed import web
from testbed.cluster import REDIS_URL, ROOT, Instance, Server, new_instance, registered, token
from testbed.factories import sealed_record
from testbed.waiting import records_locked, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    with new_instance(tmp_path_factory.mktemp("scale") / "data") as instance:
        yield instance


def _batch(instance: Instance, count: int = 1000) -> bytes:
    key, version = instance.issuer["encryption_key"], instance.issuer["key_version"]
    records = [sealed_record(key, key_version=version).body for _ in range(count)]
    return json.dumps({"records": records}).encode()


def _records(instance: Instance) -> int:
    with psycopg.connect(instance.database_url) as conn:
        row = conn.execute("SELECT count(*) FROM records").fetchone()
        assert row is not None
        return int(row[0])


def test_a_killed_worker_is_replaced_and_service_goes_on(instance: Instance) -> None:
    with Server.start(instance, 2) as server:
        wait_until(lambda: len(server.workers()) == 2, "two workers")
        before = server.workers()
        os.kill(before[0], signal.SIGKILL)
        wait_until(
            lambda: len(server.workers()) == 2 and before[0] not in server.workers(),
            "the killed worker replaced",
        )
        assert before[1] in server.workers()
        vtok = token(server.url, instance.verifier)
        itok = token(server.url, instance.issuer)
        sealed = sealed_record(instance.issuer["encryption_key"])
        with web.client(timeout=30) as client:
            created = client.post(
                f"{server.url}/v1/registerNonPII",
                json=sealed.body,
                headers={"Authorization": f"Bearer {itok}"},
            )
            assert created.status_code == 201, created.text
            for _ in range(20):  # both workers (the new one included) answer
                reply = client.post(
                    f"{server.url}/v1/verifications/payload",
                    json={"barcode": sealed.payload},
                    headers={"Authorization": f"Bearer {vtok}"},
                )
                assert reply.status_code == 200, reply.text
                assert reply.json()["verified"] is True
        assert server.terminate() == 0


def test_sigterm_lets_in_flight_batches_finish(instance: Instance) -> None:
    """Eight 1000-record batches in flight when SIGTERM arrives: every one is answered 200 and
    every record is stored; the server then exits 0.

    "In flight" is made certain, not hoped for: the signal is sent once every request's head
    is on the wire and a batch is inside its transaction, where it stays (the test holds the
    records table, so its insert waits, as pg_stat_activity shows) until after the signal."""
    bodies = [_batch(instance) for _ in range(8)]
    before = _records(instance)
    with Server.start(instance, 2, "--threads", "4") as server:
        itok = token(server.url, instance.issuer)
        sent = threading.Barrier(len(bodies) + 1)
        heads_sent = [threading.Event() for _ in bodies]

        def post(body: bytes, head_sent: threading.Event) -> httpx.Response:
            def content() -> Iterator[bytes]:
                head_sent.set()  # httpx asks for the body once it has sent the request head
                yield body

            with web.client(timeout=60) as client:
                client.get(f"{server.url}/healthz")  # connected before the signal
                sent.wait()
                return client.post(
                    f"{server.url}/v1/registerNonPIIBatch",
                    content=content(),
                    headers={
                        "Authorization": f"Bearer {itok}",
                        "Content-Type": "application/json",
                        "Content-Length": str(len(body)),
                    },
                )

        with ThreadPoolExecutor(len(bodies)) as pool:
            with records_locked(instance.database_url) as records:
                futures = [pool.submit(post, *job) for job in zip(bodies, heads_sent, strict=True)]
                sent.wait()
                wait_until(
                    lambda: all(e.is_set() for e in heads_sent) and records.waiting(),
                    "every request sent and a batch waiting inside its transaction",
                )
                server.proc.send_signal(signal.SIGTERM)
            replies = [f.result() for f in futures]
        statuses = [r.status_code for r in replies]
        # The instance allows 4 concurrent batches: the others are refused at once with 503,
        # as a client at the batch limit always is; none may be cut off or fail otherwise.
        assert set(statuses) <= {200, 503}, [r.text for r in replies]
        answered = [r for r in replies if r.status_code == 200]
        assert answered, statuses
        created = sum(
            sum(item["status"] == "created" for item in r.json()["results"]) for r in answered
        )
        assert created == 1000 * len(answered)
        assert server.proc.wait(60) == 0
    assert _records(instance) == before + created
    assert "Traceback" not in server.log()


def test_a_request_refused_before_its_body_is_read_leaves_the_client_a_working_connection(
    instance: Instance,
) -> None:
    """A batch refused before its body is read (here a bad token; the batch limit's 503 the same
    way) leaves most of the body on the socket, which the server will not read: the answer says
    `Connection: close`, so the client's next request goes on a new connection instead of
    failing with "server disconnected" on the old one. A small body is read away and the
    connection kept."""
    with Server.start(instance, 2) as server, web.client(timeout=30) as client:
        url = f"{server.url}/v1/registerNonPIIBatch"
        headers = {"Authorization": "Bearer not-a-token", "Content-Type": "application/json"}
        for _ in range(3):
            refused = client.post(url, content=_batch(instance, 300), headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.headers["connection"] == "close"
            assert client.get(f"{server.url}/healthz").status_code == 200
        small = client.post(url, content=b'{"records": []}', headers=headers)
        assert small.status_code == 401
        assert small.headers["connection"] == "keep-alive"
        assert client.get(f"{server.url}/healthz").status_code == 200


def test_workers_are_recycled_after_max_requests(instance: Instance) -> None:
    with Server.start(instance, 2, "--max-requests", "20") as server:
        wait_until(lambda: len(server.workers()) == 2, "two workers")
        first = set(server.workers())
        with web.client(timeout=10) as client:
            for _ in range(120):
                assert client.get(f"{server.url}/healthz").status_code == 200
        wait_until(lambda: len(server.workers()) == 2, "two workers after the recycling")
        assert not first & set(server.workers()), "no worker was recycled"


def test_wsgi_entry_point_runs_under_gunicorn_from_the_environment(
    instance: Instance, tmp_path: Path
) -> None:
    port = 0
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {
        **instance.env,
        "PAYSLIP_DATA_DIR": str(instance.data_dir),
        "PAYSLIP_PUBLIC_URL": url,
        "PAYSLIP_REDIS_URL": REDIS_URL,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    gunicorn = Path(sys.executable).parent / "gunicorn"
    proc = subprocess.Popen(
        [
            *(str(gunicorn), "-k", "gthread", "-w", "2", "-b", f"127.0.0.1:{port}"),
            *("--control-socket", str(tmp_path / "ctl"), "service.hosting.wsgi:application"),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: _ready(url), "gunicorn answering /readyz")
        sealed = registered(url, instance)
        vtok = token(url, instance.verifier)
        reply = web.post(
            f"{url}/v1/verifications/payload",
            json={"barcode": sealed.payload},
            headers={"Authorization": f"Bearer {vtok}"},
        )
        assert reply.status_code == 200 and reply.json()["verified"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        _, errors = proc.communicate(timeout=60)
    assert proc.returncode == 0, errors
    access = [json.loads(line) for line in errors.splitlines() if line.startswith("{")]
    verify_lines = [a for a in access if a["route"] == "/v1/verifications/payload"]
    assert verify_lines and verify_lines[0]["status"] == 200
    assert set(verify_lines[0]) == {
        "time",
        "method",
        "route",
        "status",
        "duration_ms",
        "request_id",
    }


def _ready(url: str) -> bool:
    try:
        return web.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _serve(instance: Instance, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--data-dir", str(instance.data_dir), *args],
        capture_output=True,
        text=True,
        env={**instance.env, **(env or {})},
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_workers_without_redis_refuse_with_one_line(instance: Instance) -> None:
    env = {k: v for k, v in instance.env.items() if k != "PAYSLIP_REDIS_URL"}
    line = _serve(Instance(instance.data_dir, instance.database_url, env), "--workers", "2")
    assert "needs Redis" in line and "--redis-url" in line


def test_workers_with_unreachable_redis_refuse_with_one_line(instance: Instance) -> None:
    line = _serve(instance, "--workers", "2", "--redis-url", "redis://127.0.0.1:1/0")
    assert "cannot reach Redis" in line


def test_workers_on_tinydb_refuse_with_one_line(tmp_path: Path, instance: Instance) -> None:
    env = {k: v for k, v in instance.env.items() if k != "PAYSLIP_DATABASE_URL"}
    tiny = Instance(tmp_path, "", env)
    line = _serve(tiny, "--workers", "2", "--redis-url", REDIS_URL)
    assert "needs PostgreSQL" in line
