"""The one place where an error becomes an HTTP response (PROTOCOL §6).

Status, title and whether `Retry-After` is sent all come from `ErrorCode`; the body is the
protocol's `ErrorBody`, so the document's Error schema and what is sent cannot drift apart.

An error with an OAuth error value (every refusal of the token endpoint, `as_oauth`) also
carries RFC 6749 §5.2's `error_description`: OAuth client libraries (authlib, oauthlib) put that
field, never our `detail`, in the exception they raise, so without it an integrator saw
`invalid_scope: ` with nothing after the colon.
"""

from __future__ import annotations

import json
import re
from typing import Any

from service.domain.errors import ServiceError
from service.domain.tokens import InsufficientScope
from service.protocol.errors import ErrorBody, ErrorCode

OAUTH_ERRORS: dict[ErrorCode, str] = {
    ErrorCode.UNAUTHORIZED: "invalid_client",
    ErrorCode.FORBIDDEN: "invalid_scope",
    ErrorCode.RATE_LIMITED: "temporarily_unavailable",
    ErrorCode.SERVICE_UNAVAILABLE: "temporarily_unavailable",
    ErrorCode.INTERNAL_ERROR: "server_error",
}
"""OAuth's error value for a token-endpoint refusal the grant itself did not name (the rate
limits, the pipeline's body checks, a failure). RFC 6749 §5.2 has no value for "try later" or
"failed"; `temporarily_unavailable` and `server_error` are its §4.1.2.1 values, which OAuth
libraries know. Anything else is a malformed request."""

_NOT_IN_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
"""RFC 6749 §5.2: `error_description` holds printable ASCII without `"` and `\\`."""


def _description(detail: str) -> str:
    return _NOT_IN_DESCRIPTION.sub(lambda found: "'" if found[0] == '"' else "?", detail)


def as_oauth(error: ServiceError) -> ServiceError:
    """The token endpoint's form of a refusal: with an OAuth error value (a new error, when the
    refusal named none; refusals of Basic credentials always name one)."""
    if error.oauth_error:
        return error
    return ServiceError(
        error.code,
        error.detail,
        field_errors=error.field_errors,
        retry_after=error.retry_after,
        oauth_error=OAUTH_ERRORS.get(error.code, "invalid_request"),
        reason=error.reason,
    )


def error_body(error: ServiceError) -> dict[str, Any]:
    oauth = error.oauth_error
    return ErrorBody(
        error=oauth or error.code.summary,
        code=error.code,
        detail=error.detail,
        error_description=_description(error.detail) if oauth else None,
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
    elif isinstance(error, InsufficientScope):
        # RFC 6750 §3.1: the scope the operation needs, where bearer-token libraries look.
        headers["WWW-Authenticate"] = f'Bearer error="insufficient_scope", scope="{error.needed}"'
    if error.code.retry_after:
        headers["Retry-After"] = str(max(1, error.retry_after or 1))
    return headers


def error_json(error: ServiceError) -> bytes:
    return json.dumps(error_body(error)).encode("utf-8")


def internal_error() -> ServiceError:
    return ServiceError(
        ErrorCode.INTERNAL_ERROR, "an unexpected error occurred; quote the request id"
    )
