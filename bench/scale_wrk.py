"""Load for the scale-out benchmark: a wrk run's requests/s and p99 (any failed request ends
the run), and the CPU time one request costs in the server's workers and in PostgreSQL (Linux).
Out of bench/scale_bench.py to keep it under the module size rule; also used by
bench/slow_client_worker_bench.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

import psycopg

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
