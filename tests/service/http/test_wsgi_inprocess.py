"""The WSGI app in-process, wrapped in `wsgiref.validate.validator`: WSGI compliance of every
route and error path, and what needs control a socket cannot give: the clock (token expiry), a
batch held open (the concurrent batch limit), a body without Content-Length, a failing store."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

import pytest

from service.composition.config import BodyLimits, ServiceConfig
from service.composition.instance import domain_for, load_master_key, make_config, open_store
from service.domain import signing_keys
from service.http.app import create_app
from service.http.openapi import build_openapi
from service.storage.port import Store, StoreUnavailable
from testbed.factories import build_body, sealed_record
from testbed.oauth import token_body
from tests.service.conftest import make_instance
from tests.service.http.http_helpers import ADMIN, ISSUER, VERIFIER, api_routes

BASE = "http://payslip.test"


class FakeClock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 13, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


class ControlledStore:
    """The real store, with hooks: hold add_records open, or make reads fail."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.hold_next_add = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self.read_failure: Exception | None = None

    def add_records(self, records: Any) -> Any:
        if self.hold_next_add:
            self.hold_next_add = False
            self.entered.set()
            assert self.release.wait(timeout=30)
        return self._store.add_records(records)

    def get_record(self, reference: str) -> Any:
        if self.read_failure is not None:
            raise self.read_failure
        return self._store.get_record(reference)

    def read_for_verification(self, reference: str, client_id: str | None = None) -> Any:
        if self.read_failure is not None:
            raise self.read_failure
        return self._store.read_for_verification(reference, client_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@dataclasses.dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class InProcess:
    def __init__(self, tmp_path: Path, **config_changes: Any) -> None:
        self.data_dir = tmp_path / "data"
        self.created, self.issuer, self.verifier = make_instance(self.data_dir)
        self.real_store = open_store(self.data_dir)
        self.store = ControlledStore(self.real_store)
        self.clock = FakeClock()
        config = make_config(load_master_key(self.data_dir), BASE)
        self.config: ServiceConfig = dataclasses.replace(config, **config_changes)
        self.app = validator(create_app(self.config, self.store, self.clock))  # type: ignore[arg-type]

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        token: str | None = None,
        content_type: str | None = "application/json",
        length: bool | int = True,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "wsgi.input": io.BytesIO(data),
            "REMOTE_ADDR": "127.0.0.1",
            "QUERY_STRING": "",
            "SCRIPT_NAME": "",
        }
        if data or raw is not None:
            if content_type:
                environ["CONTENT_TYPE"] = content_type
            if length is True:
                environ["CONTENT_LENGTH"] = str(len(data))
            elif length is not False:
                environ["CONTENT_LENGTH"] = str(length)
        if token:
            environ["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        for key, value in (headers or {}).items():
            environ["HTTP_" + key.upper().replace("-", "_")] = value
        setup_testing_defaults(environ)
        seen: dict[str, Any] = {}

        def start_response(
            status: str, response_headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            seen["status"] = int(status.split(" ", 1)[0])
            seen["headers"] = {k.lower(): v for k, v in response_headers}
            return lambda _data: None

        result = self.app(environ, start_response)
        try:
            chunks = b"".join(result)
        finally:
            result.close()  # type: ignore[attr-defined]
        reply = Reply(seen["status"], seen["headers"], chunks)
        assert reply.headers.get("x-request-id"), (method, path)
        assert reply.headers.get("content-type", "").startswith("application/json"), (method, path)
        return reply

    def token(self, client: dict[str, Any], **extra: str) -> str:
        body = token_body(client["client_id"], client["client_secret"], BASE, **extra)
        reply = self.call("POST", "/oauth/token", body)
        assert reply.status == 200, reply.body
        return str(reply.json()["access_token"])

    def close(self) -> None:
        self.real_store.close()


@pytest.fixture
def inproc(tmp_path: Path) -> Iterator[InProcess]:
    app = InProcess(tmp_path)
    yield app
    app.close()


def expect(reply: Reply, status: int, code: str) -> dict[str, Any]:
    assert reply.status == status, reply.body
    body = reply.json()
    assert body["code"] == code, body
    return dict(body)


# --- WSGI compliance -----------------------------------------------------------------------


def test_every_route_and_error_path_is_valid_wsgi(inproc: InProcess) -> None:
    issuer_token = inproc.token(inproc.issuer)
    verifier_token = inproc.token(inproc.verifier)
    admin_token = inproc.token(
        {
            "client_id": inproc.created["admin_client_id"],
            "client_secret": inproc.created["admin_client_secret"],
        }
    )
    key = inproc.issuer["encryption_key"]
    sealed = sealed_record(key)
    verifier = inproc.verifier
    form = urlencode(token_body(verifier["client_id"], verifier["client_secret"], BASE)).encode()
    calls: list[tuple[tuple[Any, ...], dict[str, Any], int]] = [
        (("GET", "/healthz"), {}, 200),
        (("GET", "/readyz"), {}, 200),
        (("GET", "/openapi.json"), {}, 200),
        (("GET", "/.well-known/jwks.json"), {}, 200),
        (
            ("POST", "/oauth/token"),
            {"raw": form, "content_type": "application/x-www-form-urlencoded"},
            200,
        ),
        (("POST", "/v1/registerNonPII", sealed.body), {"token": issuer_token}, 201),
        (("POST", "/v1/registerNonPII", sealed.body), {"token": issuer_token}, 200),
        (
            ("POST", "/v1/registerNonPIIBatch", {"records": [sealed_record(key).body]}),
            {"token": issuer_token},
            200,
        ),
        (
            ("POST", "/v1/registerAndBuildBarcode", build_body(sealed_record(key))),
            {"token": issuer_token},
            201,
        ),
        (
            ("POST", "/v1/verifications/payload", {"barcode": sealed.payload}),
            {"token": verifier_token},
            200,
        ),
        (("POST", f"/v1/records/{sealed.reference}/revoke"), {"token": issuer_token}, 200),
        (("GET", "/admin/v1/overview"), {"token": admin_token}, 200),
        (("POST", "/admin/v1/verifiers", {"name": "In-process Desk"}), {"token": admin_token}, 201),
        (("GET", "/nowhere"), {}, 404),
        (("DELETE", "/v1/registerNonPII"), {}, 405),
        (("POST", "/v1/registerNonPII", {}), {}, 401),
        (("POST", "/v1/registerNonPII", sealed.body), {"token": verifier_token}, 403),
        (("POST", "/v1/registerNonPII", {}), {"token": issuer_token}, 400),
        (("POST", "/v1/registerNonPII"), {"token": issuer_token, "raw": b"x" * 70_000}, 413),
        (
            ("POST", "/v1/registerNonPII"),
            {"token": issuer_token, "raw": b"{}", "content_type": "text/plain"},
            415,
        ),
        (
            ("POST", "/v1/verifications/payload", {"barcode": "2|" + "A" * 22 + "|AA"}),
            {"token": verifier_token},
            404,
        ),
        (
            ("POST", "/v1/verifications/payload", {"barcode": "2|short|AA"}),
            {"token": verifier_token},
            400,
        ),
    ]
    for args, kwargs, status in calls:
        reply = inproc.call(*args, **kwargs)
        assert reply.status == status, (args[:2], reply.body)
    # Every API route of the app, read from the app itself (the list above holds the success
    # paths): each route's handler runs once under the validator with its scope's token.
    scoped = {ISSUER: issuer_token, VERIFIER: verifier_token, ADMIN: admin_token}
    for route in api_routes():
        token = scoped.get(route.scope) if route.scope else None
        reply = inproc.call(route.method, route.path, token=token)
        assert reply.status < 500, (str(route), reply.body)


def test_request_ids_in_process(inproc: InProcess) -> None:
    echoed = inproc.call("GET", "/nowhere", headers={"X-Request-ID": "abc.DEF_123-x"})
    assert echoed.headers["x-request-id"] == "abc.DEF_123-x"
    fresh = inproc.call("GET", "/healthz", headers={"X-Request-ID": "no spaces allowed"})
    assert fresh.headers["x-request-id"] != "no spaces allowed"


# --- the clock -----------------------------------------------------------------------------


def test_tokens_expire_by_the_injected_clock(inproc: InProcess) -> None:
    token = inproc.token(inproc.issuer)
    inproc.clock.advance(899)
    sealed = sealed_record(inproc.issuer["encryption_key"])
    assert inproc.call("POST", "/v1/registerNonPII", sealed.body, token=token).status == 201
    inproc.clock.advance(1)
    reply = inproc.call("POST", "/v1/registerNonPII", sealed.body, token=token)
    expect(reply, 401, "UNAUTHORIZED")
    assert reply.headers["www-authenticate"].startswith("Bearer")
    fresh = inproc.token(inproc.issuer)
    assert inproc.call("POST", "/v1/registerNonPII", sealed.body, token=fresh).status == 200


def test_times_in_results_come_from_the_clock(inproc: InProcess) -> None:
    sealed = sealed_record(inproc.issuer["encryption_key"])
    inproc.call("POST", "/v1/registerNonPII", sealed.body, token=inproc.token(inproc.issuer))
    inproc.clock.advance(3600.25)
    result = inproc.call(
        "POST",
        "/v1/verifications/payload",
        {"barcode": sealed.payload},
        token=inproc.token(inproc.verifier),
    ).json()
    assert result["payslip"]["registered_at"] == "2026-11-13T09:00:00.000Z"
    assert result["decrypted_at"] == "2026-11-13T10:00:00.250Z"


# --- the concurrent batch limit ------------------------------------------------------------


def test_a_batch_over_the_concurrent_limit_is_503_and_processes_nothing(tmp_path: Path) -> None:
    app = InProcess(tmp_path, max_concurrent_batches=1)
    try:
        token = app.token(app.issuer)
        key = app.issuer["encryption_key"]
        held = [sealed_record(key) for _ in range(2)]
        refused = [sealed_record(key) for _ in range(2)]
        app.store.hold_next_add = True
        replies: list[Reply] = []
        worker = threading.Thread(
            target=lambda: replies.append(
                app.call(
                    "POST",
                    "/v1/registerNonPIIBatch",
                    {"records": [s.body for s in held]},
                    token=token,
                )
            )
        )
        worker.start()
        assert app.store.entered.wait(timeout=30)  # the first batch holds the only slot
        busy = app.call(
            "POST", "/v1/registerNonPIIBatch", {"records": [s.body for s in refused]}, token=token
        )
        expect(busy, 503, "SERVICE_UNAVAILABLE")
        assert busy.headers["retry-after"].isdigit() and int(busy.headers["retry-after"]) >= 1
        # Single registrations are not batches: they still go through.
        single = sealed_record(key)
        assert app.call("POST", "/v1/registerNonPII", single.body, token=token).status == 201
        app.store.release.set()
        worker.join(timeout=30)
        assert [r.status for r in replies] == [200]
        assert all(app.real_store.get_record(s.reference) is None for s in refused)
        # The slot is free again, also after a batch that failed validation.
        bad = app.call("POST", "/v1/registerNonPIIBatch", {"records": []}, token=token)
        expect(bad, 400, "VALIDATION_FAILED")
        again = app.call(
            "POST", "/v1/registerNonPIIBatch", {"records": [s.body for s in refused]}, token=token
        )
        assert again.status == 200
        assert [r["status"] for r in again.json()["results"]] == ["created", "created"]
    finally:
        app.store.release.set()
        app.close()


# --- bodies --------------------------------------------------------------------------------


def test_a_body_without_content_length_is_limited_while_reading(inproc: InProcess) -> None:
    token = inproc.token(inproc.verifier)
    big = json.dumps({"barcode": "x" * 40_000}).encode()
    reply = inproc.call("POST", "/v1/verifications/payload", raw=big, token=token, length=False)
    expect(reply, 413, "PAYLOAD_TOO_LARGE")
    small = json.dumps({"barcode": "2|" + "A" * 22 + "|AAAAAAAA"}).encode()
    reply = inproc.call("POST", "/v1/verifications/payload", raw=small, token=token, length=False)
    expect(reply, 404, "SERVICE_REFERENCE_NOT_FOUND")


def test_a_content_length_that_lies_is_never_a_500(inproc: InProcess) -> None:
    token = inproc.token(inproc.verifier)
    body = json.dumps({"barcode": "2|" + "A" * 22 + "|AAAAAAAA"}).encode()
    for length in (0, 5, 17):
        reply = inproc.call(
            "POST", "/v1/verifications/payload", raw=body, token=token, length=length
        )
        expect(reply, 400, "VALIDATION_FAILED")
    # Longer than what arrives: the body read is what there is, here complete.
    reply = inproc.call(
        "POST", "/v1/verifications/payload", raw=body, token=token, length=len(body) + 100
    )
    expect(reply, 404, "SERVICE_REFERENCE_NOT_FOUND")


def test_body_limits_are_configurable(tmp_path: Path) -> None:
    app = InProcess(tmp_path, body_limits=BodyLimits(batch=4096))
    try:
        token = app.token(app.issuer)
        records = [sealed_record(app.issuer["encryption_key"]).body for _ in range(12)]
        reply = app.call("POST", "/v1/registerNonPIIBatch", {"records": records}, token=token)
        expect(reply, 413, "PAYLOAD_TOO_LARGE")
        reply = app.call("POST", "/v1/registerNonPIIBatch", {"records": records[:2]}, token=token)
        assert reply.status == 200
    finally:
        app.close()


# --- failures inside ------------------------------------------------------------------------


def test_an_unavailable_store_is_503_with_retry_after(inproc: InProcess) -> None:
    token = inproc.token(inproc.verifier)
    inproc.store.read_failure = StoreUnavailable("database gone")
    reply = inproc.call(
        "POST", "/v1/verifications/payload", {"barcode": "2|" + "A" * 22 + "|AAAAAAAA"}, token=token
    )
    body = expect(reply, 503, "SERVICE_UNAVAILABLE")
    assert reply.headers["retry-after"].isdigit()
    assert "database gone" not in json.dumps(body)


def test_readiness_follows_the_store(inproc: InProcess) -> None:
    assert inproc.call("GET", "/readyz").status == 200
    inproc.real_store.close()
    reply = inproc.call("GET", "/readyz")
    expect(reply, 503, "SERVICE_UNAVAILABLE")
    assert reply.headers["retry-after"].isdigit()
    assert inproc.call("GET", "/healthz").status == 200


def test_the_open_routes_that_read_the_store_are_503_as_documented(
    inproc: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token endpoint reads the client, the JWKS the signing keys (once per refresh
    interval, every time here): with the store away both are 503, and the document says so."""
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0)
    grant = token_body(inproc.verifier["client_id"], inproc.verifier["client_secret"], BASE)
    inproc.real_store.close()
    document = build_openapi(inproc.config)
    for method, path, body in (
        ("POST", "/oauth/token", grant),
        ("GET", "/.well-known/jwks.json", None),
    ):
        reply = inproc.call(method, path, body)
        expect(reply, 503, "SERVICE_UNAVAILABLE")
        assert reply.headers["retry-after"].isdigit()
        documented = document["paths"][path][method.lower()]["responses"]["503"]
        codes = documented["content"]["application/json"]["schema"]["properties"]["code"]
        assert codes["enum"] == ["SERVICE_UNAVAILABLE"], path


def test_an_unexpected_error_is_500_without_internals(
    inproc: InProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = inproc.token(inproc.verifier)
    inproc.store.read_failure = RuntimeError("internal detail /srv/secret-path Zebedee")
    reply = inproc.call(
        "POST",
        "/v1/verifications/payload",
        {"barcode": "2|" + "A" * 22 + "|AAAAAAAA"},
        token=token,
        headers={"X-Request-ID": "trace-me-500"},
    )
    body = expect(reply, 500, "INTERNAL_ERROR")
    text = reply.body.decode()
    for leak in ("internal detail", "secret-path", "Zebedee", "Traceback", "RuntimeError"):
        assert leak not in text
    assert set(body) <= {"error", "code", "detail"}
    assert reply.headers["x-request-id"] == "trace-me-500"
    assert "trace-me-500" in caplog.text  # the operator can find it ...
    assert "Zebedee" not in caplog.text  # ... without the exception's text


def test_a_token_for_another_deployment_is_refused(tmp_path: Path) -> None:
    """Two apps on one store (one signing key) but different URLs: neither accepts the other's
    tokens, because the audience and issuer differ."""
    first = InProcess(tmp_path)
    try:
        other_config = make_config(first.config.master_key, "http://other.test")
        other = validator(create_app(other_config, first.store, first.clock))  # type: ignore[arg-type]
        token = (
            domain_for(first.real_store, other_config, first.clock)
            .tokens.grant(
                {
                    "grant_type": "client_credentials",
                    "client_id": first.issuer["client_id"],
                    "client_secret": first.issuer["client_secret"],
                    "audience": "http://other.test",
                }
            )
            .access_token
        )
        assert other is not None
        sealed = sealed_record(first.issuer["encryption_key"])
        reply = first.call("POST", "/v1/registerNonPII", sealed.body, token=token)
        expect(reply, 401, "UNAUTHORIZED")
    finally:
        first.close()


def test_a_badge_that_cannot_fit_is_refused_at_encrypted_pii(tmp_path: Path) -> None:
    """PROTOCOL §3: when even error correction L cannot give 3 px modules or the data does not
    fit, the request fails clearly, at `encrypted_pii`, and nothing is stored."""
    long_origin = "https://" + "v" * 1500 + ".example"
    app = InProcess(tmp_path, verifier_url=long_origin)
    try:
        body = build_body(sealed_record(app.issuer["encryption_key"], pii_text="X" * 2164))
        token = app.token(app.issuer)
        reply = app.call("POST", "/v1/registerAndBuildBarcode", body, token=token)
        found = expect(reply, 400, "VALIDATION_FAILED")
        assert [e["path"] for e in found["field_errors"]] == ["encrypted_pii"]
        assert app.real_store.counts().records_by_issuer == {}
        # A short ciphertext fits even behind that origin.
        small = build_body(sealed_record(app.issuer["encryption_key"]))
        assert app.call("POST", "/v1/registerAndBuildBarcode", small, token=token).status == 201
    finally:
        app.close()
