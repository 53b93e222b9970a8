"""The WSGI application factory: a fresh Bottle instance per call, never Bottle's default app."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import bottle

from service.composition.config import ServiceConfig
from service.domain.clock import Clock
from service.domain.context import Domain, build_domain
from service.domain.errors import ServiceError
from service.http.environ import WsgiApp
from service.http.errors import as_oauth, error_body, error_headers
from service.http.handlers import Context
from service.http.metrics import ObservedApp
from service.http.middleware import RequestIdMiddleware
from service.http.openapi import build_openapi
from service.http.phone import add_phone_routes, browser_aware_not_found
from service.http.pipeline import ApiPlugin
from service.http.preflight import Preflight, build_preflight
from service.http.ratelimit import RateLimiter
from service.http.routes import ROUTES, add_routes
from service.http.shared_limits import LocalBatchSlots, RedisBatchSlots, SharedState
from service.protocol.errors import ErrorCode
from service.storage.port import Store

OAUTH_PATHS = frozenset(route.path for route in ROUTES if route.oauth_errors)
"""Paths whose every refusal is OAuth's (the token endpoint): a wrong method there too."""


def _json_error(code: ErrorCode, detail: str) -> Callable[[bottle.HTTPError], str]:
    def handler(_: bottle.HTTPError) -> str:
        error = ServiceError(code, detail)
        if bottle.request.path in OAUTH_PATHS:
            error = as_oauth(error)
        for key, value in error_headers(error).items():
            bottle.response.set_header(key, value)
        return json.dumps(error_body(error))

    return handler


def build_bottle(
    config: ServiceConfig, domain: Domain, shared: SharedState | None = None
) -> bottle.Bottle:
    """`shared` (Redis) makes the limits hold across workers and hosts; None keeps them in
    this process's memory (single-process servers)."""
    app = bottle.Bottle()
    app.config["json.disable"] = True  # replies are our own JSON (Bottle 0.13's setting)
    limits = config.rate_limits
    app.install(
        ApiPlugin(
            domain,
            ip_limiter=RateLimiter(limits.per_ip, "ip", shared),
            client_limiter=RateLimiter(limits.per_client, "client", shared),
            token_ip_limiter=RateLimiter(limits.token_per_ip, "token-ip", shared),
            batch_slots=(
                RedisBatchSlots(shared, config.instance_id, config.max_concurrent_batches)
                if shared is not None
                else LocalBatchSlots(config.max_concurrent_batches)
            ),
            admin_network=config.admin_network,
        )
    )
    add_routes(app, Context(domain, config.body_limits, shared, build_openapi(config)))
    pages = add_phone_routes(app, config)
    app.error_handler.update(
        {
            404: browser_aware_not_found(pages, _json_error(ErrorCode.NOT_FOUND, "no such path")),
            405: _json_error(ErrorCode.METHOD_NOT_ALLOWED, "this path does not accept that method"),
            500: _json_error(
                ErrorCode.INTERNAL_ERROR, "an unexpected error occurred; quote the request id"
            ),
        }
    )
    return app


@dataclass(frozen=True, slots=True)
class ServedApp:
    """The WSGI app, and what a server that can refuse a request from its head, before reading
    its body (waitress, through service.hosting.waitress_guard), asks first."""

    wsgi: WsgiApp
    preflight: Preflight
    refresh_keys: Callable[[], None]
    """Re-read the token signing keys now: a server that judges heads by the keys as last read
    calls it every half refresh period to keep them recent (service.hosting.keys_keeper)."""


def create_app(
    config: ServiceConfig,
    store: Store,
    clock: Clock,
    shared: SharedState | None = None,
    *,
    access_log: bool = False,
) -> WsgiApp:
    """The WSGI app alone, for servers that read the body before the app sees the request."""
    return build_app(config, store, clock, shared, access_log=access_log).wsgi


def build_app(
    config: ServiceConfig,
    store: Store,
    clock: Clock,
    shared: SharedState | None = None,
    *,
    access_log: bool = False,
) -> ServedApp:
    domain = build_domain(
        store,
        config.master_key,
        clock,
        config.audiences,
        config.environment,
        config.scan_base,
        config.token_ttl,
    )
    bottle_app = build_bottle(config, domain, shared)
    observed = ObservedApp(bottle_app, access_log_enabled=access_log, network=config.admin_network)
    plugin = next(p for p in bottle_app.plugins if isinstance(p, ApiPlugin))
    return ServedApp(
        RequestIdMiddleware(observed), build_preflight(bottle_app, plugin), domain.signing.refresh
    )
