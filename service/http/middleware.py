"""WSGI middleware around the Bottle app: a request id and the security headers
(`SECURITY_HEADERS`) on every response, and a last-resort 500.

It wraps Bottle rather than living in a route plugin so that Bottle's own 404/405 answers and any
crash outside a route still get an `X-Request-ID` and the JSON error body.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from service.http.environ import REQUEST_ID_KEY, WsgiApp
from service.http.errors import (
    HSTS,
    SECURITY_HEADERS,
    error_headers,
    error_json,
    internal_error,
)
from service.http.log_text import logged_method, logged_path

log = logging.getLogger("service.http")
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def new_request_id() -> str:
    """96 random bits from the fast PRNG: a request id names a request for support, it guards
    nothing, and the CSPRNG's syscall per request measurably slowed a busy server."""
    return f"{random.getrandbits(96):024x}"


class RequestIdMiddleware:
    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        incoming = environ.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if REQUEST_ID_RE.match(incoming) else new_request_id()
        environ[REQUEST_ID_KEY] = request_id
        over_tls = environ.get("wsgi.url_scheme") == "https"
        started = time.perf_counter()
        status_seen: list[str] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            headers = [(k, v) for k, v in headers if k.lower() != "x-request-id"]
            headers.append(("X-Request-ID", request_id))
            present = {k.lower() for k, _ in headers}
            headers += [(k, v) for k, v in SECURITY_HEADERS.items() if k.lower() not in present]
            if over_tls:
                headers.append(HSTS)
            status_seen.append(status)
            return start_response(status, headers, exc_info)

        try:
            body = self._app(environ, start)
        except Exception as exc:  # the last resort: never a traceback to the client
            log.error("unhandled %s request_id=%s", type(exc).__name__, request_id)
            error = internal_error()
            start("500 Internal Server Error", list(error_headers(error).items()))
            body = [error_json(error)]
        status = status_seen[-1].split(" ", 1)[0] if status_seen else "-"
        # Successes are DEBUG: formatting and writing a line per request cost a third of the
        # server's throughput. Failures are INFO, with the request id support will be quoted.
        level = logging.DEBUG if status[:1] in ("2", "3") else logging.INFO
        if log.isEnabledFor(level):
            log.log(
                level,
                "%s %s %s request_id=%s %.1fms",
                logged_method(environ),
                logged_path(environ),  # never the path as sent: it may hold a payload
                status,
                request_id,
                (time.perf_counter() - started) * 1000,
            )
        return body
