"""Shared checks for the HTTP tests: the one error shape every route answers with, and the
routes themselves, read from the Bottle app the service builds (never a copied list)."""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from service.composition.config import ServiceConfig
from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    make_config,
    open_store,
)
from service.http.app import build_bottle
from service.http.routes import UNROUTED
from service.protocol.encoding import b64url_decode
from service.protocol.errors import ErrorBody, ErrorCode

ISSUER = "service:issuer"
VERIFIER = "service:verifier"
ADMIN = "service:admin"
SAMPLE_PARAMETER = "AAAAAAAAAAAAAAAAAAAAAA"
"""What a path parameter is filled with: a well-formed reference no record has."""


def expect_error(reply: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """PROTOCOL §6: the status, a JSON error object with `code` and `error`, an X-Request-ID,
    and `WWW-Authenticate: Bearer` on a 401."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.headers.get("x-request-id")
    body = reply.json()
    assert body["code"] == code, body
    assert isinstance(body["error"], str) and body["error"]
    if status == 401:
        assert reply.headers["www-authenticate"].startswith("Bearer")
    return body


def expect_new_issuer(issuer: dict[str, Any]) -> None:
    """What creating an issuer hands out, the same over HTTP and from `admin create-issuer`:
    its id, client credentials and the first key (version `<issuer_id>.1`, 32 bytes)."""
    assert set(issuer) == {
        "issuer_id",
        "client_id",
        "client_secret",
        "key_version",
        "encryption_key",
    }
    assert issuer["key_version"] == f"{issuer['issuer_id']}.1"
    assert len(b64url_decode(issuer["encryption_key"])) == 32


@dataclass(frozen=True)
class ServedRoute:
    """One route of the service's Bottle app, with the options it was declared with."""

    method: str
    rule: str
    options: Mapping[str, Any]
    skip: tuple[str, ...]

    @property
    def api(self) -> bool:
        """An API route (JSON in and out, behind the pipeline), not a phone-page asset."""
        return "payslip_api" not in self.skip

    @property
    def template(self) -> str:
        """The path as the OpenAPI document writes it: `/v1/records/{reference}/revoke`."""
        return re.sub(r"<(\w+)(?::[^>]*)?>", r"{\1}", self.rule)

    @property
    def path(self) -> str:
        """A concrete path that reaches this route."""
        return re.sub(r"<[^>]+>", SAMPLE_PARAMETER, self.rule)

    @property
    def scope(self) -> str | None:
        return self.options.get("scope")

    @property
    def body_limit(self) -> int | None:
        limit = self.options.get("body_limit") or self.options.get("preflight_limit")
        return int(limit) if limit else None

    @property
    def reads_body(self) -> bool:
        return self.body_limit is not None

    @property
    def needs_body(self) -> bool:
        return self.reads_body and not self.options.get("optional_body")

    def __str__(self) -> str:
        return f"{self.method} {self.rule}"


@functools.cache
def served_routes() -> tuple[ServedRoute, ...]:
    """Every route of the Bottle app `service.http.app.build_bottle` makes, built over a
    throwaway instance (routes do not depend on the data, only on the code)."""
    with tempfile.TemporaryDirectory(prefix="payslip-routes-") as tmp:
        data_dir = Path(tmp) / "data"
        init_instance(data_dir)
        store = open_store(data_dir)
        try:
            config: ServiceConfig = make_config(load_master_key(data_dir), "http://routes.test")
            app = build_bottle(config, domain_for(store, config))
            return tuple(
                ServedRoute(
                    route.method,
                    route.rule,
                    dict(route.config),
                    tuple(str(item) for item in route.skiplist),
                )
                for route in app.routes
            )
        finally:
            store.close()


def api_routes() -> list[ServedRoute]:
    return [route for route in served_routes() if route.api]


def documented_codes(document: dict[str, Any], route: ServedRoute, status: int) -> list[str]:
    """The codes the OpenAPI document allows for this route's `status` answer ([] if none).

    A request that reaches no operation (an unknown path or a method the path does not accept)
    is documented once, under `components.responses`."""
    operation = document["paths"].get(route.template, {}).get(route.method.lower())
    if operation is not None and str(status) in operation["responses"]:
        response = operation["responses"][str(status)]
    else:
        unrouted = {code.status: name for name, (code, _) in UNROUTED.items()}
        if status not in unrouted:
            return []
        response = document["components"]["responses"][unrouted[status]]
    schema = response["content"]["application/json"]["schema"]
    assert schema["allOf"] == [{"$ref": "#/components/schemas/Error"}], schema
    return list(schema["properties"]["code"]["enum"])


def expect_documented_error(
    reply: httpx.Response, route: ServedRoute, document: dict[str, Any], code: ErrorCode
) -> ErrorBody:
    """The error shape of PROTOCOL §6 on `route`: `code`'s own status, a JSON error object that
    parses as the protocol's ErrorBody, an X-Request-ID, no caching, the headers the code needs,
    and a status and code the OpenAPI document lists for this route."""
    where = f"{route} -> {reply.status_code} {reply.text[:300]}"
    assert reply.status_code == code.status, where
    assert reply.headers["content-type"].startswith("application/json"), where
    assert reply.headers.get("x-request-id"), where
    assert reply.headers.get("cache-control") == "no-store", where
    body = ErrorBody.model_validate(reply.json())
    assert body.code is code, where
    assert body.error.strip(), where
    if code is ErrorCode.UNAUTHORIZED:
        assert reply.headers["www-authenticate"].startswith("Bearer"), where
    if code.retry_after:
        assert reply.headers["retry-after"].isdigit(), where
    assert code in documented_codes(document, route, code.status), (
        f"{route}: {code} ({code.status}) is not in the OpenAPI document"
    )
    return body
