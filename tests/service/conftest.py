"""Service fixtures: a real instance on a real store, reached in-process or on loopback.

`live` comes in two stores (issue 14 item 7). Modules that only talk HTTP set
`LIVE_STORES = BOTH_STORES`, and each of their tests that takes `live` then runs twice:

- "tinydb": a TinyDB instance in a temporary directory, served in this process by waitress.
- "postgres-4-workers": `python -m service serve --workers 4` (gunicorn) on a throwaway
  PostgreSQL database and Redis, its instance made with the CLI (`init`, `create-issuer`,
  `create-verifier`) on a data directory that shares that database. Its rate limits are raised:
  a module-wide server counts every earlier test's requests against the next.

Starting a server costs, so a module of such tests shares one per store (issue 21): each test
gets its own fresh issuer and verifier, created through the store port on that same store, and
looks only at its own issuers' records (`LiveService.records_by_issuer`). Modules that do not
declare both stores share one TinyDB server the same way.

Requests go through `live.http`: on TinyDB an in-process WSGI client (no socket: HTTP behaviour
is the app's), on the PostgreSQL variant a client of the real server. `live.url` is the real
server's address, for what needs a socket (the app's API client, a subprocess, a browser).

Tests look at what was stored through helpers that work on both: `live.store` (the server's own
TinyDB store, or a PostgreSQL connection of the test process on the same database),
`live.records_by_issuer()`, `live.places_holding(needles)` (files of the data directory and, on
PostgreSQL, every row), `live.config` (to mint tokens as the server would) and `live.cli_env()`
(to run `python -m service admin --data-dir` against the same data). A test that needs an
in-process server of its own (`live.running` stopped, monkeypatched module constants, an empty
instance, the server's own options) carries `@pytest.mark.own_server` with its reason (in a
module of both stores, `@pytest.mark.tinydb_only`) and runs on TinyDB alone, on a server of its
own.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.composition.config import ServiceConfig
from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    make_config,
    offline_config,
    open_store,
)
from service.hosting.server import Running, start
from service.storage.port import Store
from testbed import web
from testbed.oauth import fetch_token

TINYDB = "tinydb"
POSTGRES_4_WORKERS = "postgres-4-workers"
BOTH_STORES = (TINYDB, POSTGRES_4_WORKERS)
"""Set `LIVE_STORES = BOTH_STORES` in a module to run its `live` tests on both stores."""

WORKERS = 4
MODULE_RATE_LIMITS = {
    "PAYSLIP_RATE_LIMIT_IP": "2000/second;200000/minute",
    "PAYSLIP_RATE_LIMIT_CLIENT": "2000/second;200000/minute",
    "PAYSLIP_RATE_LIMIT_TOKEN_IP": "2000/second;200000/minute",
}


@dataclass
class LiveService:
    running: Running | None
    """The in-process TinyDB server; None on the multi-worker PostgreSQL variant."""
    data_dir: Path
    admin_id: str
    admin_secret: str
    issuer: dict[str, Any]
    verifier: dict[str, Any]
    http: httpx.Client
    """In-process on TinyDB (the served WSGI app, no socket), the real server on PostgreSQL; the
    fixture closes it (no default client: one made here was never closed)."""
    backend: str = TINYDB
    base_url: str = ""
    shared_store: Store | None = None
    """The PostgreSQL variant's store handle (the test process's own connection)."""
    earlier_issuers: frozenset[str] = field(default_factory=frozenset)
    """Issuers of earlier tests on the same module-wide database, left out of counts."""
    earlier_verifiers: frozenset[str] = field(default_factory=frozenset)
    earlier_records: int = 0
    """Records stored by earlier tests on the same module-wide database."""
    database_url: str | None = None

    @property
    def url(self) -> str:
        if self.base_url:
            return self.base_url
        assert self.running is not None
        return self.running.url

    @property
    def store(self) -> Store:
        """A store on the data the server serves: to check what was (not) stored."""
        if self.shared_store is not None:
            return self.shared_store
        assert self.running is not None
        return self.running.store

    @property
    def config(self) -> ServiceConfig:
        """The server's configuration (URLs, environment, master key): to mint as it would."""
        if self.running is not None:
            return self.running.config
        return make_config(load_master_key(self.data_dir), self.url)

    def cli_env(self) -> dict[str, str]:
        """The environment for `python -m service admin --data-dir DATA_DIR` on this instance."""
        env = dict(os.environ)
        if self.database_url is not None:
            env["PAYSLIP_DATABASE_URL"] = self.database_url
        return env

    def records_by_issuer(self) -> dict[str, int]:
        """Stored records per issuer, for the issuers this test has (on a module-wide database
        earlier tests' issuers are there too)."""
        counts = self.store.counts().records_by_issuer
        return {k: v for k, v in counts.items() if k not in self.earlier_issuers}

    def places_holding(self, needles: list[bytes]) -> list[str]:
        """Where any of the needles is stored: the data directory's files (TinyDB's database,
        the master key, the PostgreSQL variant's server log) and, on PostgreSQL, every row of
        every table, as text."""
        found = [
            f"{path.name}: {needle[:12]!r}"
            for path in sorted(self.data_dir.rglob("*"))
            if path.is_file()
            for content in [path.read_bytes()]
            for needle in needles
            if needle in content
        ]
        if self.database_url is not None:
            found += _rows_holding(self.database_url, needles)
        return found

    def token(self, client_id: str, secret: str, scope: str | None = None) -> str:
        extra = {"scope": scope} if scope else {}
        return fetch_token(self.url, client_id, secret, http=self.http, timeout=10, **extra)

    def issuer_token(self) -> str:
        return self.token(self.issuer["client_id"], self.issuer["client_secret"])

    def verifier_token(self) -> str:
        return self.token(self.verifier["client_id"], self.verifier["client_secret"])

    def admin_token(self) -> str:
        return self.token(self.admin_id, self.admin_secret)

    def post(self, path: str, body: Any, token: str | None, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return self.http.post(f"{self.url}{path}", json=body, headers=headers, timeout=30, **kwargs)

    def verify(self, barcode: str, token: str | None = None) -> httpx.Response:
        return self.post(
            "/v1/verifications/payload", {"barcode": barcode}, token or self.verifier_token()
        )


def _rows_holding(database_url: str, needles: list[bytes]) -> list[str]:
    import psycopg
    from psycopg import sql

    found = []
    with psycopg.connect(database_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        ).fetchall()
        for (table,) in tables:
            query = sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))
            for (row,) in conn.execute(query):
                data = row.encode()
                found += [f"{table}: {n[:12]!r}" for n in needles if n in data]
    return found


def make_instance(data_dir: Path) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    created = init_instance(data_dir)
    store = open_store(data_dir)
    try:
        admin = domain_for(store, offline_config(load_master_key(data_dir))).admin
        issuer = admin.create_issuer("Test Payroll").wire()
        verifier = admin.create_verifier("Test Desk").wire()
    finally:
        store.close()
    return created, issuer, verifier


def start_live(data_dir: Path, **options: Any) -> LiveService:
    """A new instance in `data_dir` (admin, issuer, verifier) served in-process on TinyDB with
    `service.hosting.server.start(**options)`; the caller stops it with `live.running.stop()`."""
    created, issuer, verifier = make_instance(data_dir)
    running = start(data_dir, **options)
    return LiveService(
        running,
        data_dir,
        created["admin_client_id"],
        created["admin_client_secret"],
        issuer,
        verifier,
        http=in_process_client(running),
    )


def in_process_client(running: Running) -> httpx.Client:
    """A client of the served WSGI app itself, in this process: the app's answers without a
    socket (the waitress guard's early refusals are the hosting tests' subject)."""
    transport = httpx.WSGITransport(app=running.server.application)
    return web.client(transport=transport, base_url=running.url, timeout=30)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "tinydb_only: runs on the in-process TinyDB `live` server only (the reason is beside it)",
    )
    config.addinivalue_line(
        "markers",
        "own_server: `live` is a fresh TinyDB instance on a server of its own (the reason is "
        "beside it), not the module's shared one",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "live" not in metafunc.fixturenames:
        return
    stores = getattr(metafunc.module, "LIVE_STORES", (TINYDB,))
    if metafunc.definition.get_closest_marker("tinydb_only"):
        stores = (TINYDB,)
    if tuple(stores) != (TINYDB,):
        metafunc.parametrize("live", stores, indirect=True)


@dataclass
class SharedServer:
    """One server for a test module: `serve --workers 4` on PostgreSQL + Redis, or an
    in-process TinyDB one (`running`)."""

    url: str
    data_dir: Path
    admin: dict[str, str]
    store: Store
    database_url: str | None
    running: Running | None = None


@pytest.fixture(scope="module")
def tinydb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    data_dir = tmp_path_factory.mktemp("tinydb-live") / "data"
    created = init_instance(data_dir)
    running = start(data_dir)
    try:
        yield SharedServer(running.url, data_dir, created, running.store, None, running)
    finally:
        running.stop()


@pytest.fixture(scope="module")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    from testbed.cluster import Instance, Server, require_redis, throwaway_database

    require_redis()
    with throwaway_database() as database_url:
        data_dir = tmp_path_factory.mktemp("pg-live") / "data"
        instance = Instance.create(data_dir, database_url)
        env = {**MODULE_RATE_LIMITS, "PAYSLIP_REDIS_PREFIX": f"pvtest-{secrets.token_hex(4)}"}
        store = open_store(data_dir, "postgres", database_url)
        try:
            with Server.start(instance, WORKERS, env=env) as server:
                _wait_for_workers(server, WORKERS)
                yield SharedServer(server.url, data_dir, instance.admin, store, database_url)
        finally:
            store.close()
            _drop_redis_keys(env["PAYSLIP_REDIS_PREFIX"])


def _drop_redis_keys(prefix: str) -> None:
    import redis

    from testbed.cluster import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        for key in client.scan_iter(match=f"{prefix}:*"):
            client.delete(key)
    finally:
        client.close()


def _wait_for_workers(server: Any, count: int, timeout: float = 30) -> None:
    """The variant's name promises 4 workers: make sure the master runs that many."""
    from testbed.waiting import wait_until

    try:
        wait_until(lambda: len(server.workers()) == count, f"{count} workers", timeout)
    except AssertionError as late:
        raise AssertionError(f"workers {server.workers()}: {server.log()[-2000:]}") from late


def _shared_live(shared: SharedServer) -> LiveService:
    earlier = frozenset(i.issuer_id for i in shared.store.list_issuers())
    earlier_verifiers = frozenset(v.verifier_id for v in shared.store.list_verifiers())
    earlier_records = sum(shared.store.counts().records_by_issuer.values())
    admin = domain_for(shared.store, offline_config(load_master_key(shared.data_dir))).admin
    issuer = admin.create_issuer("Test Payroll").wire()
    verifier = admin.create_verifier("Test Desk").wire()
    return LiveService(
        None,
        shared.data_dir,
        shared.admin["admin_client_id"],
        shared.admin["admin_client_secret"],
        issuer,
        verifier,
        backend=TINYDB if shared.running is not None else POSTGRES_4_WORKERS,
        base_url=shared.url,
        shared_store=shared.store,
        earlier_issuers=earlier,
        earlier_verifiers=earlier_verifiers,
        earlier_records=earlier_records,
        database_url=shared.database_url,
        http=(
            in_process_client(shared.running)
            if shared.running is not None
            else web.client(base_url=shared.url, timeout=30)
        ),
    )


@pytest.fixture
def live(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LiveService]:
    backend = getattr(request, "param", TINYDB)
    own = any(request.node.get_closest_marker(name) for name in ("own_server", "tinydb_only"))
    if backend == POSTGRES_4_WORKERS:
        server = request.getfixturevalue("postgres_server")
    elif not own:
        server = request.getfixturevalue("tinydb_server")
    else:
        live = start_live(tmp_path / "data")
        try:
            yield live
        finally:
            live.http.close()
            assert live.running is not None
            live.running.stop()
        return
    live = _shared_live(server)
    try:
        yield live
    finally:
        live.http.close()
