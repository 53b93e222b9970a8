"""Prometheus metrics and the JSON access log, as one WSGI middleware around the app.

What is measured, and what never is: labels are route *templates* (`/v1/records/<reference>/revoke`,
never the reference), methods, statuses, verdicts and error codes, limit names. No reference, body,
token, IP address or personal data ever becomes a label or a log field.

Under several workers (gunicorn) prometheus-client runs in multiprocess mode: the master sets
`PROMETHEUS_MULTIPROC_DIR` before the workers import this module, each worker writes its own
files there, and `/metrics` (answered by whichever worker gets the request) adds them all up.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

from service.domain.errors import ServiceError
from service.http.environ import (
    ERROR_CODE_KEY,
    OUTCOME_KEY,
    REQUEST_ID_KEY,
    WsgiApp,
    loopback_peer,
)
from service.http.errors import error_headers, error_json
from service.protocol.errors import ErrorCode

access_log = logging.getLogger("service.access")
log = logging.getLogger("service.metrics")

REQUESTS = Counter(
    "payslip_http_requests",
    "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "payslip_http_request_duration_seconds",
    "Time from the request reaching the app to its response, by route template",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
VERIFICATIONS = Counter(
    "payslip_verifications",
    "Verification requests by outcome (verified, revoked, or the error code)",
    ["outcome"],
)
BATCH_RECORDS = Histogram(
    "payslip_batch_records",
    "Records per registration batch",
    buckets=(1, 10, 50, 100, 250, 500, 750, 1000),
)
RATE_LIMITED = Counter(
    "payslip_rate_limited", "Requests refused with RATE_LIMITED, by limit", ["limit"]
)
REDIS_FAIL_OPEN = Counter(
    "payslip_redis_fail_open",
    "Requests let through without a shared limit because Redis did not answer",
    ["what"],
)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
VERIFY_ROUTES = frozenset({"/v1/verifications/payload"})


def note_fail_open(what: str) -> None:
    REDIS_FAIL_OPEN.labels(what).inc()


def render() -> tuple[bytes, str]:
    """The exposition text: every worker's figures when in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


def _metrics_refused(
    environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    """`/metrics` asked from beyond this computer: FORBIDDEN, as the admin API answers."""
    failure = ServiceError(
        ErrorCode.FORBIDDEN,
        "the metrics answer on the service's own computer only "
        "(start the service with --admin-network to open them to the network)",
    )
    environ[ERROR_CODE_KEY] = failure.code.value
    body = error_json(failure)
    headers = [*error_headers(failure).items(), ("Content-Length", str(len(body)))]
    start_response(f"{failure.code.status} Forbidden", headers)
    return [body]


class ObservedApp:
    """Counts, times and (optionally) logs every request as one JSON line; answers `/metrics`."""

    def __init__(
        self, app: WsgiApp, *, access_log_enabled: bool = False, network: bool = False
    ) -> None:
        self._app = app
        self._log = access_log_enabled
        self._network = network
        """`/metrics` answers callers beyond this computer too (`serve --admin-network`)."""

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/metrics" and environ.get("REQUEST_METHOD") == "GET":
            if self._network or loopback_peer(str(environ.get("REMOTE_ADDR", ""))):
                text, media = render()
                start_response("200 OK", [("Content-Type", media), ("Cache-Control", "no-store")])
                return [text]
            # The operator's figures, like the admin API, stay on this computer (issue 37 #2):
            # answered, counted and logged as any other refusal.
            return self._observed(environ, start_response, _metrics_refused)
        return self._observed(environ, start_response, self._app)

    def _observed(
        self, environ: dict[str, Any], start_response: Callable[..., Any], app: WsgiApp
    ) -> Iterable[bytes]:
        started = time.perf_counter()
        statuses: list[str] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            statuses.append(status)
            return start_response(status, headers, exc_info)

        body = app(environ, start)
        elapsed = time.perf_counter() - started
        status = statuses[-1].split(" ", 1)[0] if statuses else "-"
        try:
            self._observe(environ, status, elapsed)
        except Exception as exc:  # metrics never fail a request that succeeded
            log.warning("metrics not recorded: %s", type(exc).__name__)
        return body

    def _observe(self, environ: dict[str, Any], status: str, elapsed: float) -> None:
        route = environ.get("bottle.route")
        template = str(route.rule) if route is not None else "unmatched"
        method = str(environ.get("REQUEST_METHOD", "-"))
        method = method if method in METHODS else "other"  # a label set must stay small
        REQUESTS.labels(method, template, status).inc()
        LATENCY.labels(template).observe(elapsed)
        if template in VERIFY_ROUTES:
            outcome = environ.get(OUTCOME_KEY) or environ.get(ERROR_CODE_KEY) or f"http_{status}"
            VERIFICATIONS.labels(str(outcome)).inc()
        if self._log:
            access_log.info(
                json.dumps(
                    {
                        "time": round(time.time(), 3),
                        "method": method,
                        "route": template,
                        "status": int(status) if status.isdigit() else status,
                        "duration_ms": round(elapsed * 1000, 2),
                        "request_id": environ.get(REQUEST_ID_KEY),
                    },
                    separators=(",", ":"),
                )
            )
