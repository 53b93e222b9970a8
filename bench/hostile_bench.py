"""Hostile HTTP, measured (issue 15): what attackers cost a single-process server.

Against a `python -m service serve` subprocess on loopback, each phase runs the attack while a
normal client verifies a payslip in a loop, and reports the normal request's p50/p99 as a ratio
to the same client on a quiet server (measured in the same run), plus the server's peak RSS:

1. 200 clients trickling headers and 200 idle keep-alive connections (item 1);
2. 90 unauthenticated clients streaming 15 MiB chunked bodies at /oauth/token (item 2);
3. 4 concurrent batches with a million keys each, inside the 10 MiB batch limit (item 3).

Exits non-zero if a normal request failed or the server died. Every loop is bounded in count
and time; traffic goes to 127.0.0.1 only.
Usage: python bench/hostile_bench.py [--seconds 8]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import instance, serve, token  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def normal_latencies(url: str, bearer: str, payload: str, seconds: float) -> list[float]:
    """A normal verifier, one request after another; a failure ends the bench."""
    times: list[float] = []
    deadline = time.monotonic() + seconds
    with httpx.Client(timeout=30) as client:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            reply = client.post(
                f"{url}/v1/verifications/payload",
                json={"barcode": payload},
                headers={"Authorization": f"Bearer {bearer}"},
            )
            if reply.status_code != 200:
                raise SystemExit(f"a normal verification failed: {reply.status_code}")
            times.append(time.perf_counter() - started)
    return times


def p(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def trickle(url: str, stop: threading.Event) -> None:
    socks = []
    with contextlib.suppress(OSError):
        for _ in range(200):
            s = socket.create_connection(address(url), timeout=5)
            s.sendall(b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        for _ in range(200):
            s = socket.create_connection(address(url), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
    while not stop.wait(1.0):
        for s in socks[:200]:
            with contextlib.suppress(OSError):
                s.sendall(b"X")
    for s in socks:
        s.close()


def stream_bodies(url: str, stop: threading.Event) -> None:
    def one() -> None:
        with contextlib.suppress(OSError), socket.create_connection(address(url), timeout=5) as s:
            s.sendall(
                b"POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                b"\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
            for _ in range(240):  # 15 MiB
                if stop.is_set():
                    return
                s.sendall(chunk)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(90)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)


def million_keys(url: str, bearer: str, stop: threading.Event) -> None:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    keys = ",".join(
        '"' + "".join(alphabet[(i >> s) & 63] for s in (18, 12, 6, 0)) + '":0'
        for i in range(1_000_000)
    )
    raw = b'{"records": [{"x": {' + keys.encode() + b"}}]}"

    def one() -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                client.post(
                    f"{url}/v1/registerNonPIIBatch",
                    content=raw,
                    headers={
                        "Authorization": f"Bearer {bearer}",
                        "Content-Type": "application/json",
                    },
                )

    threads = [threading.Thread(target=one, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        issuer, verifier = instance(Path(tmp) / "d")
        proc, url = serve(Path(tmp) / "d")
        try:
            itok, vtok = token(url, issuer), token(url, verifier)
            sealed = sealed_record(str(issuer["encryption_key"]))
            httpx.post(
                f"{url}/v1/registerNonPII",
                json=sealed.body,
                headers={"Authorization": f"Bearer {itok}"},
                timeout=10,
            ).raise_for_status()
            quiet = normal_latencies(url, vtok, sealed.payload, args.seconds)
            base_rss = rss_mib(proc.pid)
            print(
                f"quiet: verify p50 {p(quiet, 0.5):.2f} ms, p99 {p(quiet, 0.99):.2f} ms, "
                f"server RSS {base_rss:.0f} MiB"
            )
            attacks: list[tuple[str, Callable[[threading.Event], None]]] = [
                ("200 trickling + 200 idle connections", lambda e: trickle(url, e)),
                ("90 x 15 MiB chunked bodies, no token", lambda e: stream_bodies(url, e)),
                ("4 x 1,000,000-key batches", lambda e: million_keys(url, itok, e)),
            ]
            for name, attack in attacks:
                stop = threading.Event()
                peak = [base_rss]

                def sample(stop: threading.Event = stop, peak: list[float] = peak) -> None:
                    while not stop.wait(0.1):
                        peak[0] = max(peak[0], rss_mib(proc.pid))

                workers = [
                    threading.Thread(target=attack, args=(stop,), daemon=True),
                    threading.Thread(target=sample, daemon=True),
                ]
                for w in workers:
                    w.start()
                time.sleep(1.0)
                under = normal_latencies(url, vtok, sealed.payload, args.seconds)
                stop.set()
                for w in workers:
                    w.join(timeout=60)
                if proc.poll() is not None:
                    raise SystemExit(f"the server died during: {name}")
                p50, p99 = p(under, 0.5), p(under, 0.99)
                print(
                    f"{name}: verify p50 {p50:.2f} ms ({p50 / p(quiet, 0.5):.1f}x quiet), "
                    f"p99 {p99:.2f} ms ({p99 / p(quiet, 0.99):.1f}x), {len(under)} requests, "
                    f"0 failed; server peak RSS {peak[0]:.0f} MiB ({peak[0] - base_rss:+.0f} MiB)"
                )
                time.sleep(2)
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(15)


if __name__ == "__main__":
    main()
