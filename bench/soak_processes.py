"""The processes a chaos soak runs and disturbs (issue 22): a private PostgreSQL cluster, a
private redis-server and `python -m service serve`, each on its own port so that restarting them
disturbs nothing else on the machine. Out of bench/chaos_soak.py to keep it under the module size
rule; the faults that use them are in bench/soak_faults.py.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testbed.cluster import read_listening  # noqa: E402

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/usr/bin"))


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
