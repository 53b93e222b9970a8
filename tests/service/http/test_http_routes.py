"""Route-level checks over the Bottle app's own routes (read from `build_bottle`, never copied):
every route answers a bad request with the one error object of PROTOCOL §6, at the status its
`ErrorCode` carries and the OpenAPI document lists for that route; the document lists exactly
the served API routes and every error code where the contract says it is used.

In the manner of Datasette's own-route tests: when a route is added, these tests cover it
without being edited, and fail until the document describes it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from service.composition.instance import make_config
from service.http.openapi import build_openapi
from service.http.routes import UNROUTED
from service.protocol.errors import ErrorCode
from testbed import web
from tests.service.conftest import LiveService, start_live
from tests.service.http.http_helpers import (
    ADMIN,
    ISSUER,
    VERIFIER,
    ServedRoute,
    api_routes,
    documented_codes,
    expect_documented_error,
    served_routes,
)

E = ErrorCode
ROUTES = served_routes()
SCOPED = [route for route in api_routes() if route.scope]
BODY = [route for route in api_routes() if route.reads_body]
OPEN_POSTS = [route for route in api_routes() if route.method == "POST" and not route.scope]

WRONG_CREDENTIALS: dict[str, dict[str, str]] = {
    "/oauth/token": {
        "grant_type": "client_credentials",
        "client_id": "no-such-client",
        "client_secret": "wrong",
        "audience": "http://127.0.0.1",
    },
    "/v1/pairings/redeem": {"pairing_code": "A" * 16 + "." + "B" * 43},
}
"""For the routes that take credentials in the body: well-formed, but wrong."""


def ids(routes: list[ServedRoute] | tuple[ServedRoute, ...]) -> list[str]:
    return [str(route) for route in routes]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """One real server on loopback for the whole module: these tests only read."""
    live = start_live(tmp_path_factory.mktemp("routes") / "data")
    try:
        yield live
    finally:
        assert live.running is not None
        live.running.stop()


@pytest.fixture(scope="module")
def document(server: LiveService) -> dict[str, Any]:
    reply = web.get(f"{server.url}/openapi.json", timeout=10)
    assert reply.status_code == 200
    return dict(reply.json())


@pytest.fixture(scope="module")
def tokens(server: LiveService) -> dict[str, str]:
    return {
        ISSUER: server.issuer_token(),
        VERIFIER: server.verifier_token(),
        ADMIN: server.admin_token(),
    }


def send(
    server: LiveService,
    route: ServedRoute,
    content: bytes | None = None,
    *,
    token: str | None = None,
    method: str | None = None,
    content_type: str = "application/json",
) -> httpx.Response:
    headers = {"Content-Type": content_type} if content is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return web.request(
        method or route.method,
        f"{server.url}{route.path}",
        content=content,
        headers=headers,
        timeout=30,
    )


# --- the document and the routes -----------------------------------------------------------


def test_routes_are_read_from_the_app() -> None:
    """The lists the other tests run over are the app's: a sanity floor, not a copy."""
    assert len(api_routes()) >= 18
    assert {route.scope for route in SCOPED} == {ISSUER, VERIFIER, ADMIN}
    assert ("POST", "/v1/verifications/payload") in {(r.method, r.rule) for r in BODY}
    assert [route for route in ROUTES if not route.api], "the phone page routes are served too"


def test_the_document_lists_exactly_the_served_api_routes() -> None:
    document = build_openapi(make_config(b"\0" * 32, "http://routes.test"))
    documented = {(m.upper(), path) for path, item in document["paths"].items() for m in item}
    served = {(route.method, route.template) for route in api_routes()}
    assert documented == served


def test_every_reference_in_the_document_resolves() -> None:
    """A `$ref` to a missing component (`PairingRequest` was one) stops openapi-generator's
    parser; openapi-python-client passed over it, so only this test saw it."""
    document = build_openapi(make_config(b"\0" * 32, "http://routes.test"))
    text = json.dumps(document)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/')[1:]}
    assert refs
    for ref in sorted(refs):
        found: Any = document
        for part in ref.split("/"):
            assert isinstance(found, dict) and part in found, f"#/{ref} is not in the document"
            found = found[part]


def test_every_error_code_is_documented_where_it_is_used() -> None:
    document = build_openapi(make_config(b"\0" * 32, "http://routes.test"))
    schemas = document["components"]["schemas"]
    assert schemas["ErrorCode"]["enum"] == [str(code) for code in ErrorCode]
    assert schemas["Error"]["properties"]["code"] == {"$ref": "#/components/schemas/ErrorCode"}
    seen: set[ErrorCode] = set()
    responses = [
        (f"{method} {path}", status, response)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        for status, response in operation["responses"].items()
        if status[0] in "45"
    ] + [
        (
            f"components.responses.{name}",
            str(code.status),
            document["components"]["responses"][name],
        )
        for name, (code, _) in UNROUTED.items()
    ]
    for where, status, response in responses:
        schema = response["content"]["application/json"]["schema"]
        assert schema["allOf"] == [{"$ref": "#/components/schemas/Error"}], where
        codes = [ErrorCode[code] for code in schema["properties"]["code"]["enum"]]
        assert codes, where
        for code in codes:
            assert code.status == int(status), (where, code)
            assert code in response["description"], (where, code)
            if code.retry_after:
                assert "Retry-After" in response["description"], (where, code)
        seen.update(codes)
    assert seen == set(ErrorCode)
    # spec.md "Operations": each operation's failure list is in its documented answers.
    spec_failures = {
        "/v1/verifications/payload": (
            "VALIDATION_FAILED DECRYPTION_FAILED UNAUTHORIZED FORBIDDEN "
            "SERVICE_REFERENCE_NOT_FOUND PAYLOAD_TOO_LARGE UNSUPPORTED_MEDIA_TYPE "
            "KEY_VERSION_UNAVAILABLE RATE_LIMITED INTERNAL_ERROR SERVICE_UNAVAILABLE"
        ),
        "/v1/registerNonPII": (
            "VALIDATION_FAILED UNAUTHORIZED FORBIDDEN CONFLICT IV_REUSED PAYLOAD_TOO_LARGE "
            "UNSUPPORTED_MEDIA_TYPE RATE_LIMITED INTERNAL_ERROR SERVICE_UNAVAILABLE"
        ),
        "/v1/registerNonPIIBatch": (
            "VALIDATION_FAILED UNAUTHORIZED FORBIDDEN PAYLOAD_TOO_LARGE UNSUPPORTED_MEDIA_TYPE "
            "RATE_LIMITED INTERNAL_ERROR SERVICE_UNAVAILABLE"
        ),
        "/v1/registerAndBuildBarcode": (
            "VALIDATION_FAILED UNAUTHORIZED FORBIDDEN IV_REUSED PAYLOAD_TOO_LARGE "
            "UNSUPPORTED_MEDIA_TYPE RATE_LIMITED INTERNAL_ERROR SERVICE_UNAVAILABLE"
        ),
    }
    for path, failures in spec_failures.items():
        route = next(r for r in api_routes() if r.rule == path)
        for name in failures.split():
            code = ErrorCode[name]
            assert name in documented_codes(document, route, code.status), (path, name)


# --- the error object on every route ---------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=ids(ROUTES))
def test_every_route_refuses_a_method_it_does_not_take(
    server: LiveService, document: dict[str, Any], route: ServedRoute
) -> None:
    served_methods = {r.method for r in ROUTES if r.rule == route.rule}
    for method in ("PUT", "DELETE", "PATCH", "GET", "POST"):
        if method in served_methods:
            continue
        content = b"{}" if method != "GET" else None
        reply = send(server, route, content, method=method)
        body = expect_documented_error(reply, route, document, E.METHOD_NOT_ALLOWED)
        assert body.detail and "method" in body.detail, method


@pytest.mark.parametrize("route", SCOPED, ids=ids(SCOPED))
def test_every_scoped_route_refuses_missing_malformed_and_foreign_credentials(
    server: LiveService, document: dict[str, Any], tokens: dict[str, str], route: ServedRoute
) -> None:
    content = b"{}" if route.method == "POST" else None
    expect_documented_error(send(server, route, content), route, document, E.UNAUTHORIZED)
    expect_documented_error(
        send(server, route, content, token="not.a.token"), route, document, E.UNAUTHORIZED
    )
    other = VERIFIER if route.scope != VERIFIER else ISSUER
    expect_documented_error(
        send(server, route, content, token=tokens[other]), route, document, E.FORBIDDEN
    )


def test_every_open_route_that_takes_credentials_is_covered() -> None:
    assert {route.rule for route in OPEN_POSTS} == set(WRONG_CREDENTIALS)


@pytest.mark.parametrize("route", OPEN_POSTS, ids=ids(OPEN_POSTS))
def test_every_open_route_refuses_wrong_credentials(
    server: LiveService, document: dict[str, Any], route: ServedRoute
) -> None:
    content = json.dumps(WRONG_CREDENTIALS[route.rule]).encode()
    expect_documented_error(send(server, route, content), route, document, E.UNAUTHORIZED)


@pytest.mark.parametrize("route", BODY, ids=ids(BODY))
def test_every_route_with_a_body_refuses_malformed_ones(
    server: LiveService, document: dict[str, Any], tokens: dict[str, str], route: ServedRoute
) -> None:
    token = tokens[route.scope] if route.scope else None
    unreadable = send(server, route, b'{"barcode": "2|', token=token)
    body = expect_documented_error(unreadable, route, document, E.VALIDATION_FAILED)
    assert body.field_errors is not None and [e.path for e in body.field_errors] == [""]
    expect_documented_error(
        send(server, route, b"{}", token=token, content_type="text/plain"),
        route,
        document,
        E.UNSUPPORTED_MEDIA_TYPE,
    )
    assert route.body_limit is not None
    oversized = b'{"pad": "' + b"x" * route.body_limit + b'"}'
    expect_documented_error(
        send(server, route, oversized, token=token), route, document, E.PAYLOAD_TOO_LARGE
    )


def test_an_unknown_path_is_documented_as_not_found(
    server: LiveService, document: dict[str, Any]
) -> None:
    nowhere = ServedRoute("GET", "/v1/nowhere", {}, ())
    reply = web.get(f"{server.url}{nowhere.path}", timeout=10)
    expect_documented_error(reply, nowhere, document, E.NOT_FOUND)


def test_a_path_parameter_that_matches_no_route_is_documented(
    server: LiveService, document: dict[str, Any], tokens: dict[str, str]
) -> None:
    """A reference holding `/` reaches no route: NOT_FOUND, listed on the operation's 404."""
    route = next(r for r in api_routes() if r.rule == "/v1/records/<reference>/revoke")
    reply = web.post(
        f"{server.url}/v1/records/a/b/revoke",
        headers={"Authorization": f"Bearer {tokens[ISSUER]}"},
        timeout=10,
    )
    expect_documented_error(reply, route, document, E.NOT_FOUND)
