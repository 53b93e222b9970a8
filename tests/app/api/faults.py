"""The real service behind a fault-injecting WSGI middleware, for the ApiClient tests.

The service is the real Bottle app (`service.http.app.create_app` over a real TinyDB instance)
served by waitress on 127.0.0.1, so tokens, answers and error bodies are the service's own and
cannot drift from what the client expects. In front of it sits `FaultProxy`, a WSGI middleware
that plays the reverse proxy of PROTOCOL §9: it routes `/auth` and `/issuer` to the one app, and
the verifier API is the same server under the host name `localhost`, so the three audiences
differ. On command it answers the next N requests to a path itself: a 429/503 with Retry-After
rendered by the service's own error code, an HTML 502 from a "proxy", a dropped connection, an
answer that only comes after the deadline, a response lost after the service acted, or a stale
bearer token (the real service then answers the real 401).

The fixtures (`*_fixture`, registered under their short names) reach the tests through this
folder's conftest.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from waitress.server import create_server

from app.api import ApiClient
from service.composition.instance import load_master_key, make_config, open_store
from service.domain.clock import SystemClock
from service.domain.errors import ServiceError
from service.hosting.server import Running, bind, url_for
from service.http.app import create_app
from service.http.errors import error_headers, error_json
from service.protocol.errors import ErrorCode
from testbed.factories import Sealed, sealed_record
from tests.service.conftest import make_instance

VERIFY = "/v1/verifications/payload"
REGISTER = "/v1/registerNonPII"
BATCH = "/v1/registerNonPIIBatch"
BUILD = "/v1/registerAndBuildBarcode"
TOKEN = "/oauth/token"
PREFIXES = ("/auth", "/issuer")


# --------------------------------------------------------------------------- fault injector


@dataclass
class Fault:
    """What the proxy does with one request instead of (or around) passing it on.

    kind: "status" answers `status`/`body`/`headers` itself; "drop" closes the connection without
    an answer; "slow" waits `delay` seconds, then passes the request on; "lose" passes it on and
    drops the connection instead of returning the service's answer (the service acted, the
    client never hears); "stale" passes it on with a bearer token the service will refuse;
    "edit" passes it on and rewrites the JSON answer with `edit`.
    """

    kind: str
    status: int = 500
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@dataclass
class Seen:
    method: str
    prefix: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_uri: str


class DropConnection(Exception):
    """Raised from the answer's body after its headers went out: waitress closes the connection
    mid-answer, which the client sees as a dropped connection."""


def service_error(code: str, *, retry_after: int | None = None, **kw: Any) -> Fault:
    """An error answer rendered by the service's own error code (status, body and headers)."""
    wire = ErrorCode[code]
    error = ServiceError(wire, f"{code.lower()} (injected)", retry_after=retry_after, **kw)
    return Fault("status", wire.status, error_json(error), error_headers(error))


def raw(status: int, body: bytes, content_type: str) -> Fault:
    return Fault("status", status, body, {"Content-Type": content_type})


class FaultProxy:
    """WSGI middleware in front of the real app: prefix routing, recording and injected faults."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.seen: list[Seen] = []
        self.faults: dict[str, deque[Fault]] = {}
        self.issued: list[str] = []
        self.released = threading.Event()  # ends "slow" waits at teardown

    def inject(self, path: str, fault: Fault, times: int = 1) -> None:
        with self.lock:
            self.faults.setdefault(path, deque()).extend([fault] * times)

    def clear(self, path: str) -> None:
        with self.lock:
            self.faults.pop(path, None)

    def requests_to(self, path: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path == path]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        prefix = next((p for p in PREFIXES if path.startswith(p + "/")), "")
        path = path[len(prefix) :]
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
        environ["PATH_INFO"] = path
        raw_body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(raw_body)
        try:
            body: Any = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = raw_body
        headers = {
            k[5:].replace("_", "-").title(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        with self.lock:
            self.counts[path] += 1
            raw_uri = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "")
            self.seen.append(Seen(environ["REQUEST_METHOD"], prefix, path, headers, body, raw_uri))
            queue = self.faults.get(path)
            fault = queue.popleft() if queue else None
        if fault is None:
            return self._forward(environ, start_response, path)
        if fault.kind == "status":
            out = [("Content-Length", str(len(fault.body))), *fault.headers.items()]
            if "X-Request-Id" in headers:
                out.append(("X-Request-ID", headers["X-Request-Id"]))
            start_response(f"{fault.status} Injected", out)
            return [fault.body]
        if fault.kind == "drop":
            return self._drop(start_response)
        if fault.kind == "slow":
            self.released.wait(fault.delay)
            return self._forward(environ, start_response, path)
        if fault.kind == "lose":
            self._forward(environ, lambda *a: None, path)
            return self._drop(start_response)
        if fault.kind == "stale":
            token = environ.get("HTTP_AUTHORIZATION", "")
            environ["HTTP_AUTHORIZATION"] = token[:-4] + (
                "AAAA" if token[-4:] != "AAAA" else "BBBB"
            )
            return self._forward(environ, start_response, path)
        assert fault.kind == "edit" and fault.edit is not None
        return self._forward(environ, start_response, path, fault.edit)

    def _forward(
        self,
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        path: str,
        edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> list[bytes]:
        caught: list[Any] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            caught[:] = [status, headers]

        result = self.app(environ, capture)
        try:
            data = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = caught
        if path == TOKEN and status.startswith("200"):
            with self.lock:
                self.issued.append(json.loads(data)["access_token"])
        if edit is not None:
            data = json.dumps(edit(json.loads(data))).encode()
            headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
            headers.append(("Content-Length", str(len(data))))
        start_response(status, headers)
        return [data]

    @staticmethod
    def _drop(start_response: Callable[..., Any]) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "64")])

        def body() -> Iterator[bytes]:
            yield b'{"cut'
            raise DropConnection

        return body()


# --------------------------------------------------------------------------- the live service


@dataclass
class Live:
    running: Running
    proxy: FaultProxy
    admin: tuple[str, str]
    issuer: dict[str, Any]
    verifier: dict[str, Any]

    @property
    def base(self) -> str:
        return self.running.url

    @property
    def issuer_url(self) -> str:
        return self.base + "/issuer"

    @property
    def verifier_url(self) -> str:
        # Another host name for the same loopback server: scan URLs are built on this origin,
        # so it carries no path prefix.
        return self.base.replace("127.0.0.1", "localhost")

    @property
    def auth_url(self) -> str:
        return self.base + "/auth"

    def sealed(self, **kw: Any) -> Sealed:
        return sealed_record(self.issuer["encryption_key"], **kw)


def serve(data_dir: Path, **config_changes: Any) -> Live:
    created, issuer, verifier = make_instance(data_dir)
    sock = bind("127.0.0.1", 0)
    base = url_for(sock)
    verifier_url = base.replace("127.0.0.1", "localhost")
    config = make_config(
        load_master_key(data_dir), base, base + "/issuer", verifier_url, base + "/auth"
    )
    config = replace(config, **config_changes)
    store = open_store(data_dir)
    proxy = FaultProxy(create_app(config, store, SystemClock()))
    server = create_server(proxy, sockets=[sock], threads=12, ident="payslip-test")
    running = Running(base, config, store, server)
    running.thread = threading.Thread(target=server.run, name="fault-proxy", daemon=True)
    running.thread.start()
    admin = (created["admin_client_id"], created["admin_client_secret"])
    return Live(running, proxy, admin, issuer, verifier)


@contextlib.contextmanager
def serving(data_dir: Path, **config_changes: Any) -> Iterator[Live]:
    live = serve(data_dir, **config_changes)
    try:
        yield live
    finally:
        live.proxy.released.set()
        live.running.stop()


@pytest.fixture(name="live")
def live_fixture(tmp_path: Path) -> Iterator[Live]:
    with serving(tmp_path / "data") as running:
        yield running


class FakeTime:
    """A monotonic clock that only moves when the client sleeps (or a test advances it)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(name="fake_time")
def fake_time_fixture() -> FakeTime:
    return FakeTime()


Maker = Callable[..., ApiClient]


@pytest.fixture(name="make_client")
def make_client_fixture(live: Live, fake_time: FakeTime) -> Iterator[Maker]:
    """`make_client(role)` for role in issuer/verifier/admin: the URLs behind the proxy, the
    fake clock, and the credentials of that role (override with client_id/secret)."""
    made: list[ApiClient] = []

    def make(role: str = "verifier", **kw: Any) -> ApiClient:
        if role == "admin":
            client_id, secret = live.admin
        else:
            creds = live.issuer if role == "issuer" else live.verifier
            client_id, secret = creds["client_id"], creds["client_secret"]
        client_id = kw.pop("client_id", client_id)
        secret = kw.pop("secret", secret)
        kw.setdefault("issuer_url", live.issuer_url)
        kw.setdefault("verifier_url", live.verifier_url)
        kw.setdefault("sleep", fake_time.sleep)
        kw.setdefault("clock", fake_time.clock)
        kw.setdefault("timeout", 5.0)
        client = ApiClient(kw.pop("auth_url", live.auth_url), client_id, secret, **kw)
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()


@pytest.fixture(name="verifier")
def verifier_fixture(make_client: Maker) -> ApiClient:
    return make_client("verifier")


@pytest.fixture(name="issuer")
def issuer_fixture(make_client: Maker) -> ApiClient:
    return make_client("issuer")


@pytest.fixture(name="registered")
def registered_fixture(live: Live, issuer: ApiClient) -> Sealed:
    """A payslip registered with the real service (its barcode verifies)."""
    sealed = live.sealed()
    issuer.register_non_pii(sealed.body)
    return sealed


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def token_requests(live: Live) -> list[dict[str, Any]]:
    return [s.body for s in live.proxy.requests_to(TOKEN)]


def register_one(live: Live) -> str:
    """Register a fresh payslip with its own short-lived issuer client; returns its barcode."""
    sealed = live.sealed()
    with ApiClient(
        live.auth_url,
        live.issuer["client_id"],
        live.issuer["client_secret"],
        issuer_url=live.issuer_url,
    ) as issuer:
        issuer.register_non_pii(sealed.body)
    return sealed.payload
