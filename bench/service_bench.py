"""Service benchmark: ratios measured in one run on this machine (absolute numbers are noise).

1. verify requests/s vs /healthz requests/s, 16 concurrent connections (target >= 0.8)
2. verify p50 with 100k stored records vs with 1k (target <= 1.2)
3. registering a 1000-record batch over HTTP vs validating those records in-process (target <= 3)

Load comes from wrk when installed (`apt-get install wrk`), else from 16 Python client threads in
this process (failed requests are counted and end the run with a message, never hidden).
Usage: python bench/service_bench.py [--records 100000] [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import instance, interleaved_p50, serve, token  # noqa: E402
from service.protocol import schemas  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402


def start_server(
    data_dir: Path,
) -> tuple[subprocess.Popen[str], str, dict[str, Any], dict[str, Any]]:
    """A new instance served with 16 threads: (process, URL, issuer, verifier)."""
    issuer, verifier = instance(data_dir, "Bench Payroll", "Bench Desk")
    proc, url = serve(data_dir, 0, "--threads", "16")
    return proc, url, issuer, verifier


def seed(
    url: str, issuer_token: str, key: str, count: int, key_version: str | None = None
) -> list[str]:
    """Register `count` records in batches of 1000; return a few payloads to verify."""
    payloads: list[str] = []
    headers = {"Authorization": f"Bearer {issuer_token}"}
    with httpx.Client(timeout=120) as client:
        done = 0
        while done < count:
            n = min(1000, count - done)
            # Pinned to their key version, as the issuer library registers them: verifying an
            # unpinned record writes its pin, and those writes would set off a compaction of
            # the 100k-record store in the middle of the measurement.
            sealed = [sealed_record(key, key_version=key_version) for _ in range(n)]
            reply = client.post(
                f"{url}/v1/registerNonPIIBatch",
                json={"records": [s.body for s in sealed]},
                headers=headers,
            )
            reply.raise_for_status()
            payloads.extend(s.payload for s in sealed[:5])
            done += n
            print(f"\r  seeded {done}/{count}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return payloads


WRK_SCRIPT = """
wrk.method = "{method}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
wrk.body = [[{body}]]
"""


def wrk_rps(
    url: str, path: str, seconds: int, method: str = "GET", body: str = "", bearer: str = ""
) -> tuple[float, float]:
    """(requests/s, p50 ms) with 16 connections on 2 threads."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(method=method, token=bearer, body=body))
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-s", script.name, f"{url}{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    os.unlink(script.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    assert p50 is not None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p50.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise SystemExit(f"{path}: {non2xx.group(1)} failed requests during the load")
    return rps, float(p50.group(1)) * scale


def python_rps(
    url: str, path: str, seconds: int, method: str = "GET", body: str = "", bearer: str = ""
) -> tuple[float, float]:
    """Fallback load: 16 keep-alive clients in threads of this process.

    Every failed request (an HTTP error status or a connection error) is counted and reported,
    as wrk's non-2xx count is: a figure measured over failures would be a lie."""
    headers = {"Content-Type": "application/json"}
    if bearer:  # "Bearer " with nothing after it is an illegal header value: every request failed
        headers["Authorization"] = f"Bearer {bearer}"
    latencies: list[float] = []
    failures: Counter[str] = Counter()
    lock = threading.Lock()
    window: dict[str, float] = {}
    # The clock starts when all 16 clients are connected and warm, so setup is not measured.
    ready = threading.Barrier(
        16, action=lambda: window.update(deadline=time.perf_counter() + seconds), timeout=60
    )

    def worker() -> None:
        with httpx.Client(timeout=10) as client:
            with contextlib.suppress(httpx.HTTPError):
                client.get(f"{url}/healthz")  # open the keep-alive connection before timing
            ready.wait()
            while time.perf_counter() < window["deadline"]:
                started = time.perf_counter()
                try:
                    reply = client.request(
                        method, f"{url}{path}", content=body or None, headers=headers
                    )
                except httpx.HTTPError as exc:
                    with lock:
                        failures[type(exc).__name__] += 1
                    continue
                with lock:
                    if reply.status_code >= 400:
                        failures[f"HTTP {reply.status_code}"] += 1
                    else:
                        latencies.append(time.perf_counter() - started)

    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(worker) for _ in range(16)]
    for future in futures:
        future.result()  # a fault in the load generator itself is raised, not swallowed
    if failures:
        detail = ", ".join(f"{count} x {kind}" for kind, count in failures.most_common())
        raise SystemExit(
            f"{path}: {sum(failures.values())} failed requests during the load ({detail})"
        )
    if not latencies:
        raise SystemExit(f"{path}: no request completed in {seconds} s")
    return len(latencies) / seconds, statistics.median(latencies) * 1000


def p50_single(url: str, bearer: str, payloads: list[str], rounds: int = 300) -> float:
    headers = {"Authorization": f"Bearer {bearer}"}
    times = []
    with httpx.Client(timeout=10) as client:
        for i in range(rounds):
            body = {"barcode": payloads[i % len(payloads)]}
            started = time.perf_counter()
            client.post(
                f"{url}/v1/verifications/payload", json=body, headers=headers
            ).raise_for_status()
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = wrk_rps if shutil.which("wrk") else python_rps
    if load is wrk_rps:
        print("load generator: wrk")
    else:
        print(
            "load generator: python threads in this process (wrk is not installed: "
            "`apt-get install wrk` gives figures closer to a real client's)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        small_proc, small_url, small_issuer, small_desk = start_server(Path(tmp) / "small")
        big_proc, big_url, big_issuer, big_desk = start_server(Path(tmp) / "big")
        try:
            itok, vtok = token(small_url, small_issuer), token(small_url, small_desk)
            key = small_issuer["encryption_key"]
            small = seed(small_url, itok, key, 1000, small_issuer["key_version"])

            body = json.dumps({"barcode": small[0]})
            ratios = []
            for _ in range(args.rounds):  # alternate so drifting load hits both the same way
                health_rps, _ = load(small_url, "/healthz", args.seconds)
                verify_rps, _ = load(
                    small_url, "/v1/verifications/payload", args.seconds, "POST", body, vtok
                )
                ratios.append((verify_rps / health_rps, verify_rps, health_rps))
            ratio, verify_rps, health_rps = sorted(ratios)[len(ratios) // 2]

            sealed = [sealed_record(key) for _ in range(1000)]
            records = {"records": [s.body for s in sealed]}
            batch_ratios = []
            client = httpx.Client(timeout=60)  # one connection, as a pay run would use
            headers = {"Authorization": f"Bearer {itok}", "Content-Type": "application/json"}
            for _ in range(args.rounds):
                started = time.perf_counter()
                for s in sealed:
                    schemas.validate_batch_record(s.body)
                validate_s = time.perf_counter() - started
                encoded = json.dumps(records).encode()  # the client's encoding is not timed
                started = time.perf_counter()
                reply = client.post(
                    f"{small_url}/v1/registerNonPIIBatch", content=encoded, headers=headers
                )
                reply.raise_for_status()
                batch_s = time.perf_counter() - started
                batch_ratios.append((batch_s / validate_s, batch_s, validate_s))
                sealed = [sealed_record(key) for _ in range(1000)]
                records = {"records": [s.body for s in sealed]}
            batch_ratio, batch_s, validate_s = sorted(batch_ratios)[len(batch_ratios) // 2]

            big_itok, big_vtok = token(big_url, big_issuer), token(big_url, big_desk)
            big_key, big_version = big_issuer["encryption_key"], big_issuer["key_version"]
            big = seed(big_url, big_itok, big_key, args.records, big_version)
            time.sleep(5)
            p50_small_live, p50_big_live = interleaved_p50(
                (small_url, vtok, small), (big_url, big_vtok, big)
            )
            # The same store reopened from disk, as a server holding 100k records usually is.
            big_proc.terminate()
            big_proc.wait(10)
            big_proc, big_url = serve(Path(tmp) / "big", 0, "--threads", "16")
            big_vtok = token(big_url, big_desk)
            p50_small, p50_big = interleaved_p50((small_url, vtok, small), (big_url, big_vtok, big))
        finally:
            for proc in (small_proc, big_proc):
                proc.terminate()
                proc.wait(10)
    print(
        f"verify {verify_rps:,.0f} req/s vs healthz {health_rps:,.0f} req/s (16 connections, "
        f"median of {args.rounds} alternating rounds): ratio {ratio:.2f} (target >= 0.8)"
    )
    print(
        f"verify p50 at {args.records:,} records {p50_big:.2f} ms vs at 1,000 {p50_small:.2f} "
        f"ms (two servers, interleaved; the big one reopened from disk): ratio "
        f"{p50_big / p50_small:.2f} (target <= 1.2)"
    )
    print(
        f"  the same right after registering them in the same process: {p50_big_live:.2f} vs "
        f"{p50_small_live:.2f} ms: ratio {p50_big_live / p50_small_live:.2f}"
    )
    print(
        f"1000-record batch over HTTP {batch_s * 1000:.0f} ms vs in-process validation "
        f"{validate_s * 1000:.0f} ms: ratio {batch_ratio:.2f} (target <= 3)"
    )


if __name__ == "__main__":
    main()
