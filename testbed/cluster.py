"""Real multi-process servers on a real PostgreSQL and Redis, for the scale-out tests and bench.

A throwaway database per use (dropped afterwards). Redis is shared, but every instance gets its
own clients (so its own per-client limit keys) and its own instance id (so its own batch leases).
Without a server the tests skip, except under CI=true, where a missing server fails them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    offline_config,
    open_store,
)
from testbed import web
from testbed.factories import Sealed, sealed_record
from testbed.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
ADMIN_DATABASE_URL = os.environ.get(
    "PAYSLIP_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("PAYSLIP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: a missing server is an error, not a skip)")
    pytest.skip(reason)


def require_redis(url: str = REDIS_URL) -> None:
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis not reachable at {url}: {type(exc).__name__}")
    finally:
        client.close()


@contextlib.contextmanager
def throwaway_database(prefix: str = "pv_scale") -> Iterator[str]:
    """The URL of a brand-new database, dropped (connections and all) afterwards."""
    try:
        admin = psycopg.connect(ADMIN_DATABASE_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        detail = " ".join(str(exc).split())  # libpq messages span lines
        unavailable(f"PostgreSQL not reachable at {redacted(ADMIN_DATABASE_URL)}: {detail}")
        raise  # unreachable: skip/fail raise
    name = f"{prefix}_{secrets.token_hex(6)}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield make_conninfo(ADMIN_DATABASE_URL, dbname=name)
        finally:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def redacted(url: str) -> str:
    """The URL as shown in skip/fail messages, without a password."""
    params = conninfo_to_dict(url)
    params.pop("password", None)
    return make_conninfo("", **params)


def run_cli(*args: str, env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "service", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@dataclass
class Instance:
    """One initialised instance: its data directory (master key), database and credentials."""

    data_dir: Path
    database_url: str
    env: dict[str, str]
    issuer: dict[str, str] = field(default_factory=dict)
    verifier: dict[str, str] = field(default_factory=dict)
    admin: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, data_dir: Path, database_url: str, **env: str) -> Instance:
        full_env = {
            **os.environ,
            "PAYSLIP_DATABASE_URL": database_url,
            "PAYSLIP_LOG_LEVEL": "WARNING",
            **env,
        }
        full_env.pop("PAYSLIP_MASTER_KEY", None)
        full_env.pop("PAYSLIP_DATA_DIR", None)
        instance = cls(data_dir, database_url, full_env)
        if os.environ.get("PAYSLIP_MASTER_KEY"):  # init would use it and write no master.key
            raise AssertionError("unset PAYSLIP_MASTER_KEY to run the cluster tests")
        # In this process, through the functions `init` and `admin create-*` call: three
        # `python -m service` processes cost about 2 s of CPU per instance, and the commands
        # themselves are tested in tests/service/cli. `cli()` still runs the real command.
        instance.admin = init_instance(data_dir, "postgres", database_url)
        store = open_store(data_dir, "postgres", database_url)
        try:
            admin = domain_for(store, offline_config(load_master_key(data_dir))).admin
            instance.issuer = admin.create_issuer("Scale Payroll").wire()
            instance.verifier = admin.create_verifier("Scale Desk").wire()
        finally:
            store.close()
        return instance

    def cli(self, *args: str) -> dict[str, str]:
        return run_cli("admin", "--data-dir", str(self.data_dir), *args, env=self.env)

    @property
    def admin_client(self) -> dict[str, str]:
        """The admin's credentials, as `token` takes a client's."""
        return {
            "client_id": self.admin["admin_client_id"],
            "client_secret": self.admin["admin_client_secret"],
        }


@contextlib.contextmanager
def new_instance(data_dir: Path) -> Iterator[Instance]:
    """An instance initialised in `data_dir` on a throwaway database; Redis is checked first, as
    the servers started on it need it."""
    require_redis()
    with throwaway_database() as url:
        yield Instance.create(data_dir, url)


@dataclass
class Server:
    """`python -m service serve` in its own process group; stopped with SIGTERM."""

    proc: subprocess.Popen[str]
    url: str
    stderr_path: Path

    @classmethod
    def start(
        cls,
        instance: Instance,
        workers: int = 2,
        *extra: str,
        env: dict[str, str] | None = None,
        log_dir: Path | None = None,
    ) -> Server:
        log_dir = log_dir or instance.data_dir
        stderr_path = log_dir / f"serve-{secrets.token_hex(3)}.log"
        args = [sys.executable, "-m", "service", "serve", "--data-dir", str(instance.data_dir)]
        args += ["--port", "0", "--workers", str(workers), "--redis-url", REDIS_URL, *extra]
        with stderr_path.open("w") as errors:
            proc = subprocess.Popen(
                args,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env={**instance.env, **(env or {})},
                cwd=ROOT,
                start_new_session=True,
            )
        assert proc.stdout is not None
        server = cls(proc, "", stderr_path)
        try:
            server.url = read_listening(proc, stderr_path)
            server.wait_ready()
        except BaseException:
            server.__exit__()  # a server that never came up is stopped and its pipe closed too
            raise
        return server

    def wait_ready(self, timeout: float = 30) -> None:
        def ready() -> bool:
            with contextlib.suppress(httpx.HTTPError):
                return web.get(f"{self.url}/readyz", timeout=2).status_code == 200
            return False

        try:
            wait_until(ready, "/readyz to answer 200", timeout)
        except AssertionError as late:
            raise AssertionError(f"server not ready: {self.log()[-2000:]}") from late

    def workers(self) -> list[int]:
        """Pids of the master's live worker processes."""
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError):
            return [int(pid) for pid in children.read_text().split()]
        return []

    def log(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def terminate(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            raise

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.terminate()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # nothing of this group may outlive a test
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def two_hosts(
    data_dir: Path, public_url: str, **env: str
) -> Iterator[tuple[Instance, Server, Server]]:
    """Two hosts: two `serve` processes of one new instance (2 workers each, different ports)
    behind one public URL, sharing one PostgreSQL and one Redis (under a key prefix of their
    own). `env`: more settings for both, e.g. a client rate limit; the per-IP limit is off."""
    env = {
        "PAYSLIP_RATE_LIMIT_IP": "off",
        "PAYSLIP_REDIS_PREFIX": f"test-{secrets.token_hex(4)}",
    } | env
    with (
        new_instance(data_dir) as instance,
        Server.start(instance, 2, "--public-url", public_url, env=env) as a,
        Server.start(instance, 2, "--public-url", public_url, env=env) as b,
    ):
        yield instance, a, b


def read_listening(proc: subprocess.Popen[str], stderr_path: Path, timeout: float = 60) -> str:
    found: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("listening on "):
                found.append(line.split()[-1])
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"server did not start: {stderr_path.read_text()[-3000:]}")
    return found[0]


def token(url: str, client: dict[str, str], audience: str | None = None) -> str:
    reply = web.post(
        f"{url}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "audience": audience or url,
        },
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return str(reply.json()["access_token"])


def registered(url: str, instance: Instance, audience: str | None = None, **seal: Any) -> Sealed:
    """A record sealed under the instance's issuer key (`seal`: more `sealed_record` keywords),
    registered through the server at `url` with a new issuer token (for `audience`: the public
    URL when the server has one)."""
    sealed = sealed_record(instance.issuer["encryption_key"], **seal)
    headers = auth(url, instance.issuer, audience)
    created = web.post(f"{url}/v1/registerNonPII", json=sealed.body, headers=headers)
    assert created.status_code == 201, created.text
    return sealed


def auth(url: str, client: dict[str, str], audience: str | None = None) -> dict[str, str]:
    """An Authorization header with a new token for `client`."""
    return {"Authorization": f"Bearer {token(url, client, audience=audience)}"}


def verify(url: str, headers: dict[str, str], barcode: str) -> httpx.Response:
    """A verification of `barcode` on a new connection (so any worker may answer)."""
    return web.post(
        f"{url}/v1/verifications/payload", json={"barcode": barcode}, headers=headers, timeout=10
    )
