"""A throwaway service for the benchmarks, made and run the way an operator does: `instance`
initialises a data directory and creates an issuer and a verifier with the CLI, `serve` starts
`python -m service serve` on it with the rate limits off (a benchmark is not abuse), `token`
gets a bearer token, `interleaved_p50` times verify on several servers at once. One copy for
service_bench, stress_bench, hostile_bench and scale_bench.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testbed.oauth import fetch_token  # noqa: E402

PY = sys.executable
QUIET_LIMITS = {
    "PAYSLIP_RATE_LIMIT_IP": "off",
    "PAYSLIP_RATE_LIMIT_CLIENT": "off",
    "PAYSLIP_RATE_LIMIT_TOKEN_IP": "off",
}


def cli(*args: str) -> dict[str, Any]:
    """`python -m service <args>`, its JSON output; a failure ends the benchmark."""
    done = subprocess.run([PY, "-m", "service", *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"service {args[0]} failed: {done.stderr.strip()}")
    return dict(json.loads(done.stdout))


def instance(
    data_dir: Path, issuer_name: str = "Stress", verifier_name: str = "Desk"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new instance in `data_dir`: (issuer, verifier) as `create-issuer`/`create-verifier`
    print them (client_id, client_secret, encryption_key, key_version, ...)."""
    cli("init", "--data-dir", str(data_dir))
    issuer = cli("admin", "--data-dir", str(data_dir), "create-issuer", "--name", issuer_name)
    verifier = cli("admin", "--data-dir", str(data_dir), "create-verifier", "--name", verifier_name)
    return issuer, verifier


def serve(data_dir: Path, port: int = 0, *options: str) -> tuple[subprocess.Popen[str], str]:
    """`serve` on `data_dir` (`options`: more serve flags, e.g. `--threads 16`): the process
    and the URL it printed once listening."""
    proc = subprocess.Popen(
        [PY, "-m", "service", "serve", "--data-dir", str(data_dir), "--port", str(port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, **QUIET_LIMITS},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        raise SystemExit("the server did not start")
    return proc, line.strip().removeprefix("listening on ")


def token(url: str, creds: dict[str, Any]) -> str:
    """A bearer token for an issuer or verifier as `instance` returned it."""
    return fetch_token(url, creds["client_id"], creds["client_secret"])


def interleaved_p50(*servers: tuple[str, str, list[str]], rounds: int = 600) -> list[float]:
    """p50 in ms of verify on each (url, verifier bearer, barcodes) server, one request to each
    in turn, so all see the same machine noise and their ratio means something."""
    times: list[list[float]] = [[] for _ in servers]
    with httpx.Client(timeout=10) as client:
        for i in range(rounds):
            for n, (url, bearer, barcodes) in enumerate(servers):
                started = time.perf_counter()
                client.post(
                    f"{url}/v1/verifications/payload",
                    json={"barcode": barcodes[i % len(barcodes)]},
                    headers={"Authorization": f"Bearer {bearer}"},
                ).raise_for_status()
                times[n].append(time.perf_counter() - started)
    return [statistics.median(t) * 1000 for t in times]
