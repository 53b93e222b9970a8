"""The servers the scale-out benchmark measures: gunicorn (the worker class before issue 22,
or the guarded one `serve --workers` runs now) or granian on the WSGI entry point, configured from
the environment as an operator would, started on a free port, stopped, and seeded with records.
Out of bench/scale_bench.py to keep it under the module size rule; also used by
bench/slow_client_worker_bench.py. `THREADS` (threads per worker) is set by scale_bench's
--threads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testbed.cluster import REDIS_URL, Instance  # noqa: E402
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
