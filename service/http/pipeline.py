"""The request pipeline every API route shares, as a Bottle plugin.

Routes declare what they need in their route config (`scope`, `body_limit`, `batch`,
`token_ip_limit`) and receive a `Call`; the plugin does the rest in a fixed order: IP rate limit,
bearer token, client rate limit, concurrent-batch slot, content type, body size, JSON, and finally
maps any `ServiceError` to the error object. Routes therefore hold no HTTP plumbing.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import bottle

from service.domain.clients import ROLE_SCOPES
from service.domain.context import Domain
from service.domain.errors import ServiceError
from service.domain.tokens import KeyNotYetKnown, Principal
from service.http.body import check_content_type, parse_json, read_body, too_large
from service.http.environ import ERROR_CODE_KEY, loopback_peer
from service.http.errors import as_oauth, error_body, error_headers, internal_error
from service.http.ratelimit import RateLimiter
from service.http.shared_limits import BatchSlots, Lease
from service.protocol.errors import ErrorCode
from service.protocol.schemas import WireModel
from service.storage.port import StoreUnavailable

log = logging.getLogger("service.http")


@dataclass(frozen=True, slots=True)
class Call:
    principal: Principal | None
    body: object
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """A route's answer: a protocol response model (sent as its `wire()` form), or a plain
    JSON object for the one body without a model (the OpenAPI document)."""

    status: int
    body: WireModel | dict[str, Any]
    headers: tuple[tuple[str, str], ...] = ()


Handler = Callable[[Call], Reply]


class ApiPlugin:
    name = "payslip_api"
    api = 2

    def __init__(
        self,
        domain: Domain,
        ip_limiter: RateLimiter,
        client_limiter: RateLimiter,
        token_ip_limiter: RateLimiter,
        batch_slots: BatchSlots,
        *,
        admin_network: bool = False,
    ) -> None:
        self._admin_network = admin_network
        self._domain = domain
        self._ip = ip_limiter
        self._client = client_limiter
        self._token_ip = token_ip_limiter
        self._batches = batch_slots  # per instance: all workers of one serve (shared_limits)

    def refusal_before_body(
        self, config: Mapping[str, Any], remote: str, headers: Mapping[str, str], limit: int
    ) -> ServiceError | None:
        """The first check of `apply`'s order that fails on the request's head alone (IP rate
        limit, bearer token and scope, media type, a declared length over `limit`), counting
        nothing: a server asks this before it reads the body, then the pipeline runs in full on
        what it was allowed to read.

        The token is judged on itself, with the signing keys as last read (`check_token`):
        this runs on the server's I/O thread, and a store read there made every connection wait
        whenever the store did (PostgreSQL refusing connections held them all for the pool's
        10 s). A disabled client's valid token therefore passes here, its body (within the
        limit) is read, and the pipeline refuses it; before any other refusal of its own this
        asks the client's state, as the pipeline would, so a disabled client is always told that
        first. A token whose signing key the keys as last read do not hold, while they are not
        recent (the store failing), is left to the pipeline too: the head's other checks (media
        type, declared length) still apply to it, so it may be refused for those first."""
        refusal = self._first_head_refusal(config, remote, headers, limit)
        if refusal is not None and config.get("oauth_errors"):
            return as_oauth(refusal)
        return refusal

    def _first_head_refusal(
        self, config: Mapping[str, Any], remote: str, headers: Mapping[str, str], limit: int
    ) -> ServiceError | None:
        for limiter, applies in ((self._ip, True), (self._token_ip, config.get("token_ip_limit"))):
            refusal = limiter.would_refuse(remote) if applies else None
            if refusal is not None:
                return refusal
        refusal = self._admin_refusal(config, remote)
        if refusal is not None:
            return refusal
        try:
            client_id, refusal = self._head_refusal(config, headers, limit)
            if refusal is not None and client_id is not None:
                refusal = self._domain.tokens.client_refusal(client_id) or refusal
        except StoreUnavailable:  # the client read: a 503
            return _store_unavailable()
        return refusal

    def _admin_refusal(self, config: Mapping[str, Any], remote: str) -> ServiceError | None:
        """FORBIDDEN for the admin API from beyond this computer, unless the server was started
        with `--admin-network` (issue 37): an admin credential then cannot be used, or guessed
        at, from the office network."""
        if config.get("scope") != ROLE_SCOPES["admin"] or self._admin_network:
            return None
        if loopback_peer(remote):
            return None
        return ServiceError(
            ErrorCode.FORBIDDEN,
            "the admin API answers on the service's own computer only "
            "(start the service with --admin-network to open it to the network)",
        )

    def _head_refusal(
        self, config: Mapping[str, Any], headers: Mapping[str, str], limit: int
    ) -> tuple[str | None, ServiceError | None]:
        """(the token's client, or None, and the first refusal of the head after the rate
        limits: token and scope, media type, declared length)."""
        client_id: str | None = None
        try:
            scope = config.get("scope")
            if scope:
                # A key the cached signing keys do not know yet: the request's own check decides.
                with contextlib.suppress(KeyNotYetKnown):
                    client_id, _ = self._domain.tokens.check_token(
                        headers.get("AUTHORIZATION"), str(scope), cached_keys=True
                    )
            if config.get("body_limit"):
                check_content_type({"CONTENT_TYPE": headers.get("CONTENT_TYPE", "")})
            declared = headers.get("CONTENT_LENGTH", "")
            if declared.isdigit() and int(declared) > limit:
                raise too_large(limit)
        except ServiceError as refusal:
            return client_id, refusal
        return client_id, None

    def apply(self, callback: Handler, route: bottle.Route) -> Callable[..., Any]:
        config = route.config

        # A route with `reads_client` reads the caller's client state with its own store read
        # (verify: one round trip for everything), so the token check skips that lookup.
        reads_client = bool(config.get("reads_client"))
        oauth_errors = bool(config.get("oauth_errors"))

        def refuse(error: ServiceError) -> bytes:
            if oauth_errors:
                error = as_oauth(error)
            return _respond(error.code.status, error_body(error), error_headers(error))

        def wrapper(**args: Any) -> bytes:
            environ = bottle.request.environ
            lease: Lease | None = None
            principal: Principal | None = None
            try:
                address = str(environ.get("REMOTE_ADDR", "-"))
                self._ip.check(address)
                if config.get("token_ip_limit"):
                    self._token_ip.check(address)
                refusal = self._admin_refusal(config, address)
                if refusal is not None:
                    raise refusal
                scope = config.get("scope")
                if scope:
                    principal = self._domain.tokens.authorize(
                        environ.get("HTTP_AUTHORIZATION"), scope, check_client=not reads_client
                    )
                    self._client.check(principal.client_id)
                if config.get("batch"):
                    lease = self._batches.try_acquire()
                    if lease is None:
                        raise ServiceError(
                            ErrorCode.SERVICE_UNAVAILABLE,
                            "this instance is processing its maximum number of batches",
                            retry_after=1,
                        )
                body: object = None
                limit = config.get("body_limit")
                if limit:
                    body = self._read(environ, int(limit), bool(config.get("optional_body")))
                reply = callback(Call(principal, body, args))
                return _respond(reply.status, reply.body, dict(reply.headers))
            except ServiceError as error:
                if reads_client and principal is not None and error.code != ErrorCode.UNAUTHORIZED:
                    # Refused before (or instead of) the route's own read: a disabled client
                    # is told that first, as on every other route.
                    error = self._client_refusal(principal) or error
                environ[ERROR_CODE_KEY] = error.code
                return refuse(error)
            except StoreUnavailable:
                log.warning(
                    "store unavailable in %s request_id=%s",
                    route.rule,
                    environ.get("payslip.request_id"),
                )
                return refuse(_store_unavailable())
            except Exception as exc:
                log.error(
                    "unhandled %s in %s request_id=%s",
                    type(exc).__name__,
                    route.rule,
                    environ.get("payslip.request_id"),
                )
                return refuse(internal_error())
            finally:
                if lease is not None:
                    lease.release()

        return wrapper

    def _client_refusal(self, principal: Principal) -> ServiceError | None:
        try:
            return self._domain.tokens.client_refusal(principal.client_id)
        except StoreUnavailable:
            return _store_unavailable()

    @staticmethod
    def _read(environ: dict[str, Any], limit: int, optional: bool) -> object:
        length = environ.get("CONTENT_LENGTH") or ""
        if optional and length in ("", "0") and not environ.get("CONTENT_TYPE"):
            return None
        check_content_type(environ)
        return parse_json(read_body(environ, limit))


def _store_unavailable() -> ServiceError:
    return ServiceError(
        ErrorCode.SERVICE_UNAVAILABLE, "the store is not answering; retry later", retry_after=5
    )


def _respond(status: int, body: WireModel | dict[str, Any], headers: dict[str, str]) -> bytes:
    """The one place a route's answer becomes bytes (so all are encoded alike: compact UTF-8)."""
    response = bottle.response
    response.status = status
    response.content_type = "application/json"
    for key, value in headers.items():
        response.set_header(key, value)
    if isinstance(body, WireModel):
        return body.wire_json()
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
