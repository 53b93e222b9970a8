"""What the layers of the HTTP stack leave for one another in a request's WSGI environ, and the
shape of a WSGI app.

Its own module so that the middleware, the metrics, the pipeline and the routes can all name
these keys without importing one another (they once formed an import circle through the
middleware, which held them)."""

from __future__ import annotations

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
