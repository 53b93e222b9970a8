"""Chaos soak (issue 22): mixed load against a real server while a fault schedule runs.

PostgreSQL run: a private PostgreSQL cluster (initdb in a temporary directory, its own port) and
a private redis-server (its own port), `serve --workers 4`, so restarting them disturbs nothing
else on the machine. Faults, in turn: a worker SIGKILLed, PostgreSQL restarted, Redis stopped
for a few seconds then started, 300 slowloris connections, SIGTERM of the whole server and a
restart. TinyDB run: `serve` (one process) with its data directory on a small tmpfs; faults: the
disk filled up for a few seconds, 300 slowloris connections, SIGTERM and a restart.

Load: `--clients` threads, each a loop of verifications (70 %), single registrations (20 %) and
20-record batches (10 %); receipts once the route exists. Printed: requests, answers by status,
every unexpected answer (anything but 2xx, or 503/429 with Retry-After; a connection reset;
a refused connection outside the restart window), p99 per operation; then every acknowledged
record is verified again (0 lost). Exit 1 on any unexpected error or any lost record. Each
unexpected error is printed with when it was sent, the fault before it and its exception, and
the server log's last lines after them: the clues to a drain or restart edge (issue 37 #7).

The processes (PostgreSQL, Redis, the server) are in bench/soak_processes.py, the client
threads and their tally in bench/soak_load.py, the other faults in bench/soak_faults.py.

Usage: python bench/chaos_soak.py [--minutes 10] [--store postgres|tinydb|both] [--clients 8]
(root, for the tmpfs and for running PostgreSQL as the postgres user.)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.soak_faults import fill_disk, slowloris, tmpfs  # noqa: E402
from bench.soak_load import ALLOWED_REFUSALS, Tally, access_token, client_loop  # noqa: E402
from bench.soak_processes import PrivatePostgres, PrivateRedis, Service  # noqa: E402
from testbed.cluster import run_cli  # noqa: E402


def run(store: str, minutes: float, clients: int) -> bool:
    print(f"== {store}: {minutes:g} min, {clients} clients", flush=True)
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        root.chmod(0o755)  # the postgres user runs its cluster below it
        env = {
            **os.environ,
            "PAYSLIP_LOG_LEVEL": "WARNING",
            "PAYSLIP_RATE_LIMIT_IP": "off",
            "PAYSLIP_RATE_LIMIT_CLIENT": "off",
            "PAYSLIP_RATE_LIMIT_TOKEN_IP": "off",
        }
        for name in ("PAYSLIP_MASTER_KEY", "PAYSLIP_DATA_DIR", "PAYSLIP_DATABASE_URL"):
            env.pop(name, None)
        faults: list[tuple[str, Callable[[], None]]]
        if store == "postgres":
            pg = PrivatePostgres(root)
            stack.callback(pg.stop)
            redis_server = PrivateRedis()
            stack.callback(redis_server.stop)
            env["PAYSLIP_DATABASE_URL"] = pg.url
            data_dir = root / "d"
            extra = ["--workers", "4", "--redis-url", redis_server.url]
        else:
            disk = stack.enter_context(tmpfs("64m"))
            data_dir = disk / "d"
            extra = []
        run_cli("init", "--data-dir", str(data_dir), env=env)
        instance: dict[str, Any] = {}
        for role, kind in (("issuer", "create-issuer"), ("verifier", "create-verifier")):
            instance[role] = run_cli(
                "admin", "--data-dir", str(data_dir), kind, "--name", f"Soak {role}", env=env
            )
        service = Service(data_dir, env, extra)
        stack.callback(service.stop)

        def redis_outage() -> None:
            redis_server.stop()
            time.sleep(6)
            redis_server.start()
            print("  Redis stopped for 6 s, started", flush=True)

        if store == "postgres":
            faults = [
                ("worker SIGKILL", service.kill_a_worker),
                ("PostgreSQL restart", pg.restart),
                ("Redis stop/start", redis_outage),
                ("300 slowloris", lambda: slowloris(service.url, 300, 15)),
                ("SIGTERM + restart", service.sigterm_and_restart),
            ]
        else:
            faults = [
                ("300 slowloris", lambda: slowloris(service.url, 300, 15)),
                ("disk full", lambda: fill_disk(disk, 6)),
                ("SIGTERM + restart", service.sigterm_and_restart),
            ]
        tokens = {
            r: access_token(
                service.url,
                {
                    "client_id": instance[r]["client_id"],
                    "client_secret": instance[r]["client_secret"],
                },
            )
            for r in ("issuer", "verifier")
        }
        tally = Tally()
        stop = threading.Event()
        started = tally.started = time.monotonic()
        workers = [
            threading.Thread(
                target=client_loop, args=(service, instance, tally, stop, tokens), daemon=True
            )
            for _ in range(clients)
        ]
        for worker in workers:
            worker.start()
        end = started + minutes * 60
        number = 0
        while time.monotonic() < end - 15:
            time.sleep(min(12.0, max(0.0, end - 15 - time.monotonic())))
            if time.monotonic() >= end - 15:
                break
            name, fault = faults[number % len(faults)]
            number += 1
            at = time.monotonic() - started
            print(f"[{at:5.0f} s] fault: {name}", flush=True)
            tally.fault = f"{name} at {at:.1f} s"
            fault()
            tally.fault = f"{name} at {at:.1f} s (done at {time.monotonic() - started:.1f} s)"
        while time.monotonic() < end:
            time.sleep(0.5)
        stop.set()
        for worker in workers:
            worker.join(90)
        ok = report(store, service, instance, tally, time.monotonic() - started)
        if tally.unexpected:  # the server's side of it (it logs at WARNING: errors only)
            lines = (root / "serve.log").read_text(errors="replace").splitlines()
            print("  server log, last lines:", *lines[-30:], sep="\n    ", flush=True)
        return ok


def report(
    store: str, service: Service, instance: dict[str, Any], tally: Tally, elapsed: float
) -> bool:
    total = sum(tally.statuses.values())
    print(f"requests: {total} in {elapsed:.0f} s ({total / elapsed:.0f}/s)", flush=True)
    by_status: collections.Counter[str] = collections.Counter()
    for (op, outcome), count in sorted(tally.statuses.items()):
        by_status[outcome] += count
        print(f"  {op:9} {outcome:14} {count}", flush=True)
    print("  by status: " + ", ".join(f"{s} {n}" for s, n in sorted(by_status.items())))
    for op, seconds in sorted(tally.latency.items()):
        ordered = sorted(seconds)
        p99 = ordered[int(len(ordered) * 0.99) - 1] if ordered else 0.0
        print(f"  p99 {op:9} {p99 * 1000:8.1f} ms over {len(ordered)}", flush=True)
    for what, count in tally.unexpected.most_common():
        print(f"  UNEXPECTED x{count}: {what}", flush=True)
    for detail in tally.details[:20]:
        print(f"    {detail}", flush=True)
    vtok = access_token(
        service.url,
        {
            "client_id": instance["verifier"]["client_id"],
            "client_secret": instance["verifier"]["client_secret"],
        },
    )

    local = threading.local()

    def lost(payload: str) -> bool:
        if not hasattr(local, "http"):
            local.http = httpx.Client(timeout=60)
        for _ in range(5):
            reply = local.http.post(
                f"{service.url}/v1/verifications/payload",
                json={"barcode": payload},
                headers={"Authorization": f"Bearer {vtok}"},
            )
            if reply.status_code in ALLOWED_REFUSALS:
                time.sleep(1)
                continue
            return not (reply.status_code == 200 and reply.json()["verified"] is True)
        return True

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        missing = sum(pool.map(lost, list(tally.acknowledged)))
    print(f"  re-verified in {time.monotonic() - started:.0f} s", flush=True)
    print(
        f"{store}: acknowledged records {len(tally.acknowledged)}, re-verified, lost {missing};"
        f" unexpected errors {sum(tally.unexpected.values())}",
        flush=True,
    )
    return missing == 0 and not tally.unexpected


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--store", choices=["postgres", "tinydb", "both"], default="both")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    # A timeout's SIGTERM must still stop the server, PostgreSQL and Redis and unmount the tmpfs.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    stores = ["postgres", "tinydb"] if args.store == "both" else [args.store]
    ok = all([run(store, args.minutes, args.clients) for store in stores])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
