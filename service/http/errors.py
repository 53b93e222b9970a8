"""The one place where an error becomes an HTTP response (PROTOCOL §6).

Status, title and whether `Retry-After` is sent all come from `ErrorCode`; the body is the
protocol's `ErrorBody`, so the document's Error schema and what is sent cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

from service.domain.errors import ServiceError
from service.protocol.errors import ErrorBody, ErrorCode


def error_body(error: ServiceError) -> dict[str, Any]:
    return ErrorBody(
        error=error.oauth_error or error.code.summary,
        code=error.code,
        detail=error.detail,
        reason=error.reason or None,
        field_errors=error.field_errors or None,
    ).wire()


SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
"""On every answer of the service: the app's (service.http.middleware adds them), and the
refusals a server answers from a request's head before the app sees it (through
`error_headers`)."""


HSTS = ("Strict-Transport-Security", "max-age=31536000")
"""On every answer sent over HTTPS (a browser that once reached the service over HTTPS never
tries plain HTTP to it again, for a year)."""


def error_headers(error: ServiceError) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Cache-Control": "no-store", **SECURITY_HEADERS}
    if error.code is ErrorCode.UNAUTHORIZED:
        # A refused Basic client is challenged with Basic (service.http.client_auth).
        headers["WWW-Authenticate"] = getattr(error, "challenge", 'Bearer error="invalid_token"')
    if error.code.retry_after:
        headers["Retry-After"] = str(max(1, error.retry_after or 1))
    return headers


def error_json(error: ServiceError) -> bytes:
    return json.dumps(error_body(error)).encode("utf-8")


def internal_error() -> ServiceError:
    return ServiceError(
        ErrorCode.INTERNAL_ERROR, "an unexpected error occurred; quote the request id"
    )
