"""Longer fault and load runs behind issue 15's gate; each prints figures and exits non-zero on a
failure. Traffic goes to 127.0.0.1 only; every loop is bounded in count and time.

  python bench/stress_bench.py mixed [--seconds 60] [--clients 32]
      32 clients mixing single registrations, 50-record batches and verifications; afterwards
      every acknowledged record must verify. Prints p50/p99 per operation and any 5xx.
  python bench/stress_bench.py kill [--rounds 20]
      SIGKILL the server while a client streams batches; after each restart every acknowledged
      record must verify and every batch must be stored whole or not at all.
  python bench/stress_bench.py diskfull
      the data directory on a 32 MiB tmpfs (root only): fill it, check that verifications keep
      answering, registrations get 503 with Retry-After, /readyz is 503, and that all recovers
      once space is freed, without a restart.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.served import instance, serve, token  # noqa: E402
from service.protocol.vocabulary import BatchItemStatus  # noqa: E402
from testbed.factories import Sealed, sealed_record  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def verify_all(url: str, vtok: str, sealed: list[Sealed]) -> list[str]:
    """References of acknowledged records that do not verify (should be none)."""
    missing = []
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {vtok}"}) as client:
        for s in sealed:
            reply = client.post(f"{url}/v1/verifications/payload", json={"barcode": s.payload})
            if reply.status_code != 200:
                missing.append(s.reference)
    return missing


# --- mixed load -------------------------------------------------------------------------------


def mixed(seconds: float, clients: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        issuer, verifier = instance(Path(tmp) / "d")
        proc, url = serve(Path(tmp) / "d")
        try:
            itok, vtok = token(url, issuer), token(url, verifier)
            key = str(issuer["encryption_key"])
            acked: list[Sealed] = []
            times: dict[str, list[float]] = defaultdict(list)
            statuses: Counter[str] = Counter()
            lock = threading.Lock()
            deadline = time.monotonic() + seconds

            def worker(seed: int) -> None:
                rnd = random.Random(seed)
                with httpx.Client(timeout=60) as client:
                    while time.monotonic() < deadline:
                        op = rnd.choices(["single", "batch", "verify"], [3, 1, 6])[0]
                        with lock:
                            pool = list(acked[-500:])
                        if op == "verify" and not pool:
                            op = "single"
                        started = time.perf_counter()
                        if op == "single":
                            s = sealed_record(key)
                            r = client.post(
                                f"{url}/v1/registerNonPII",
                                json=s.body,
                                headers={"Authorization": f"Bearer {itok}"},
                            )
                            done = [s] if r.status_code == 201 else []
                        elif op == "batch":
                            batch = [sealed_record(key) for _ in range(50)]
                            r = client.post(
                                f"{url}/v1/registerNonPIIBatch",
                                json={"records": [s.body for s in batch]},
                                headers={"Authorization": f"Bearer {itok}"},
                            )
                            ok = r.status_code == 200
                            results = r.json()["results"] if ok else []
                            done = [
                                s
                                for s, res in zip(batch, results, strict=False)
                                if res.get("status") == BatchItemStatus.CREATED
                            ]
                        else:
                            s = rnd.choice(pool)
                            r = client.post(
                                f"{url}/v1/verifications/payload",
                                json={"barcode": s.payload},
                                headers={"Authorization": f"Bearer {vtok}"},
                            )
                            done = []
                        elapsed = time.perf_counter() - started
                        with lock:
                            times[op].append(elapsed)
                            statuses[f"{op} {r.status_code}"] += 1
                            acked.extend(done)

            threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            missing = verify_all(url, vtok, acked)
        finally:
            proc.terminate()
            proc.wait(30)
    errors = {k: v for k, v in statuses.items() if not k.endswith((" 200", " 201"))}
    for op, values in sorted(times.items()):
        print(
            f"{op}: {len(values)} requests, p50 {pct(values, 0.5):.1f} ms, "
            f"p99 {pct(values, 0.99):.1f} ms"
        )
    print(f"acknowledged records: {len(acked)}, not verifying afterwards: {len(missing)}")
    print(f"non-2xx answers: {dict(errors) or 'none'}")
    server_errors = sum(v for k, v in errors.items() if k.split()[1].startswith("5"))
    return 1 if missing or server_errors else 0


# --- SIGKILL during batch streams ------------------------------------------------------------


def kill(rounds: int) -> int:
    failures = 0
    total_acked = 0
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "d"
        issuer, verifier = instance(data_dir)
        key = str(issuer["encryption_key"])
        acked: list[Sealed] = []
        sent_batches: list[list[Sealed]] = []
        for round_no in range(rounds):
            proc, url = serve(data_dir)
            itok = token(url, issuer)
            stop = threading.Event()

            def stream(url: str = url, itok: str = itok, stop: threading.Event = stop) -> None:
                with httpx.Client(timeout=30) as client:
                    while not stop.is_set():
                        batch = [sealed_record(key) for _ in range(200)]
                        sent_batches.append(batch)
                        try:
                            r = client.post(
                                f"{url}/v1/registerNonPIIBatch",
                                json={"records": [s.body for s in batch]},
                                headers={"Authorization": f"Bearer {itok}"},
                            )
                        except httpx.HTTPError:
                            return
                        if r.status_code == 200:
                            acked.extend(batch)

            streamer = threading.Thread(target=stream)
            streamer.start()
            time.sleep(random.uniform(0.3, 1.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            stop.set()
            streamer.join(60)
            proc, url = serve(data_dir)
            try:
                vtok = token(url, verifier)
                missing = verify_all(url, vtok, acked)
                partial = 0
                for batch in sent_batches[-3:]:  # the ones in flight at the kill
                    stored = len(batch) - len(verify_all(url, vtok, batch))
                    partial += stored not in (0, len(batch))
            finally:
                proc.terminate()
                proc.wait(30)
            total_acked = len(acked)
            print(
                f"round {round_no + 1}: {total_acked} acknowledged, {len(missing)} lost, "
                f"{partial} partial batches"
            )
            failures += bool(missing) + partial
    print(f"SIGKILL x{rounds}: {total_acked} acknowledged records, failures: {failures}")
    return 1 if failures else 0


# --- disk full -------------------------------------------------------------------------------


def diskfull() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        mount = Path(tmp) / "disk"
        mount.mkdir()
        if (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], capture_output=True
            ).returncode
            != 0
        ):
            raise SystemExit("diskfull needs root (mount -t tmpfs)")
        try:
            return _diskfull(mount)
        finally:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def _diskfull(mount: Path) -> int:
    issuer, verifier = instance(mount / "d")
    proc, url = serve(mount / "d")
    try:
        itok, vtok = token(url, issuer), token(url, verifier)
        key = str(issuer["encryption_key"])
        acked: list[Sealed] = []
        with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {itok}"}) as client:
            for _ in range(200):
                s = sealed_record(key)
                if client.post(f"{url}/v1/registerNonPII", json=s.body).status_code == 201:
                    acked.append(s)
        filler = mount / "filler"
        with open(filler, "wb", buffering=0) as handle:
            for size in (1 << 20, 1 << 12, 512):
                with contextlib.suppress(OSError):
                    while True:
                        handle.write(b"\0" * size)
        ready_full = httpx.get(f"{url}/readyz", timeout=10).status_code
        started = time.perf_counter()
        missing = verify_all(url, vtok, acked)
        verify_s = time.perf_counter() - started
        refused = httpx.post(
            f"{url}/v1/registerNonPII",
            json=sealed_record(key).body,
            headers={"Authorization": f"Bearer {itok}"},
            timeout=30,
        )
        filler.unlink()
        ready_after = httpx.get(f"{url}/readyz", timeout=10).status_code
        late = sealed_record(key)
        created = httpx.post(
            f"{url}/v1/registerNonPII",
            json=late.body,
            headers={"Authorization": f"Bearer {itok}"},
            timeout=30,
        ).status_code
        missing += verify_all(url, vtok, [late])
    finally:
        proc.terminate()
        proc.wait(30)
    print(
        f"disk full: /readyz {ready_full}; {len(acked)} acknowledged records verified in "
        f"{verify_s:.2f} s with {len(missing)} failures; a registration got "
        f"{refused.status_code} (Retry-After {refused.headers.get('Retry-After')})"
    )
    print(f"space freed: /readyz {ready_after}, a registration got {created}")
    ok = (
        ready_full == 503
        and not missing
        and refused.status_code == 503
        and "Retry-After" in refused.headers
        and ready_after == 200
        and created == 201
    )
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("mixed")
    m.add_argument("--seconds", type=float, default=60)
    m.add_argument("--clients", type=int, default=32)
    k = sub.add_parser("kill")
    k.add_argument("--rounds", type=int, default=20)
    sub.add_parser("diskfull")
    args = parser.parse_args()
    if args.what == "mixed":
        sys.exit(mixed(args.seconds, args.clients))
    if args.what == "kill":
        sys.exit(kill(args.rounds))
    sys.exit(diskfull())


if __name__ == "__main__":
    main()
