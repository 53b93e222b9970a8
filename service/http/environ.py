"""What the layers of the HTTP stack leave for one another in a request's WSGI environ, and the
shape of a WSGI app.

Its own module so that the middleware, the metrics, the pipeline and the routes can all name
these keys without importing one another (they once formed an import circle through the
middleware, which held them)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

REQUEST_ID_KEY = "payslip.request_id"
"""The request's id (the client's X-Request-ID if well-formed, else a fresh one): set by the
middleware, logged with every line about the request."""
OUTCOME_KEY = "payslip.outcome"
"""Where a route or the pipeline notes a verification's verdict or error code."""
ERROR_CODE_KEY = "payslip.error_code"
"""The error code the pipeline answered with, for the metrics."""


def loopback_peer(address: str) -> bool:
    """Whether a connection's peer address (REMOTE_ADDR) is this computer: the admin API and
    `/metrics` answer only such callers unless the server was started with `--admin-network`."""
    try:
        peer = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(peer, "ipv4_mapped", None)
    return bool(peer.is_loopback or (mapped is not None and mapped.is_loopback))
