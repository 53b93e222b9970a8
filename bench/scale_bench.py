"""Scale-out benchmark on PostgreSQL and Redis on loopback: ratios measured in one run.

1. verify req/s and p99 with 1, 2 and 4 workers, against /healthz of the same server
   (target >= 0.8 each), and 2 workers vs 1 (target >= 1.6 on a 2-core machine); with 1 worker
   also the CPU time one request costs in the worker and in PostgreSQL (Linux).
   `--servers gunicorn,granian` runs the same for granian (how the server was chosen).
2. a 1000-record batch over HTTP vs a COPY of the same rows into a scratch table (target <= 4).
3. a pay-day simulation: batches of 1000 from 8 concurrent clients with verifications mixed in:
   records/s, verify p99, errors (must be 0).
4. verify p50 with 1,000,000 stored records vs 10,000 (target <= 1.2).

Every server runs the WSGI entry point `service.hosting.wsgi:application` (gunicorn with the
gthread-based
`service.hosting.workers.DrainingThreadWorker`, or granian's WSGI interface), configured from the
environment as an operator would (docs/deploy.md). Load is wrk
(`apt-get install wrk`), 16 connections. Rate limits are off: this measures throughput.
Usage: python bench/scale_bench.py [--seconds 3] [--rounds 3] [--workers 1,2,4] [--servers gunicorn]
       [--payday-batches 200]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import interleaved_p50  # noqa: E402
from service.protocol.vocabulary import BatchItemStatus, PayslipSchema  # noqa: E402
from testbed.cluster import REDIS_URL, Instance, throwaway_database, token  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402

VENV_BIN = Path(sys.executable).parent
THREADS = "8"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(
    server: str, workers: int, instance: Instance, metrics_dir: Path
) -> subprocess.Popen[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir()
    env = {
        **instance.env,
        "PAYSLIP_DATA_DIR": str(instance.data_dir),
        "PAYSLIP_PUBLIC_URL": url,
        "PAYSLIP_REDIS_URL": REDIS_URL,
        "PAYSLIP_REDIS_PREFIX": "bench",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "PAYSLIP_RATE_LIMIT_IP": "off",
        "PAYSLIP_RATE_LIMIT_CLIENT": "off",
        "PAYSLIP_RATE_LIMIT_TOKEN_IP": "off",
    }
    if server in ("gunicorn", "guarded"):
        # "gunicorn": the worker class before issue 22; "guarded": the one `serve --workers`
        # runs now (whole requests read in the main loop, service/hosting/gunicorn_guard.py).
        worker_class = {
            "gunicorn": "service.hosting.workers.DrainingThreadWorker",
            "guarded": "service.hosting.gunicorn_guard.GuardedThreadWorker",
        }[server]
        args = [str(VENV_BIN / "gunicorn"), "--threads", THREADS]
        args += ["--worker-class", worker_class]
        args += ["--workers", str(workers), "--bind", f"127.0.0.1:{port}"]
        args += ["--control-socket", str(metrics_dir / "ctl.sock"), "--log-level", "warning"]
        args += ["--keep-alive", "5"]  # as `serve --workers` sets it
    else:
        args = [str(VENV_BIN / "granian"), "--interface", "wsgi", "--workers", str(workers)]
        args += ["--blocking-threads", THREADS, "--host", "127.0.0.1", "--port", str(port)]
        args += ["--log-level", "warning"]
    proc = subprocess.Popen(
        [*args, "service.hosting.wsgi:application"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                proc.url = url  # type: ignore[attr-defined]
                return proc
        time.sleep(0.2)
    stop(proc)
    raise SystemExit(f"{server} with {workers} workers did not become ready")


def stop(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


WRK = ["wrk", "-t2", "-c16", "--timeout", "10s", "--latency"]

WRK_SCRIPT = """
wrk.method = "{method}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
wrk.body = [[{body}]]
"""


def _ms(match: re.Match[str] | None) -> float:
    assert match is not None
    return float(match.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[match.group(2)]


def wrk(
    url: str, seconds: int, method: str = "GET", body: str = "", bearer: str = ""
) -> tuple[float, float]:
    """(requests/s, p99 ms), 16 connections on 2 threads; any failed request ends the run
    (an answer slower than 10 s counts as failed: wrk's own 2 s made runs on a machine busy
    with other jobs fail on a stall, not on an error)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(method=method, token=bearer, body=body))
    try:
        out = subprocess.run(
            [*WRK, f"-d{seconds}s", "-s", script.name, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    if failed or errors:
        raise SystemExit(f"{url}: failed requests during the load:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return rps, _ms(re.search(r"99%\s+([\d.]+)(us|ms|s)", out))


def seed(url: str, itok: str, instance: Instance, count: int) -> list[str]:
    payloads: list[str] = []
    with httpx.Client(timeout=120) as client:
        for done in range(0, count, 1000):
            sealed = [
                sealed_record(
                    instance.issuer["encryption_key"], key_version=instance.issuer["key_version"]
                )
                for _ in range(min(1000, count - done))
            ]
            client.post(
                f"{url}/v1/registerNonPIIBatch",
                json={"records": [s.body for s in sealed]},
                headers={"Authorization": f"Bearer {itok}"},
            ).raise_for_status()
            payloads.extend(s.payload for s in sealed[:5])
    return payloads


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def cpu_per_request(
    proc: subprocess.Popen[str], database_url: str, seconds: int, *wrk_args: str
) -> tuple[float, float, float]:
    """(requests/s, worker CPU us per request, PostgreSQL CPU us per request) for one wrk run:
    what a request costs, which other jobs on a shared machine barely change (they change how
    much CPU is left, i.e. requests/s). PostgreSQL: the backends of this database only."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    workers = [int(pid) for pid in children]
    with psycopg.connect(database_url, autocommit=True) as conn:
        backends = [
            int(row[0])
            for row in conn.execute(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ]
    before = _cpu_seconds(workers), _cpu_seconds(backends)
    rps, _ = wrk(wrk_args[0], seconds, *wrk_args[1:])
    requests = rps * seconds
    return (
        rps,
        (_cpu_seconds(workers) - before[0]) / requests * 1e6,
        (_cpu_seconds(backends) - before[1]) / requests * 1e6,
    )


def scaling(args: argparse.Namespace, instance: Instance, tmp: Path) -> None:
    """verify vs /healthz per worker count. The two alternate for `--rounds` rounds and each
    figure is the median over rounds: other jobs on a shared machine come and go within a run,
    and a ratio of two measurements taken apart would mostly measure that."""
    counts = [int(n) for n in args.workers.split(",")]
    for server in args.servers.split(","):
        figures: dict[int, tuple[float, float, float]] = {}
        for workers in counts:
            proc = start(server, workers, instance, tmp / "metrics")
            url = proc.url  # type: ignore[attr-defined]
            rounds: list[tuple[float, float, float]] = []
            cost: list[tuple[float, float, float]] = []
            try:
                vtok = token(url, instance.verifier)
                itok = token(url, instance.issuer)
                payload = seed(url, itok, instance, 1000)[0]
                body = json.dumps({"barcode": payload})
                wrk(f"{url}/healthz", 1)  # warm every worker up
                wrk(f"{url}/v1/verifications/payload", 1, "POST", body, vtok)
                for _ in range(args.rounds):
                    health, _ = wrk(f"{url}/healthz", args.seconds)
                    verify, p99 = wrk(
                        f"{url}/v1/verifications/payload", args.seconds, "POST", body, vtok
                    )
                    rounds.append((verify, p99, health))
                if server != "granian" and workers == 1 and Path("/proc").is_dir():
                    cost = [
                        cpu_per_request(proc, instance.database_url, args.seconds, *call)
                        for call in (
                            (f"{url}/healthz",),
                            (f"{url}/v1/verifications/payload", "POST", body, vtok),
                        )
                    ]
            finally:
                stop(proc)
            verify, p99, health = (statistics.median(r[i] for r in rounds) for i in range(3))
            ratio = statistics.median(v / h for v, _, h in rounds)
            figures[workers] = (verify, p99, health)
            print(
                f"{server:8} {workers} worker(s): verify {verify:7,.0f} req/s p99 {p99:6.1f} ms; "
                f"healthz {health:7,.0f} req/s; verify/healthz {ratio:.2f} (target >= 0.8; "
                f"rounds {', '.join(f'{v / h:.2f}' for v, _, h in rounds)})",
                flush=True,
            )
            if server != "granian" and workers == 1 and cost:
                (_, h_worker, _), (_, v_worker, v_pg) = cost
                print(
                    f"{server:8} CPU per request, 1 worker: /healthz {h_worker:.0f} us in the "
                    f"worker; verify {v_worker:.0f} us in the worker + {v_pg:.0f} us in "
                    f"PostgreSQL (the worker's CPU alone bounds verify/healthz at "
                    f"{h_worker / v_worker:.2f})",
                    flush=True,
                )
        if 1 in figures and 2 in figures:
            print(
                f"{server:8} 2 workers vs 1: {figures[2][0] / figures[1][0]:.2f} (target >= 1.6)",
                flush=True,
            )


SCRATCH_TABLES = {
    "temp table, no indexes": (
        "scratch_plain",
        "CREATE TEMP TABLE scratch_plain (LIKE records INCLUDING DEFAULTS INCLUDING IDENTITY)",
    ),
    "table like records (its keys, WAL-logged)": (
        "scratch_like",
        "CREATE TABLE scratch_like (LIKE records INCLUDING ALL)",
    ),
}
"""The two COPY baselines. The first is the floor of moving the bytes; the second writes the
rows as the service must (durably, into a table with the records table's primary key and
unique (issuer_id, iv)), so it is the database's own cost of a batch."""


def batch_vs_copy(instance: Instance, tmp: Path, rounds: int = 7) -> None:
    proc = start("gunicorn", 2, instance, tmp / "metrics")
    url = proc.url  # type: ignore[attr-defined]
    ratios: dict[str, list[tuple[float, float, float]]] = {name: [] for name in SCRATCH_TABLES}
    try:
        itok = token(url, instance.issuer)
        headers = {"Authorization": f"Bearer {itok}", "Content-Type": "application/json"}
        with httpx.Client(timeout=120) as client, psycopg.connect(instance.database_url) as conn:
            for _, create in SCRATCH_TABLES.values():
                conn.execute(create)
            conn.commit()
            for _ in range(rounds):
                sealed = [
                    sealed_record(
                        instance.issuer["encryption_key"],
                        key_version=instance.issuer["key_version"],
                    )
                    for _ in range(1000)
                ]
                encoded = json.dumps({"records": [s.body for s in sealed]}).encode()
                started = time.perf_counter()
                client.post(
                    f"{url}/v1/registerNonPIIBatch", content=encoded, headers=headers
                ).raise_for_status()
                http_s = time.perf_counter() - started
                rows = [
                    (
                        s.body["service_reference"],
                        instance.issuer["issuer_id"],
                        s.body["schema"],
                        s.body["issued_at"],
                        json.dumps(s.body["payslip_non_pii"]),
                        s.body["encryption_metadata"]["iv"],
                        s.body["encryption_metadata"]["tag"],
                        s.body["encryption_metadata"]["key_version"],
                        hashlib.sha256(s.body["service_reference"].encode()).hexdigest(),
                        "2026-11-23T00:00:00.000000Z",
                    )
                    for s in sealed
                ]
                for name, (table, _) in SCRATCH_TABLES.items():
                    started = time.perf_counter()
                    with (
                        conn.transaction(),
                        conn.cursor().copy(
                            f'COPY {table} (service_reference, issuer_id, "schema", issued_at, '
                            "payslip_non_pii, iv, tag, key_version, fingerprint, registered_at) "
                            "FROM STDIN"
                        ) as copy,
                    ):
                        for row in rows:
                            copy.write_row(row)
                    copy_s = time.perf_counter() - started
                    ratios[name].append((http_s / copy_s, http_s, copy_s))
            conn.execute("DROP TABLE scratch_like")
            conn.commit()
    finally:
        stop(proc)
    for name, runs in ratios.items():
        ratio, http_s, copy_s = sorted(runs)[len(runs) // 2]
        print(
            f"1000-record batch over HTTP {http_s * 1000:.0f} ms vs COPY of the same rows into a "
            f"{name} {copy_s * 1000:.1f} ms: ratio {ratio:.2f} (target <= 4)",
            flush=True,
        )


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


FILLER = """
INSERT INTO records (service_reference, issuer_id, "schema", issued_at, payslip_non_pii, iv, tag,
                     key_version, fingerprint, registered_at)
SELECT 'fill-' || i, 'filler-issuer', %s, '2026-11-13T09:00:00Z', %s::jsonb,
       md5(i::text), md5((i + 1)::text), NULL, md5((i + 2)::text), '2026-11-13T09:00:00.000Z'
FROM generate_series(1, %s) AS i
"""


def verify_p50_at_scale(tmp: Path, big: int, small: int = 10_000, rounds: int = 600) -> None:
    """verify p50 on a store of `big` records vs one of `small`, two servers (1 worker each),
    requests interleaved so both see the same machine noise. Real records for the verified
    ones, server-side generated filler rows (same shape and size) for the rest."""
    with throwaway_database() as url_small, throwaway_database() as url_big:
        servers = []
        targets = []
        try:
            for size, url in ((small, url_small), (big, url_big)):
                instance = Instance.create(tmp / f"scale-{size}", url)
                with psycopg.connect(url, autocommit=True) as conn:
                    payload = json.dumps(
                        sealed_record(instance.issuer["encryption_key"]).body["payslip_non_pii"]
                    )
                    conn.execute(FILLER, (PayslipSchema.AU_V1, payload, size - 200))
                    conn.execute("ANALYZE records")
                proc = start("gunicorn", 1, instance, tmp / f"metrics-{size}")
                servers.append(proc)
                url_http = proc.url  # type: ignore[attr-defined]
                payloads = seed(url_http, token(url_http, instance.issuer), instance, 200)
                targets.append((url_http, token(url_http, instance.verifier), payloads))
            p50_small, p50_big = interleaved_p50(*targets, rounds=rounds)
        finally:
            for proc in servers:
                stop(proc)
    print(
        f"verify p50 with {big:,} stored records {p50_big:.2f} ms vs with {small:,} "
        f"{p50_small:.2f} ms (interleaved, {rounds} each): ratio {p50_big / p50_small:.2f} "
        "(target <= 1.2)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=3, help="per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="healthz/verify pairs per count")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--servers", default="gunicorn")
    parser.add_argument("--payday-batches", type=int, default=200)
    parser.add_argument("--skip", default="", help="comma list of: scaling,batch,payday,size")
    parser.add_argument("--big", type=int, default=1_000_000, help="records for the size test")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker")
    args = parser.parse_args()
    global THREADS
    THREADS = str(args.threads)
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install wrk")
    skip = set(args.skip.split(","))
    with tempfile.TemporaryDirectory() as tmp_name, throwaway_database() as database_url:
        tmp = Path(tmp_name)
        instance = Instance.create(tmp / "data", database_url)
        if "scaling" not in skip:
            scaling(args, instance, tmp)
        if "batch" not in skip:
            batch_vs_copy(instance, tmp)
        if "payday" not in skip:
            payday(instance, tmp, args.payday_batches)
        if "size" not in skip:
            verify_p50_at_scale(tmp, args.big)


if __name__ == "__main__":
    main()
