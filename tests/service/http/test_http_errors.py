"""HTTP edges of PROTOCOL §6 and §9 on the real server: body limits (declared and chunked), media
types, unreadable JSON, unknown paths, request ids, rate limits, health and the OpenAPI document.

Route lists come from the Bottle app itself (`http_helpers.served_routes`); the error object on
every route, wrong methods included, is checked in test_http_routes.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testbed import web
from testbed.factories import sealed_record
from testbed.oauth import token_body
from tests.service.conftest import BOTH_STORES, LiveService, start_live
from tests.service.http.http_helpers import ISSUER, VERIFIER, api_routes, expect_error

LIVE_STORES = BOTH_STORES

JSON_ROUTES = [r.path for r in api_routes() if r.scope in (ISSUER, VERIFIER) and r.needs_body]
"""The issuer and verifier routes that need a JSON body (registrations and verification)."""


def raw_post(
    live: LiveService, path: str, content: Any, token: str | None, **headers: str
) -> httpx.Response:
    all_headers = {"Content-Type": "application/json", **headers}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    return web.post(f"{live.url}{path}", content=content, headers=all_headers, timeout=60)


def token_for(live: LiveService, path: str) -> str:
    return live.verifier_token() if "verif" in path else live.issuer_token()


# --- body limits ---------------------------------------------------------------------------

PROTOCOL_LIMITS = {
    "/v1/verifications/payload": 32 * 1024,
    "/v1/verifications/receipt": 32 * 1024,  # §11: exactly as verifyPayload
    "/v1/registerNonPII": 64 * 1024,
    "/v1/registerAndBuildBarcode": 64 * 1024,
    "/v1/records/<reference>/revoke": 8 * 1024,
}
"""PROTOCOL §6 (and §11) body limits of the issuer and verifier routes (the batch: below)."""
LIMITED = [
    r
    for r in api_routes()
    if r.scope in (ISSUER, VERIFIER) and r.reads_body and not r.options.get("batch")
]
LIMITS = {r.path: PROTOCOL_LIMITS[r.rule] for r in LIMITED if r.rule in PROTOCOL_LIMITS}


def test_every_issuer_and_verifier_route_has_its_limit_tested() -> None:
    assert {r.rule for r in LIMITED} == set(PROTOCOL_LIMITS)


def oversized(limit: int) -> bytes:
    return json.dumps({"barcode": "x" * (limit + 10)}).encode()


@pytest.mark.parametrize("path", sorted(LIMITS))
def test_a_body_over_the_limit_is_413_with_an_honest_length(live: LiveService, path: str) -> None:
    reply = raw_post(live, path, oversized(LIMITS[path]), token_for(live, path))
    expect_error(reply, 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.parametrize("path", sorted(LIMITS))
def test_a_chunked_body_over_the_limit_is_413(live: LiveService, path: str) -> None:
    data = oversized(LIMITS[path])

    def chunks() -> Iterator[bytes]:
        for start_ in range(0, len(data), 4096):
            yield data[start_ : start_ + 4096]

    reply = raw_post(live, path, chunks(), token_for(live, path))
    assert reply.request.headers.get("transfer-encoding") == "chunked"
    expect_error(reply, 413, "PAYLOAD_TOO_LARGE")


def test_a_chunked_body_within_the_limit_is_read(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    data = json.dumps(sealed.body).encode()

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(data), 7):
            yield data[i : i + 7]

    reply = raw_post(live, "/v1/registerNonPII", chunks(), live.issuer_token())
    assert reply.status_code == 201, reply.text


def test_batch_limit_is_10_mib(live: LiveService) -> None:
    token = live.issuer_token()
    under = json.dumps({"records": [{"pad": "x" * (9 * 1024 * 1024)}]}).encode()
    reply = raw_post(live, "/v1/registerNonPIIBatch", under, token)
    assert reply.status_code == 200, reply.text
    assert reply.json()["results"][0]["status"] == "error"
    over = json.dumps({"records": [{"pad": "x" * (10 * 1024 * 1024)}]}).encode()
    expect_error(raw_post(live, "/v1/registerNonPIIBatch", over, token), 413, "PAYLOAD_TOO_LARGE")


@pytest.mark.slow
def test_a_body_beyond_what_the_server_buffers_still_gets_the_json_413(
    live: LiveService,
) -> None:
    """Bodies over waitress's own cap (service.hosting.server.MAX_WAITRESS_BODY, 32 MiB) are
    refused by
    waitress before the app runs; its error task is replaced so the answer is still the JSON
    error object with an X-Request-ID (PROTOCOL §6). The gunicorn workers answer the same."""
    body = b'{"records": ["' + b"x" * (40 * 1024 * 1024) + b'"]}'
    reply = raw_post(live, "/v1/registerNonPIIBatch", body, live.issuer_token())
    expect_error(reply, 413, "PAYLOAD_TOO_LARGE")


# --- media types and unreadable bodies -----------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "application/json;charset=iso-8859-1",
        "application/jsonx",
        "",
    ],
)
@pytest.mark.parametrize("path", JSON_ROUTES)
def test_other_media_types_are_415(live: LiveService, path: str, content_type: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    headers = {"Content-Type": content_type} if content_type else {}
    reply = web.post(
        f"{live.url}{path}",
        content=json.dumps(sealed.body),
        headers={**headers, "Authorization": f"Bearer {token_for(live, path)}"},
        timeout=10,
    )
    expect_error(reply, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert live.store.get_record(sealed.reference) is None


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", 'Application/JSON; charset="UTF-8"'],
)
def test_json_with_or_without_utf8_charset_is_accepted(
    live: LiveService, content_type: str
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    reply = raw_post(
        live,
        "/v1/registerNonPII",
        json.dumps(sealed.body),
        live.issuer_token(),
        **{"Content-Type": content_type},
    )
    assert reply.status_code == 201, reply.text


UNREADABLE = {
    "empty": b"",
    "whitespace": b"  \n",
    "truncated": b'{"barcode": "2|abc',
    "trailing garbage": b'{"barcode": "x"} x',
    "NaN": b'{"barcode": NaN}',
    "Infinity": b'{"records": [{"gross_cents": Infinity}]}',
    "-Infinity": b'{"schema": -Infinity}',
    "invalid UTF-8": b'{"barcode": "\xff\xfe"}',
    "UTF-16": '{"barcode": "x"}'.encode("utf-16"),
    "deep arrays": b"[" * 15_000 + b"]" * 15_000,
    "deep objects": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    "single quotes": b"{'barcode': 'x'}",
    "lone surrogate key": b'{"\\ud800": 1}',
    "lone surrogate value": b'{"barcode": "\\udfff"}',
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
@pytest.mark.parametrize("path", JSON_ROUTES)
def test_unreadable_json_is_400_never_500(live: LiveService, path: str, name: str) -> None:
    reply = raw_post(live, path, UNREADABLE[name], token_for(live, path))
    assert reply.status_code == 400, (name, reply.status_code, reply.text[:300])
    assert reply.json()["code"] == "VALIDATION_FAILED"
    assert reply.headers["x-request-id"]


def test_moderately_deep_json_is_a_validation_error(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    body = dict(sealed.body)
    body["payslip_non_pii"] = {**body["payslip_non_pii"], "ytd": json.loads("[" * 500 + "]" * 500)}
    reply = live.post("/v1/registerNonPII", body, live.issuer_token())
    body_ = expect_error(reply, 400, "VALIDATION_FAILED")
    # Refused while parsing (issue 15: depth limits), before any validator walks it.
    assert [e["path"] for e in body_["field_errors"]] == [""]
    assert body_["detail"].endswith("the body nests deeper than 24 levels")


def test_text_fields_with_unpaired_surrogates_are_refused(live: LiveService) -> None:
    """A record the service accepts must verify; a lone surrogate cannot be sent back as UTF-8,
    so it is refused at the door (it used to be stored, and every verify then failed with 500)."""
    sealed = sealed_record(live.issuer["encryption_key"], "au.payslip.v2")
    text = json.dumps(sealed.body).replace('"currency"', '"award": "Award \\ud800", "currency"', 1)
    reply = raw_post(live, "/v1/registerNonPII", text.encode(), live.issuer_token())
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert [e["path"] for e in body["field_errors"]] == [""]
    paired = json.dumps(sealed.body).replace(
        '"currency"', '"award": "Award \\ud83c\\udfc6", "currency"', 1
    )
    assert (
        raw_post(live, "/v1/registerNonPII", paired.encode(), live.issuer_token()).status_code
        == 201
    )
    result = live.verify(sealed.payload).json()
    assert result["payslip"]["payslip_non_pii"]["award"] == "Award \U0001f3c6"


# --- unknown paths and methods, request ids ------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/", "/v1", "/v2/registerNonPII", "/v1/registerNonPII/extra", "/admin", "/%ff"]
)
def test_unknown_paths_are_json_404(live: LiveService, path: str) -> None:
    for method in ("GET", "POST"):
        # Over the socket: a raw path byte like %ff reaches the app as the server decodes it
        # (PEP 3333's latin-1), which httpx's in-process transport does not reproduce.
        reply = web.request(method, f"{live.url}{path}", timeout=10)
        expect_error(reply, 404, "NOT_FOUND")


def _sample_replies(live: LiveService, request_id: str | None) -> dict[str, httpx.Response]:
    """Over the socket: header values outside ASCII (a request id of "café") are the point, and
    only a real server takes them as a client sends them."""
    headers: dict[str, Any] = {}
    if request_id is not None:
        headers["X-Request-ID"] = request_id.encode("utf-8")
    token = live.issuer_token()
    auth = {**headers, "Authorization": f"Bearer {token}"}
    sealed = sealed_record(live.issuer["encryption_key"])
    return {
        "200": web.get(f"{live.url}/healthz", headers=headers, timeout=10),
        "201": web.post(
            f"{live.url}/v1/registerNonPII", json=sealed.body, headers=auth, timeout=10
        ),
        "400": web.post(f"{live.url}/v1/registerNonPII", json={}, headers=auth, timeout=10),
        "401": web.post(f"{live.url}/v1/registerNonPII", json={}, headers=headers, timeout=10),
        "404": web.get(f"{live.url}/nowhere", headers=headers, timeout=10),
        "405": web.get(f"{live.url}/v1/registerNonPII", headers=headers, timeout=10),
        "413": web.post(
            f"{live.url}/v1/registerNonPII",
            content=b"x" * (65 * 1024),
            headers={**auth, "Content-Type": "application/json"},
            timeout=10,
        ),
        "415": web.post(
            f"{live.url}/v1/registerNonPII",
            content=b"{}",
            headers={**auth, "Content-Type": "text/plain"},
            timeout=10,
        ),
        "token": web.post(
            f"{live.url}/oauth/token", json={"grant_type": "x"}, headers=headers, timeout=10
        ),
    }


def test_a_valid_request_id_is_echoed_on_every_response(live: LiveService) -> None:
    request_id = "req-2026.11_13-" + "a" * 100
    for name, reply in _sample_replies(live, request_id).items():
        assert reply.headers.get("x-request-id") == request_id, name
        assert reply.headers["content-type"].startswith("application/json"), name


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "semi;colon", "caf\u00e9", "a/b"])
def test_an_invalid_request_id_is_replaced_by_a_fresh_one(live: LiveService, bad: str) -> None:
    replies = _sample_replies(live, bad)
    fresh = {reply.headers.get("x-request-id") for reply in replies.values()}
    assert len(fresh) == len(replies)
    for name, reply in replies.items():
        request_id = reply.headers.get("x-request-id")
        assert request_id and request_id != bad, name
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,128}", request_id), name


def test_requests_without_an_id_get_distinct_ones(live: LiveService) -> None:
    ids = [
        live.http.get(f"{live.url}/healthz", timeout=10).headers["x-request-id"] for _ in range(5)
    ]
    assert len(set(ids)) == 5


# --- rate limits ---------------------------------------------------------------------------


@pytest.fixture
def limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., LiveService]]:
    """In-process TinyDB servers with the limits set in the environment, one per call. These rate
    limit tests run on TinyDB only: they need a fresh server per limit setting, and the module-wide
    PostgreSQL server runs with raised limits. The limits across the workers of one server and
    across hosts (Redis) are tested in test_shared_limits.py and test_two_hosts.py."""
    started: list[LiveService] = []

    def launch(**env: str) -> LiveService:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        live = start_live(tmp_path / f"data{len(started)}")
        started.append(live)
        return live

    yield launch
    for live in started:
        live.running.stop()


def expect_rate_limited(reply: httpx.Response) -> None:
    expect_error(reply, 429, "RATE_LIMITED")
    retry_after = reply.headers["retry-after"]
    assert re.fullmatch(r"[0-9]+", retry_after), retry_after
    assert 1 <= int(retry_after) <= 60


def test_the_ip_limit_refuses_before_anything_is_processed(
    limited: Callable[..., LiveService],
) -> None:
    live = limited(PAYSLIP_RATE_LIMIT_IP="5/minute")
    token = live.issuer_token()  # 1 of 5
    sealed = [sealed_record(live.issuer["encryption_key"]) for _ in range(8)]
    replies = [live.post("/v1/registerNonPII", s.body, token) for s in sealed]
    assert [r.status_code for r in replies] == [201] * 4 + [429] * 4
    for reply, record in zip(replies, sealed, strict=True):
        stored = live.running.store.get_record(record.reference)
        if reply.status_code == 429:
            expect_rate_limited(reply)
            assert stored is None
        else:
            assert stored is not None
    # Refused before authentication, validation or routing work.
    expect_rate_limited(live.post("/v1/registerNonPII", {}, "not-a-token"))


def test_the_client_limit_counts_per_client(limited: Callable[..., LiveService]) -> None:
    live = limited(PAYSLIP_RATE_LIMIT_CLIENT="3/minute")
    issuer_token = live.issuer_token()
    sealed = [sealed_record(live.issuer["encryption_key"]) for _ in range(4)]
    replies = [live.post("/v1/registerNonPII", s.body, issuer_token) for s in sealed]
    assert [r.status_code for r in replies] == [201, 201, 201, 429]
    expect_rate_limited(replies[3])
    assert live.running.store.get_record(sealed[3].reference) is None
    # A fresh token is the same client; another client is not limited.
    expect_rate_limited(live.post("/v1/registerNonPII", sealed[3].body, live.issuer_token()))
    assert live.verify(sealed[0].payload).status_code == 200


def test_the_token_endpoint_limit_per_ip(limited: Callable[..., LiveService]) -> None:
    live = limited(PAYSLIP_RATE_LIMIT_TOKEN_IP="2/minute")
    token = live.issuer_token()
    live.verifier_token()
    body = token_body(live.issuer["client_id"], live.issuer["client_secret"], live.url)
    refused = live.http.post(f"{live.url}/oauth/token", json=body, timeout=10)
    expect_rate_limited(refused)
    # An OAuth library reads these (RFC 6749 §5.2): a refusal the grant did not name too.
    assert refused.json()["error"] == "temporarily_unavailable"
    assert refused.json()["error_description"] == refused.json()["detail"]
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, token).status_code == 201


# --- operations ----------------------------------------------------------------------------


def test_health_and_readiness(live: LiveService) -> None:
    health = live.http.get(f"{live.url}/healthz", timeout=10)
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    ready = live.http.get(f"{live.url}/readyz", timeout=10)
    assert ready.status_code == 200
    assert ready.headers["content-type"].startswith("application/json")


def test_openapi_document(live: LiveService) -> None:
    reply = live.http.get(f"{live.url}/openapi.json", timeout=10)
    assert reply.status_code == 200
    doc = reply.json()
    assert doc["openapi"].startswith("3.1")
    served = {(r.method.lower(), r.template) for r in api_routes()}
    listed = {(m, p) for p, item in doc["paths"].items() for m in item}
    assert listed == served
    schemas = doc["components"]["schemas"]
    for model in (
        "RegisterNonPiiRequest",
        "RegisterAndBuildRequest",
        "BatchRequest",
        "VerifyRequest",
        "EncryptionMetadata",
    ):
        assert model in schemas, model
    operations = {
        p: doc["paths"][p]["post"]
        for p in ("/v1/registerNonPII", "/v1/registerNonPIIBatch", "/v1/registerAndBuildBarcode")
    }
    for path, operation in operations.items():
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.split("/")[-1] in schemas, path
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            errors = [s for s in operation["responses"] if s[0] in "45"]
            assert errors, (method, path)
    verify = doc["paths"]["/v1/verifications/payload"]["post"]["responses"]
    assert {"400", "401", "403", "404", "410", "413", "415", "429"} <= set(verify)
