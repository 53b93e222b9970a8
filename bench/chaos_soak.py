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

Usage: python bench/chaos_soak.py [--minutes 10] [--store postgres|tinydb|both] [--clients 8]
(root, for the tmpfs and for running PostgreSQL as the postgres user.)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from service.protocol.vocabulary import BatchItemStatus  # noqa: E402
from testbed.cluster import read_listening, run_cli  # noqa: E402
from testbed.factories import sealed_record  # noqa: E402

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/usr/bin"))
ALLOWED_REFUSALS = {503, 429}
BATCH = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- private PostgreSQL and Redis -------------------------------------------------------------


class PrivatePostgres:
    """A throwaway cluster run as the postgres user in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "pg"
        self.dir.mkdir()
        os.chown(self.dir, *_postgres_ids())
        self.port = free_port()
        self._as_postgres(PG_BIN / "initdb", "-D", str(self.dir / "data"), "-A", "trust")
        self._as_postgres(
            PG_BIN / "pg_ctl",
            "-D",
            str(self.dir / "data"),
            "-w",
            "-l",
            str(self.dir / "log"),
            "-o",
            self._options(),
            "start",
        )
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _options(self) -> str:
        return f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=on"

    def _as_postgres(self, *args: str | Path) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *map(str, args)],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def restart(self) -> None:
        self._as_postgres(
            PG_BIN / "pg_ctl",
            "-D",
            str(self.dir / "data"),
            "-w",
            "-m",
            "fast",
            "-l",
            str(self.dir / "log"),
            "-o",
            self._options(),
            "restart",
        )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._as_postgres(
                PG_BIN / "pg_ctl", "-D", str(self.dir / "data"), "-w", "-m", "immediate", "stop"
            )


def _postgres_ids() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam("postgres")
    return entry.pw_uid, entry.pw_gid


class PrivateRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 1),
            ):
                return
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(20)
            self.proc = None


# --- the server under test --------------------------------------------------------------------


class Service:
    """`python -m service serve` on a fixed port, so a restart keeps the URL."""

    def __init__(self, data_dir: Path, env: dict[str, str], extra: list[str]) -> None:
        self.data_dir, self.env, self.extra = data_dir, env, extra
        self.port = free_port()
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.down = threading.Event()  # set while stopped on purpose (refusals expected)
        self.killed_at = 0.0  # a worker SIGKILLed: its connections in flight are reset
        self.started_in = 0.0
        self.start()

    def start(self) -> None:
        log = (self.data_dir.parent / "serve.log").open("a")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service",
                "serve",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
                *self.extra,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=self.env,
            cwd=ROOT,
            start_new_session=True,
        )
        began = time.monotonic()
        # A restart replays the journal: on a loaded machine and a full 64 MiB store that has
        # taken over a minute, so the restart is given three (and its time is printed).
        self.url = read_listening(self.proc, self.data_dir.parent / "serve.log", timeout=180)
        self.started_in = time.monotonic() - began
        self.down.clear()

    def sigterm_and_restart(self) -> None:
        assert self.proc is not None
        self.down.set()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        if code != 0:
            print(f"  server exited {code} on SIGTERM", flush=True)
        self.start()
        print(f"  listening again after {self.started_in:.1f} s", flush=True)

    def kill_a_worker(self) -> None:
        assert self.proc is not None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        pids = children.read_text().split()
        if pids:
            self.killed_at = time.monotonic()
            os.kill(int(random.choice(pids)), signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.down.set()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


# --- load ---------------------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statuses: collections.Counter[tuple[str, str]] = collections.Counter()
        self.unexpected: collections.Counter[str] = collections.Counter()
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.acknowledged: list[str] = []
        self.started = time.monotonic()
        self.fault = "none yet"  # the latest fault and when it began, for each error's line
        self.details: list[str] = []

    def note(
        self, op: str, outcome: str, seconds: float, unexpected: str | None, detail: str = ""
    ) -> None:
        with self.lock:
            self.statuses[(op, outcome)] += 1
            self.latency[op].append(seconds)
            if unexpected:
                self.unexpected[f"{op}: {unexpected}"] += 1
                # When it happened and what it said: the clue to its cause (a drain, a restart).
                at = time.monotonic() - self.started - seconds
                self.details.append(
                    f"sent at {at:6.1f} s, {seconds * 1000:.0f} ms, after {self.fault}:"
                    f" {op} {unexpected} {detail[:160]!r}"
                )


def _token(url: str, client: dict[str, str]) -> str:
    reply = httpx.post(
        f"{url}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "audience": url,
        },
        timeout=30,
    )
    reply.raise_for_status()
    return str(reply.json()["access_token"])


def client_loop(
    service: Service,
    instance: dict[str, Any],
    tally: Tally,
    stop: threading.Event,
    tokens: dict[str, str],
) -> None:
    key = instance["issuer"]["encryption_key"]
    rng = random.Random()
    with httpx.Client(timeout=60) as http:
        while not stop.is_set():
            pick = rng.random()
            if pick < 0.7 and tally.acknowledged:
                op = "verify"
                payload = rng.choice(tally.acknowledged)
                call: tuple[str, Any, str] = (
                    "/v1/verifications/payload",
                    {"barcode": payload},
                    tokens["verifier"],
                )
                made: list[Any] = []
            elif pick < 0.9:
                op = "register"
                made = [sealed_record(key)]
                call = ("/v1/registerNonPII", made[0].body, tokens["issuer"])
            else:
                op = "batch"
                made = [sealed_record(key) for _ in range(BATCH)]
                call = (
                    "/v1/registerNonPIIBatch",
                    {"records": [m.body for m in made]},
                    tokens["issuer"],
                )
            path, body, bearer = call
            started = time.monotonic()
            try:
                reply = http.post(
                    f"{service.url}{path}", json=body, headers={"Authorization": f"Bearer {bearer}"}
                )
            except httpx.ConnectError as exc:
                refused = "refused" in str(exc).lower() or isinstance(
                    exc.__cause__, ConnectionRefusedError
                )
                expected = refused and service.down.is_set()
                tally.note(
                    op,
                    "refused" if refused else "connect error",
                    0.0,
                    None if expected else type(exc).__name__,
                    repr(exc.__cause__ or exc),
                )
                time.sleep(0.2)
                continue
            except httpx.HTTPError as exc:
                # A worker SIGKILLed mid-request resets that request's connection: the fault
                # itself, not the service failing. Anything else is unexpected.
                by_kill = started - service.killed_at < 3.0
                outcome = "cut by the worker kill" if by_kill else type(exc).__name__
                tally.note(
                    op,
                    outcome,
                    time.monotonic() - started,
                    None if by_kill else type(exc).__name__,
                    repr(exc.__cause__ or exc),
                )
                continue
            seconds = time.monotonic() - started
            status = reply.status_code
            unexpected = None
            if status >= 300 and not (
                status in ALLOWED_REFUSALS and reply.headers.get("retry-after")
            ):
                unexpected = f"{status} {reply.text[:120]}"
            tally.note(op, str(status), seconds, unexpected)
            if status in ALLOWED_REFUSALS:
                time.sleep(min(float(reply.headers.get("retry-after", "1")), 1.0))
            if op == "register" and status == 201:
                with tally.lock:
                    tally.acknowledged.append(made[0].payload)
            elif op == "batch" and status == 200:
                results = reply.json()["results"]
                with tally.lock:
                    tally.acknowledged.extend(
                        m.payload
                        for m, r in zip(made, results, strict=True)
                        if r["status"] == BatchItemStatus.CREATED
                    )


# --- faults -------------------------------------------------------------------------------------


def slowloris(url: str, count: int, seconds: float) -> None:
    host, port = url.split("//")[1].split(":")
    socks = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n")
            sock.setblocking(False)
            socks.append(sock)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.send(b"a")
        time.sleep(1)
    cut = 0
    for sock in socks:
        try:
            cut += sock.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        sock.close()
    print(f"  slowloris: {len(socks)} connections, {cut} cut by the server", flush=True)


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    mount = Path(tempfile.mkdtemp(prefix="soak-disk-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


def fill_disk(directory: Path, seconds: float) -> None:
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass  # ENOSPC: full to the last block
    finally:
        os.close(fd)
    time.sleep(seconds)
    filler.unlink()
    print(f"  disk full for {seconds:.0f} s, then freed", flush=True)


# --- one run -----------------------------------------------------------------------------------


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
            r: _token(
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
    vtok = _token(
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
