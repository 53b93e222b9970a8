"""Issue 22: what reading whole requests in the worker's main loop costs `serve --workers`.

The worker class before (`service.hosting.workers.DrainingThreadWorker`, gunicorn gthread) and after
(`service.hosting.gunicorn_guard.GuardedThreadWorker`) run side by side on one PostgreSQL + Redis
instance, with 1 and with 2 workers each, and wrk's runs alternate between them round by round
(a shared machine's load changes within a minute: only interleaved runs compare). Printed per
worker count: verify and /healthz requests/s of both, after/before ratios (target: within 10 %),
and the issue-14 figures of both (verify/healthz, 2 workers vs 1), plus the CPU per request in
one worker (Linux), which other jobs on the machine barely change.

Usage: python bench/slow_client_worker_bench.py [--seconds 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale_servers import seed, start, stop  # noqa: E402
from bench.scale_wrk import cpu_per_request, wrk  # noqa: E402
from testbed.cluster import Instance, throwaway_database, token  # noqa: E402

KINDS = ("gunicorn", "guarded")  # scale_servers.start's names: before, after


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, throwaway_database("pv_bench") as url:
        instance = Instance.create(Path(tmp) / "d", url)
        figures: dict[tuple[str, int], tuple[float, float]] = {}
        for workers in (1, 2):
            procs = {k: start(k, workers, instance, Path(tmp) / f"m-{k}") for k in KINDS}
            try:
                urls = {k: p.url for k, p in procs.items()}  # type: ignore[attr-defined]
                vtok = {k: token(u, instance.verifier) for k, u in urls.items()}
                itok = token(urls["guarded"], instance.issuer)
                body = json.dumps({"barcode": seed(urls["guarded"], itok, instance, 1000)[0]})
                rounds: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
                for kind, u in urls.items():  # warm up
                    wrk(f"{u}/healthz", 1)
                    wrk(f"{u}/v1/verifications/payload", 1, "POST", body, vtok[kind])
                for number in range(args.rounds):
                    order = KINDS if number % 2 == 0 else KINDS[::-1]
                    for kind in order:
                        health, _ = wrk(f"{urls[kind]}/healthz", args.seconds)
                        verify, _ = wrk(
                            f"{urls[kind]}/v1/verifications/payload",
                            args.seconds,
                            "POST",
                            body,
                            vtok[kind],
                        )
                        rounds[kind].append((verify, health))
                if workers == 1:
                    for kind in KINDS:
                        costs = [
                            cpu_per_request(procs[kind], url, args.seconds, *call)[1]
                            for call in (
                                (f"{urls[kind]}/healthz",),
                                (
                                    f"{urls[kind]}/v1/verifications/payload",
                                    "POST",
                                    body,
                                    vtok[kind],
                                ),
                            )
                        ]
                        print(
                            f"{kind:8} 1 worker CPU per request: /healthz {costs[0]:.0f} us, "
                            f"verify {costs[1]:.0f} us",
                            flush=True,
                        )
            finally:
                for proc in procs.values():
                    stop(proc)
            for kind in KINDS:
                verify, health = (statistics.median(r[i] for r in rounds[kind]) for i in (0, 1))
                figures[(kind, workers)] = (verify, health)
                ratio = statistics.median(v / h for v, h in rounds[kind])
                print(
                    f"{kind:8} {workers} worker(s): verify {verify:7,.0f} req/s, healthz "
                    f"{health:7,.0f} req/s, verify/healthz {ratio:.2f}",
                    flush=True,
                )
            for i, what in ((0, "verify"), (1, "healthz")):
                paired = [
                    after[i] / before[i]
                    for before, after in zip(rounds["gunicorn"], rounds["guarded"], strict=True)
                ]
                print(
                    f"after/before, {workers} worker(s), {what}: "
                    f"{statistics.median(paired):.2f} (rounds "
                    f"{', '.join(f'{p:.2f}' for p in paired)}; target >= 0.90)",
                    flush=True,
                )
        for kind in KINDS:
            two_vs_one = figures[(kind, 2)][0] / figures[(kind, 1)][0]
            print(f"{kind:8} 2 workers vs 1 (verify): {two_vs_one:.2f}", flush=True)


if __name__ == "__main__":
    main()
