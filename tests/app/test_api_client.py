"""ApiClient against a real HTTP server on 127.0.0.1 that injects faults on command.

The server is a stdlib `ThreadingHTTPServer` so the client's real httpx stack (connection pool,
timeouts, dropped sockets) is exercised, not a mock transport. It serves three role prefixes
(`/auth`, `/issuer`, `/verifier`) so audiences differ, issues opaque JWT-looking tokens, refuses
unknown tokens, counts requests per path and can be scripted to answer the next N requests on a
path with an error status, a dropped connection or a slow response.

Time is a fake clock whose `sleep` advances it, so backoff and Retry-After are asserted exactly
without the suite actually waiting; only timeout tests use real time.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import pickle
import socket
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from app.api_client import (
    ApiClient,
    ApiError,
    Conflict,
    DecryptionFailed,
    EndpointNotFound,
    Forbidden,
    InternalError,
    InvalidResponse,
    IvReused,
    KeyVersionUnavailable,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    ServiceUnreachable,
    Unauthorized,
    UnsupportedMediaType,
    ValidationFailed,
)

CLIENT_ID = "client-abc"
CLIENT_SECRET = "s3cret-VALUE-never-logged-0123456789"
BARCODE = "PV1.BARCODE-TEXT-PERSONAL-abcdefghijklmnopqrstuvwxyz"
ENCRYPTED_PII = "CIPHERTEXT-PERSONAL-zyxwvutsrqponmlkjihgfedcba"

VERIFY = "/v1/verifications/payload"
REGISTER = "/v1/registerNonPII"
BATCH = "/v1/registerNonPIIBatch"
BUILD = "/v1/registerAndBuildBarcode"
TOKEN = "/oauth/token"
PREFIXES = ("/auth", "/issuer", "/verifier")


# --------------------------------------------------------------------------- fault server


@dataclass
class Fault:
    kind: str  # "status" | "drop" | "slow"
    status: int = 500
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    prefix: str
    path: str
    headers: Any  # the request's case-insensitive email.message.Message
    body: Any


def error_body(code: str, **extra: Any) -> bytes:
    return json.dumps({"error": f"{code} text", "code": code, **extra}).encode()


class FaultServer:
    """Scriptable fake of the service: tokens, the API routes, and injected failures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.seen: list[Seen] = []
        self.faults: dict[str, deque[Fault]] = {}
        self.issued: list[str] = []
        self.expires_in: Any = 900
        self.token_delay = 0.0
        self.registered: dict[str, Any] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.handle(self)

            def do_POST(self) -> None:
                owner.handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # broken pipes after client timeouts are expected here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # scripting -----------------------------------------------------------------------

    def inject(self, path: str, fault: Fault, times: int = 1) -> None:
        with self.lock:
            self.faults.setdefault(path, deque()).extend([fault] * times)

    def fail(
        self,
        path: str,
        status: int,
        code: str | None = None,
        *,
        times: int = 1,
        retry_after: int | None = None,
        **extra: Any,
    ) -> None:
        body = error_body(code or "INTERNAL_ERROR", **extra)
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        self.inject(path, Fault("status", status, body, headers=headers), times)

    def requests_to(self, path: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path == path]

    # handling ------------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        prefix, path = "", h.path.split("?")[0]
        for p in PREFIXES:
            if path.startswith(p + "/"):
                prefix, path = p, path[len(p) :]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        with self.lock:
            self.counts[path] += 1
            self.seen.append(Seen(h.command, prefix, path, h.headers, body))
            queue = self.faults.get(path)
            fault = queue.popleft() if queue else None
        rid = h.headers.get("X-Request-ID") or "server-made"
        if fault is not None:
            if fault.kind == "drop":
                h.close_connection = True
                return
            if fault.kind == "slow":
                time.sleep(fault.delay)
                self.reply(h, 200, {"late": True}, rid)
                return
            self.reply(h, fault.status, fault.body, rid, fault.content_type, fault.headers)
            return
        if path == TOKEN:
            self.token(h, body, rid)
            return
        if path == "/healthz":
            self.reply(h, 200, {"status": "ok"}, rid)
            return
        auth = h.headers.get("Authorization", "")
        with self.lock:
            known = auth.startswith("Bearer ") and auth[7:] in self.issued
        if not known:
            self.reply(
                h, 401, error_body("UNAUTHORIZED"), rid, headers={"WWW-Authenticate": "Bearer"}
            )
            return
        self.route(h, path, body, rid)

    def token(self, h: BaseHTTPRequestHandler, body: Any, rid: str) -> None:
        if self.token_delay:
            time.sleep(self.token_delay)
        with self.lock:
            n = len(self.issued) + 1
            claims = base64.urlsafe_b64encode(json.dumps({"n": n}).encode()).rstrip(b"=").decode()
            tok = f"eyJhbGciOiJFZERTQSJ9.{claims}.sig{n:04d}"
            self.issued.append(tok)
        self.reply(
            h,
            200,
            {
                "access_token": tok,
                "token_type": "Bearer",
                "expires_in": self.expires_in,
                "scope": body.get("scope") if isinstance(body, dict) else None,
            },
            rid,
        )

    def route(self, h: BaseHTTPRequestHandler, path: str, body: Any, rid: str) -> None:
        if path == VERIFY:
            self.reply(h, 200, {"verified": True, "service_reference": "R" * 22}, rid)
        elif path == REGISTER:
            ref = body["service_reference"]
            with self.lock:
                created = ref not in self.registered
                self.registered.setdefault(ref, body)
            self.reply(h, 201 if created else 200, {"service_reference": ref}, rid)
        elif path == BATCH:
            results = [
                {
                    "status": "created",
                    "service_reference": r["service_reference"],
                    "external_id": r.get("external_id"),
                }
                for r in body["records"]
            ]
            self.reply(h, 200, {"results": results}, rid)
        elif path == BUILD:
            barcode = {"format": "png", "data": "iVBORw0KGgo"}
            self.reply(h, 201, {"service_reference": "B" * 22, "barcode": barcode}, rid)
        elif path.startswith("/v1/records/") and path.endswith("/revoke"):
            ref = path.split("/")[3]
            self.reply(h, 200, {"service_reference": ref, "status": "revoked"}, rid)
        elif path.startswith("/admin/v1/"):
            self.reply(h, 200, {"method": h.command, "path": path, "body": body}, rid)
        else:
            self.reply(h, 404, error_body("NOT_FOUND"), rid)

    @staticmethod
    def reply(
        h: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        rid: str,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", content_type)
            h.send_header("Content-Length", str(len(data)))
            h.send_header("X-Request-ID", rid)
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout test)


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


@pytest.fixture
def server() -> Iterator[FaultServer]:
    srv = FaultServer()
    yield srv
    srv.close()


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def make_client(server: FaultServer, fake_time: FakeTime) -> Iterator[Callable[..., ApiClient]]:
    made: list[ApiClient] = []

    def make(**kw: Any) -> ApiClient:
        kw.setdefault("issuer_url", server.base + "/issuer")
        kw.setdefault("verifier_url", server.base + "/verifier")
        kw.setdefault("sleep", fake_time.sleep)
        kw.setdefault("clock", fake_time.clock)
        kw.setdefault("timeout", 5.0)
        auth_url = kw.pop("auth_url", server.base + "/auth")
        client = ApiClient(auth_url, CLIENT_ID, CLIENT_SECRET, **kw)
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()


@pytest.fixture
def client(make_client: Callable[..., ApiClient]) -> ApiClient:
    return make_client()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def record(**extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "schema": "au.payslip.v1",
        "issued_at": "2025-01-31T00:00:00Z",
        "payslip_non_pii": {"gross_cents": 100},
        "encryption_metadata": {"iv": "A" * 16, "tag": "B" * 22},
    }
    rec.update(extra)
    return rec


# --------------------------------------------------------------------------- tokens


def test_token_request_shape_and_reuse_across_calls(server: FaultServer, client: ApiClient) -> None:
    for _ in range(3):
        assert client.verify_payload(BARCODE)["verified"] is True
    assert server.counts[TOKEN] == 1
    assert server.counts[VERIFY] == 3
    tok = server.requests_to(TOKEN)[0]
    assert tok.prefix == "/auth"
    assert tok.headers["Content-Type"] == "application/json"
    assert tok.body == {
        "grant_type": "client_credentials",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "audience": server.base + "/verifier",
        "scope": "service:verifier",
    }
    for seen in server.requests_to(VERIFY):
        assert seen.prefix == "/verifier"
        assert seen.headers["Authorization"] == f"Bearer {server.issued[0]}"
        assert seen.headers["Content-Type"] == "application/json"
        assert seen.body == {"barcode": BARCODE}


def test_token_cached_per_audience_and_scope(server: FaultServer, client: ApiClient) -> None:
    client.verify_payload(BARCODE)
    client.register_non_pii(record())
    client.admin_list()
    client.verify_payload(BARCODE)
    client.register_non_pii(record())
    client.admin_list()
    pairs = [(s.body["audience"], s.body["scope"]) for s in server.requests_to(TOKEN)]
    assert pairs == [
        (server.base + "/verifier", "service:verifier"),
        (server.base + "/issuer", "service:issuer"),
        (server.base + "/issuer", "service:admin"),
    ]


def test_scope_override_is_sent(server: FaultServer, make_client: Callable[..., ApiClient]) -> None:
    make_client(scope="service:custom").verify_payload(BARCODE)
    assert server.requests_to(TOKEN)[0].body["scope"] == "service:custom"


@pytest.mark.parametrize(("expires_in", "early"), [(900, 60.0), (60, 30.0)])
def test_token_refreshed_near_expiry(
    server: FaultServer, client: ApiClient, fake_time: FakeTime, expires_in: int, early: float
) -> None:
    server.expires_in = expires_in
    client.verify_payload(BARCODE)
    fake_time.now += expires_in - early - 1
    client.verify_payload(BARCODE)
    assert server.counts[TOKEN] == 1
    fake_time.now += 1
    client.verify_payload(BARCODE)
    assert server.counts[TOKEN] == 2
    used = [s.headers["Authorization"] for s in server.requests_to(VERIFY)]
    assert used == [f"Bearer {server.issued[0]}"] * 2 + [f"Bearer {server.issued[1]}"]


def test_missing_expires_in_still_works(server: FaultServer, client: ApiClient) -> None:
    server.expires_in = None
    client.verify_payload(BARCODE)
    client.verify_payload(BARCODE)
    assert server.counts[TOKEN] == 1


def test_single_flight_token_with_eight_threads(server: FaultServer, client: ApiClient) -> None:
    server.token_delay = 0.3
    barrier = threading.Barrier(8)
    results: list[Any] = []
    errors: list[BaseException] = []

    def work() -> None:
        barrier.wait()
        try:
            results.append(client.verify_payload(BARCODE))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == []
    assert len(results) == 8
    assert server.counts[TOKEN] == 1
    assert server.counts[VERIFY] == 8


def test_401_fetches_one_new_token_and_retries_once(
    server: FaultServer, client: ApiClient, fake_time: FakeTime
) -> None:
    client.verify_payload(BARCODE)
    server.fail(VERIFY, 401, "UNAUTHORIZED")
    assert client.verify_payload(BARCODE)["verified"] is True
    assert server.counts[TOKEN] == 2
    assert server.counts[VERIFY] == 3
    second, third = server.requests_to(VERIFY)[1:]
    assert second.headers["Authorization"] == f"Bearer {server.issued[0]}"
    assert third.headers["Authorization"] == f"Bearer {server.issued[1]}"
    assert second.headers["X-Request-ID"] == third.headers["X-Request-ID"]
    assert fake_time.sleeps == []


def test_second_401_raises_unauthorized(server: FaultServer, client: ApiClient) -> None:
    server.fail(VERIFY, 401, "UNAUTHORIZED", times=2)
    with pytest.raises(Unauthorized) as info:
        client.verify_payload(BARCODE)
    assert info.value.status == 401
    assert server.counts[VERIFY] == 2
    assert server.counts[TOKEN] == 2


def test_token_endpoint_rejection_is_typed(server: FaultServer, client: ApiClient) -> None:
    server.fail(TOKEN, 401, "UNAUTHORIZED")
    with pytest.raises(Unauthorized):
        client.verify_payload(BARCODE)
    server.fail(TOKEN, 403, "FORBIDDEN")
    with pytest.raises(Forbidden):
        client.verify_payload(BARCODE)
    assert server.counts[TOKEN] == 2
    assert server.counts[VERIFY] == 0


def test_token_endpoint_503_is_retried(
    server: FaultServer, client: ApiClient, fake_time: FakeTime
) -> None:
    server.fail(TOKEN, 503, "SERVICE_UNAVAILABLE", retry_after=2)
    client.verify_payload(BARCODE)
    assert server.counts[TOKEN] == 2
    assert fake_time.sleeps and fake_time.sleeps[0] >= 2


# --------------------------------------------------------------------------- retries


def test_429_honours_retry_after_then_succeeds(
    server: FaultServer, client: ApiClient, fake_time: FakeTime
) -> None:
    server.fail(VERIFY, 429, "RATE_LIMITED", retry_after=1)
    assert client.verify_payload(BARCODE)["verified"] is True
    assert server.counts[VERIFY] == 2
    assert len(fake_time.sleeps) == 1
    assert fake_time.sleeps[0] >= 1


def test_503_twice_then_200_makes_three_requests_with_jittered_backoff(
    server: FaultServer, client: ApiClient, fake_time: FakeTime
) -> None:
    server.fail(VERIFY, 503, "SERVICE_UNAVAILABLE", times=2)
    assert client.verify_payload(BARCODE)["verified"] is True
    assert server.counts[VERIFY] == 3
    assert len(fake_time.sleeps) == 2
    assert 0 <= fake_time.sleeps[0] <= 0.25
    assert 0 <= fake_time.sleeps[1] <= 0.5
    ids = {s.headers["X-Request-ID"] for s in server.requests_to(VERIFY)}
    assert len(ids) == 1


def test_backoff_is_capped(
    server: FaultServer, make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    client = make_client(deadline=1000.0)
    server.fail(VERIFY, 500, times=10)
    client.verify_payload(BARCODE)
    assert server.counts[VERIFY] == 11
    assert len(fake_time.sleeps) == 10
    assert all(0 <= s <= 8.0 for s in fake_time.sleeps)


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", 500, error_body("INTERNAL_ERROR")),
        Fault("status", 502, b"<html>bad gateway</html>", "text/html"),
        Fault("status", 504, b"gateway timeout", "text/plain"),
        Fault("status", 408, b""),
        Fault("drop"),
    ],
    ids=["500", "502-html", "504-text", "408", "dropped"],
)
def test_idempotent_call_retries_transient_failures(
    server: FaultServer, client: ApiClient, fault: Fault
) -> None:
    server.inject(VERIFY, fault)
    assert client.verify_payload(BARCODE)["verified"] is True
    assert server.counts[VERIFY] == 2
    ids = {s.headers["X-Request-ID"] for s in server.requests_to(VERIFY)}
    assert len(ids) == 1


def test_slow_response_times_out_and_is_retried(
    server: FaultServer, make_client: Callable[..., ApiClient]
) -> None:
    client = make_client(timeout=0.3)
    server.inject(VERIFY, Fault("slow", delay=1.5))
    t0 = time.monotonic()
    assert client.verify_payload(BARCODE) == {"verified": True, "service_reference": "R" * 22}
    assert time.monotonic() - t0 < 1.4
    assert server.counts[VERIFY] == 2


def test_request_ids_fresh_per_call(server: FaultServer, client: ApiClient) -> None:
    client.verify_payload(BARCODE)
    client.verify_payload(BARCODE)
    a, b = (s.headers["X-Request-ID"] for s in server.requests_to(VERIFY))
    assert a != b


# ------------------------------------------------------------------------ registerAndBuildBarcode


@pytest.mark.parametrize(
    ("fault", "exc"),
    [
        (
            Fault("status", 503, error_body("SERVICE_UNAVAILABLE"), headers={"Retry-After": "1"}),
            ServiceUnavailable,
        ),
        (Fault("status", 500, error_body("INTERNAL_ERROR")), InternalError),
        (Fault("status", 502, b"<html/>", "text/html"), ServiceUnavailable),
        (Fault("drop"), ServiceUnreachable),
    ],
    ids=["503", "500", "502-html", "dropped"],
)
def test_build_barcode_not_retried_when_request_may_have_been_processed(
    server: FaultServer, client: ApiClient, fake_time: FakeTime, fault: Fault, exc: type[ApiError]
) -> None:
    server.inject(BUILD, fault)
    with pytest.raises(exc):
        client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert server.counts[BUILD] == 1
    assert fake_time.sleeps == []


def test_build_barcode_slow_response_not_retried(
    server: FaultServer, make_client: Callable[..., ApiClient]
) -> None:
    client = make_client(timeout=0.3)
    server.inject(BUILD, Fault("slow", delay=1.5))
    with pytest.raises(ServiceUnreachable):
        client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert server.counts[BUILD] == 1


def test_build_barcode_retried_on_429(
    server: FaultServer, client: ApiClient, fake_time: FakeTime
) -> None:
    server.fail(BUILD, 429, "RATE_LIMITED", retry_after=1)
    result = client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert result["barcode"]["format"] == "png"
    assert server.counts[BUILD] == 2
    assert fake_time.sleeps[0] >= 1
    first, second = server.requests_to(BUILD)
    assert first.body == second.body
    assert "service_reference" not in first.body
    assert first.headers["X-Request-ID"] == second.headers["X-Request-ID"]


class ConnectFailsFirst(httpx.BaseTransport):
    """Real transport, except the first `n` requests to `path` fail to connect."""

    def __init__(self, path: str, n: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.path = path
        self.left = n

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(self.path) and self.left > 0:
            self.left -= 1
            raise httpx.ConnectError("connection refused", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_build_barcode_retried_on_connect_error_before_send(
    server: FaultServer, make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    client = make_client(transport=ConnectFailsFirst(BUILD, 2))
    client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert server.counts[BUILD] == 1
    assert len(fake_time.sleeps) == 2


def test_build_barcode_connection_refused_until_deadline(
    server: FaultServer, make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    # Real refused connections: tokens come from the live server, the issuer URL is a dead port.
    client = make_client(issuer_url=f"http://127.0.0.1:{closed_port()}", deadline=3.0)
    start = fake_time.now
    with pytest.raises(ServiceUnreachable) as info:
        client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert info.value.status is None
    assert len(fake_time.sleeps) >= 2
    assert fake_time.now - start < 3.0


# --------------------------------------------------------------------------- deadline


def test_deadline_never_exceeded_raises_last_error(
    server: FaultServer, make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    client = make_client(deadline=5.0)
    server.fail(VERIFY, 503, "SERVICE_UNAVAILABLE", times=100, retry_after=1)
    start = fake_time.now
    with pytest.raises(ServiceUnavailable) as info:
        client.verify_payload(BARCODE)
    assert info.value.retry_after == 1
    assert fake_time.now - start < 5.0
    assert all(s >= 1 for s in fake_time.sleeps)
    assert len(fake_time.sleeps) >= 3
    assert server.counts[VERIFY] == len(fake_time.sleeps) + 1


def test_retry_after_beyond_deadline_raises_without_sleeping(
    server: FaultServer, make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    client = make_client(deadline=5.0)
    server.fail(VERIFY, 429, "RATE_LIMITED", retry_after=30)
    with pytest.raises(RateLimited) as info:
        client.verify_payload(BARCODE)
    assert info.value.retry_after == 30
    assert fake_time.sleeps == []
    assert server.counts[VERIFY] == 1


def test_deadline_bounds_a_hanging_server_in_real_time(
    server: FaultServer, make_client: Callable[..., ApiClient]
) -> None:
    client = make_client(timeout=10.0, deadline=1.0, sleep=time.sleep, clock=time.monotonic)
    client.verify_payload(BARCODE)  # token cached
    server.inject(VERIFY, Fault("slow", delay=3.0), times=5)
    t0 = time.monotonic()
    with pytest.raises(ServiceUnreachable):
        client.verify_payload(BARCODE)
    assert time.monotonic() - t0 < 1.5


def test_unreachable_auth_server_gives_service_unreachable(
    make_client: Callable[..., ApiClient], fake_time: FakeTime
) -> None:
    client = make_client(auth_url=f"http://127.0.0.1:{closed_port()}", deadline=2.0)
    start = fake_time.now
    with pytest.raises(ServiceUnreachable):
        client.verify_payload(BARCODE)
    assert fake_time.now - start < 2.0
    assert len(fake_time.sleeps) >= 1


# ------------------------------------------------------------------------ idempotent registration


def test_register_non_pii_mints_reference_and_keeps_it_across_retries(
    server: FaultServer, client: ApiClient
) -> None:
    server.fail(REGISTER, 503, "SERVICE_UNAVAILABLE", times=2)
    server.inject(REGISTER, Fault("drop"))
    rec = record()
    ref, created = client.register_non_pii(rec)
    assert "service_reference" not in rec  # the caller's dict is not mutated
    assert created is True
    assert len(ref) == 22
    seen = server.requests_to(REGISTER)
    assert len(seen) == 4
    assert {s.body["service_reference"] for s in seen} == {ref}
    assert len({s.headers["X-Request-ID"] for s in seen}) == 1


def test_register_non_pii_duplicate_and_given_reference(
    server: FaultServer, client: ApiClient
) -> None:
    rec = record(service_reference="x" * 22)
    assert client.register_non_pii(rec) == ("x" * 22, True)
    assert client.register_non_pii(rec) == ("x" * 22, False)
    a, b = client.register_non_pii(record())[0], client.register_non_pii(record())[0]
    assert a != b


def test_register_batch_references_stable_across_retries(
    server: FaultServer, client: ApiClient
) -> None:
    server.inject(BATCH, Fault("drop"))
    records = [record(external_id="e1"), record(external_id="e2", service_reference="y" * 22)]
    results = client.register_batch(records)
    assert [r["external_id"] for r in results] == ["e1", "e2"]
    first, second = server.requests_to(BATCH)
    assert first.body == second.body
    refs = [r["service_reference"] for r in first.body["records"]]
    assert refs[1] == "y" * 22 and len(refs[0]) == 22
    assert [r["service_reference"] for r in results] == refs


def test_revoke(server: FaultServer, client: ApiClient) -> None:
    assert client.revoke("z" * 22, reason="issued in error")["status"] == "revoked"
    client.revoke("z" * 22)
    a, b = server.requests_to("/v1/records/" + "z" * 22 + "/revoke")
    assert a.prefix == "/issuer" and a.method == "POST"
    assert a.body == {"reason": "issued in error"}
    assert b.body == {}
    assert server.requests_to(TOKEN)[0].body["scope"] == "service:issuer"


def test_revoke_quotes_reference(server: FaultServer, client: ApiClient) -> None:
    client.revoke("../../admin/v1/overview")
    assert server.counts["/admin/v1/overview"] == 0
    assert server.seen[-1].path == "/v1/records/..%2F..%2Fadmin%2Fv1%2Foverview/revoke"
    with pytest.raises(ValueError):
        client.revoke("..")


def test_admin_routes(server: FaultServer, client: ApiClient) -> None:
    assert client.admin_create_issuer("Acme")["body"] == {"name": "Acme"}
    assert client.admin_create_verifier("Bank")["path"] == "/admin/v1/verifiers"
    assert client.admin_rotate_key("iss-1")["path"] == "/admin/v1/issuers/iss-1/keys"
    kv = "0b6e3c4e-1f0a-4e4e-9f7a-8d7c6b5a4f3e.2"
    assert client.admin_retire_key(kv)["path"] == f"/admin/v1/keys/{kv}/retire"
    assert client.admin_disable_client("cli-9")["path"] == "/admin/v1/clients/cli-9/disable"
    listed = client.admin_list()
    assert listed["method"] == "GET" and listed["path"] == "/admin/v1/overview"
    assert server.counts[TOKEN] == 1
    tok = server.requests_to(TOKEN)[0].body
    assert (tok["audience"], tok["scope"]) == (server.base + "/issuer", "service:admin")
    assert all(s.prefix == "/issuer" for s in server.seen if s.path.startswith("/admin/"))


def test_admin_create_not_retried_on_500(server: FaultServer, client: ApiClient) -> None:
    server.fail("/admin/v1/issuers", 500)
    with pytest.raises(InternalError):
        client.admin_create_issuer("Acme")
    assert server.counts["/admin/v1/issuers"] == 1


def test_missing_url_is_a_programming_error(server: FaultServer) -> None:
    with ApiClient(server.base, CLIENT_ID, CLIENT_SECRET) as c, pytest.raises(ValueError):
        c.verify_payload(BARCODE)


# --------------------------------------------------------------------------- error mapping

ERROR_CASES: list[tuple[str, int, type[ApiError]]] = [
    ("VALIDATION_FAILED", 400, ValidationFailed),
    ("DECRYPTION_FAILED", 400, DecryptionFailed),
    ("FORBIDDEN", 403, Forbidden),
    ("SERVICE_REFERENCE_NOT_FOUND", 404, NotFound),
    ("NOT_FOUND", 404, EndpointNotFound),
    ("METHOD_NOT_ALLOWED", 405, EndpointNotFound),
    ("CONFLICT", 409, Conflict),
    ("IV_REUSED", 409, IvReused),
    ("KEY_VERSION_UNAVAILABLE", 410, KeyVersionUnavailable),
    ("PAYLOAD_TOO_LARGE", 413, PayloadTooLarge),
    ("UNSUPPORTED_MEDIA_TYPE", 415, UnsupportedMediaType),
    ("RATE_LIMITED", 429, RateLimited),
    ("INTERNAL_ERROR", 500, InternalError),
    ("SERVICE_UNAVAILABLE", 503, ServiceUnavailable),
    ("SOMETHING_NEW", 418, ApiError),
]


@pytest.mark.parametrize(("code", "status", "cls"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_error_mapping_for_every_code(
    server: FaultServer,
    make_client: Callable[..., ApiClient],
    fake_time: FakeTime,
    code: str,
    status: int,
    cls: type[ApiError],
) -> None:
    # Retry-After beyond the deadline makes even retryable codes surface after one request.
    client = make_client(deadline=0.5)
    field_errors = [{"path": "barcode", "message": "too long"}]
    server.fail(
        VERIFY,
        status,
        code,
        retry_after=1,
        detail="what went wrong",
        field_errors=field_errors,
        reason="why",
    )
    with pytest.raises(ApiError) as info:
        client.verify_payload(BARCODE)
    exc = info.value
    assert type(exc) is cls
    assert exc.code == code
    assert exc.status == status
    assert exc.message == "what went wrong"
    assert [asdict(fe) for fe in exc.field_errors] == field_errors
    assert exc.field_errors[0].path == "barcode"
    assert exc.reason == "why"
    assert exc.retry_after == 1
    assert exc.request_id == server.requests_to(VERIFY)[0].headers["X-Request-ID"]
    assert server.counts[VERIFY] == 1
    assert fake_time.sleeps == []
    assert exc.request_id is not None
    assert code in str(exc) and exc.request_id in str(exc)
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is cls and clone.code == code and clone.field_errors == exc.field_errors


def test_validation_field_errors_carried(server: FaultServer, client: ApiClient) -> None:
    fe = [
        {"path": "payslip_non_pii.earnings.0.amount_cents", "message": "not an integer"},
        {"path": "", "message": "unknown field"},
    ]
    server.fail(REGISTER, 400, "VALIDATION_FAILED", field_errors=fe)
    with pytest.raises(ValidationFailed) as info:
        client.register_non_pii(record())
    assert [asdict(item) for item in info.value.field_errors] == fe
    assert "payslip_non_pii.earnings.0.amount_cents" in str(info.value)


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (500, InternalError, "INTERNAL_ERROR"),
        (501, InternalError, "INTERNAL_ERROR"),
        (502, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (503, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (504, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (404, EndpointNotFound, "NOT_FOUND"),
        (413, PayloadTooLarge, "PAYLOAD_TOO_LARGE"),
        (400, ValidationFailed, "VALIDATION_FAILED"),
    ],
)
def test_non_json_error_body_maps_by_status(
    server: FaultServer, client: ApiClient, status: int, cls: type[ApiError], code: str
) -> None:
    server.inject(BUILD, Fault("status", status, b"<html><body>oops</body></html>", "text/html"))
    with pytest.raises(cls) as info:
        client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    assert info.value.code == code
    assert info.value.status == status
    assert info.value.field_errors == []
    assert server.counts[BUILD] == 1


def test_non_json_success_is_invalid_response(server: FaultServer, client: ApiClient) -> None:
    server.inject(VERIFY, Fault("status", 200, b"<html>captive portal</html>", "text/html"))
    with pytest.raises(InvalidResponse):
        client.verify_payload(BARCODE)


# --------------------------------------------------------------------------- privacy


def _all_text(exc: BaseException) -> str:
    parts = [str(exc), repr(exc), repr(vars(exc)), *traceback.format_exception(exc)]
    return "\n".join(parts)


def test_errors_and_logs_never_hold_secrets_or_personal_data(
    server: FaultServer,
    make_client: Callable[..., ApiClient],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client(deadline=3.0)
    failures: list[BaseException] = []
    server.fail(VERIFY, 503, "SERVICE_UNAVAILABLE", times=50, retry_after=1)
    with pytest.raises(ServiceUnavailable) as a:
        client.verify_payload(BARCODE)
    failures.append(a.value)
    server.inject(BUILD, Fault("drop"))
    with pytest.raises(ServiceUnreachable) as b:
        client.register_and_build_barcode(record(encrypted_pii=ENCRYPTED_PII))
    failures.append(b.value)
    server.faults[VERIFY].clear()  # leftovers of the 503 run
    server.fail(VERIFY, 401, "UNAUTHORIZED", times=2)
    with pytest.raises(Unauthorized) as c:
        client.verify_payload(BARCODE)
    failures.append(c.value)
    dead = make_client(verifier_url=f"http://127.0.0.1:{closed_port()}", deadline=1.0)
    with pytest.raises(ServiceUnreachable) as d:
        dead.verify_payload(BARCODE)
    failures.append(d.value)

    secrets = [BARCODE, ENCRYPTED_PII, CLIENT_SECRET, *server.issued]
    assert len(server.issued) >= 2
    for exc in failures:
        assert exc.__cause__ is None and exc.__context__ is None
        text = _all_text(exc)
        for s in secrets:
            assert s not in text
    logs = caplog.text + "\n".join(str(r.args) for r in caplog.records)
    assert "/v1/verifications/payload" in logs
    for s in secrets:
        assert s not in logs
    assert CLIENT_SECRET not in repr(client)


# --------------------------------------------------------------------------- health


def test_healthz(server: FaultServer, client: ApiClient) -> None:
    assert client.healthz(server.base) is True
    assert client.healthz(server.base + "/") is True
    server.fail("/healthz", 503, "SERVICE_UNAVAILABLE")
    assert client.healthz(server.base) is False
    assert client.healthz(f"http://127.0.0.1:{closed_port()}") is False
    assert server.counts[TOKEN] == 0


def test_connect_timeout_is_separate_and_the_deadline_holds_over_retries() -> None:
    """A host that never completes the TCP handshake (a listener whose backlog is full drops
    SYNs): each attempt gives up after the connect timeout and is retried, and the whole call
    still ends at its deadline, not after the 10 s read timeout (issue 9: fail fast)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept backlog; further SYNs are dropped
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    url = f"http://127.0.0.1:{port}"
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)

    client = ApiClient(
        url,
        "desk",
        "secret",
        verifier_url=url,
        timeout=10.0,
        connect_timeout=0.4,
        deadline=2.0,
        sleep=sleep,
    )
    started = time.monotonic()
    try:
        with pytest.raises(ServiceUnreachable) as caught:
            client.verify_payload("2|" + "A" * 22 + "|" + "A" * 40)
    finally:
        client.close()
        for filler in fillers:
            filler.close()
        server.close()
    assert time.monotonic() - started < 3.0
    assert "connection failed" in caught.value.message
    assert slept  # more than one attempt fitted in the deadline
    with pytest.raises(ValueError):
        ApiClient(url, "a", "b", connect_timeout=0)
