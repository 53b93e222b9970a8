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
The servers are started, seeded and stopped by bench/scale_servers.py, wrk and the CPU per
request are in bench/scale_wrk.py, the pay day in bench/scale_payday.py.
Usage: python bench/scale_bench.py [--seconds 3] [--rounds 3] [--workers 1,2,4] [--servers gunicorn]
       [--payday-batches 200]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scale_servers  # noqa: E402
from bench.scale_payday import payday  # noqa: E402
from bench.scale_servers import seed, start, stop  # noqa: E402
from bench.scale_wrk import cpu_per_request, wrk  # noqa: E402
from bench.served import interleaved_p50  # noqa: E402
from service.protocol.vocabulary import PayslipSchema  # noqa: E402
from testbed.cluster import Instance, throwaway_database, token  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402


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
    scale_servers.THREADS = str(args.threads)
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
