"""Typed errors raised by `app.api_client` (spec "Errors", PROTOCOL §6).

Callers branch on the exception class (or `code`), never on message text, exactly as the spec asks
clients to branch on `code` rather than `error`/`detail`. One class per family lets the kiosk and
the issuer library say `except IvReused:` (re-encrypt with a fresh IV) or `except Conflict:` (the
reference is taken) without string matching.

These objects travel into GUI dialogs, logs and bug reports, so they deliberately hold only what
the server said about the failure (code, status, human text, field paths, request id,
Retry-After) and never the request: no body, no barcode text, no ciphertext, no token, no secret.
They are also never chained to an httpx exception, because an httpx exception holds the request
object and with it the `Authorization` header.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "Conflict",
    "DecryptionFailed",
    "EndpointNotFound",
    "FieldError",
    "Forbidden",
    "InternalError",
    "InvalidResponse",
    "IvReused",
    "KeyVersionUnavailable",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServiceUnavailable",
    "ServiceUnreachable",
    "Unauthorized",
    "UnsupportedMediaType",
    "ValidationFailed",
    "error_class_for",
    "fallback_code_for_status",
]

#: Longest server-supplied human text kept on an exception; the text is informational only and a
#: misbehaving proxy could otherwise stuff a whole HTML page into a dialog.
_MAX_TEXT = 300


class FieldError(dict[str, str]):
    """One `field_errors` item: `{"path": ..., "message": ...}` (a dict so it serialises as-is)."""

    @property
    def path(self) -> str:
        return self.get("path", "")

    @property
    def message(self) -> str:
        return self.get("message", "")


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


class ApiError(Exception):
    """A call to the service failed; `code` says how (spec Errors table, or a client-side code).

    `status` is the HTTP status (None when no response arrived), `retry_after` the server's
    `Retry-After` in seconds when it sent one, `request_id` the `X-Request-ID` to quote to support.
    """

    default_code = "API_ERROR"

    def __init__(
        self,
        code: str | None = None,
        status: int | None = None,
        message: str | None = None,
        field_errors: list[FieldError] | None = None,
        request_id: str | None = None,
        retry_after: int | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        self.code: str = code or self.default_code
        self.status = status
        self.message: str = _clip(message) or self.code
        self.field_errors: list[FieldError] = list(field_errors or [])
        self.request_id = request_id
        self.retry_after = retry_after
        self.reason = _clip(reason)
        super().__init__(self.code, self.status, self.message)

    def __str__(self) -> str:
        where = f" HTTP {self.status}" if self.status is not None else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        paths = ""
        if self.field_errors:
            paths = " (fields: " + ", ".join(fe.path or "<body>" for fe in self.field_errors) + ")"
        return f"{self.code}{where}: {self.message}{paths}{rid}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"message={self.message!r}, field_errors={self.field_errors!r}, "
            f"request_id={self.request_id!r}, retry_after={self.retry_after!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep the exception picklable (multiprocessing, some test runners) despite the custom
        # __init__ signature.
        return (
            _rebuild,
            (
                type(self),
                self.code,
                self.status,
                self.message,
                self.field_errors,
                self.request_id,
                self.retry_after,
                self.reason,
            ),
        )


def _rebuild(
    cls: type[ApiError],
    code: str,
    status: int | None,
    message: str,
    field_errors: list[FieldError],
    request_id: str | None,
    retry_after: int | None,
    reason: str | None,
) -> ApiError:
    return cls(code, status, message, field_errors, request_id, retry_after, reason=reason)


class ValidationFailed(ApiError):
    """The request failed strict validation; `field_errors[].path` names the fields at fault."""

    default_code = "VALIDATION_FAILED"


class DecryptionFailed(ApiError):
    """The barcode ciphertext could not be authenticated (tampered, truncated or foreign)."""

    default_code = "DECRYPTION_FAILED"


class Unauthorized(ApiError):
    """Credentials rejected: bad client id/secret, disabled client, or a token refused twice."""

    default_code = "UNAUTHORIZED"


class Forbidden(ApiError):
    """Authenticated, but this client may not use the operation (wrong role, scope or audience)."""

    default_code = "FORBIDDEN"


class NotFound(ApiError):
    """No record for the service reference (SERVICE_REFERENCE_NOT_FOUND)."""

    default_code = "SERVICE_REFERENCE_NOT_FOUND"


class EndpointNotFound(ApiError):
    """Unknown path or method (NOT_FOUND / METHOD_NOT_ALLOWED): a misconfigured base URL.

    Kept apart from `NotFound` so a wrong URL is never reported to a kiosk user as "no such
    payslip".
    """

    default_code = "NOT_FOUND"


class Conflict(ApiError):
    """The reference is already registered with different data; the first record is kept."""

    default_code = "CONFLICT"


class IvReused(ApiError):
    """The IV was already used by this issuer: encrypt again with a fresh IV, then resend.

    Deliberately not a `Conflict` subclass: the remedy differs (re-encrypt vs. new reference).
    """

    default_code = "IV_REUSED"


class PayloadTooLarge(ApiError):
    """The JSON body exceeds the route's size limit."""

    default_code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(ApiError):
    """The server refused the Content-Type (a client bug; this client always sends JSON)."""

    default_code = "UNSUPPORTED_MEDIA_TYPE"


class KeyVersionUnavailable(ApiError):
    """No live decryption key for the record (the key version was retired or is unknown)."""

    default_code = "KEY_VERSION_UNAVAILABLE"


class RateLimited(ApiError):
    """Rate limit hit; nothing was processed. `retry_after` says how long to wait."""

    default_code = "RATE_LIMITED"


class InternalError(ApiError):
    """The server failed unexpectedly (HTTP 500 or another unexplained 5xx)."""

    default_code = "INTERNAL_ERROR"


class ServiceUnavailable(ApiError):
    """A dependency or the batch capacity is unavailable (503/502/504); try again later."""

    default_code = "SERVICE_UNAVAILABLE"


class ServiceUnreachable(ApiError):
    """No usable response: connection refused or dropped, timed out, or the call deadline ran out.

    For a non-idempotent call whose request may have been sent, the outcome is unknown.
    """

    default_code = "SERVICE_UNREACHABLE"


class InvalidResponse(ApiError):
    """A success status with a body that is not the documented JSON (a proxy or a server bug)."""

    default_code = "INVALID_RESPONSE"


_BY_CODE: dict[str, type[ApiError]] = {
    "VALIDATION_FAILED": ValidationFailed,
    "DECRYPTION_FAILED": DecryptionFailed,
    "UNAUTHORIZED": Unauthorized,
    "FORBIDDEN": Forbidden,
    "SERVICE_REFERENCE_NOT_FOUND": NotFound,
    "NOT_FOUND": EndpointNotFound,
    "METHOD_NOT_ALLOWED": EndpointNotFound,
    "CONFLICT": Conflict,
    "IV_REUSED": IvReused,
    "PAYLOAD_TOO_LARGE": PayloadTooLarge,
    "UNSUPPORTED_MEDIA_TYPE": UnsupportedMediaType,
    "KEY_VERSION_UNAVAILABLE": KeyVersionUnavailable,
    "RATE_LIMITED": RateLimited,
    "INTERNAL_ERROR": InternalError,
    "SERVICE_UNAVAILABLE": ServiceUnavailable,
    "SERVICE_UNREACHABLE": ServiceUnreachable,
    "INVALID_RESPONSE": InvalidResponse,
}

_BY_STATUS: dict[int, str] = {
    400: "VALIDATION_FAILED",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "SERVICE_UNAVAILABLE",
    409: "CONFLICT",
    410: "KEY_VERSION_UNAVAILABLE",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "VALIDATION_FAILED",
    429: "RATE_LIMITED",
    502: "SERVICE_UNAVAILABLE",
    503: "SERVICE_UNAVAILABLE",
    504: "SERVICE_UNAVAILABLE",
}


def error_class_for(code: str) -> type[ApiError]:
    """The exception class for a wire `code`; unknown (future) codes get the `ApiError` base."""
    return _BY_CODE.get(code, ApiError)


def fallback_code_for_status(status: int) -> str:
    """A code for an error response that did not carry one (non-JSON body from a proxy, say).

    Gateways and load balancers answer 502/503/504 with HTML; those mean "try later", so they map
    to SERVICE_UNAVAILABLE. Any other unexplained 5xx is INTERNAL_ERROR.
    """
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return "INTERNAL_ERROR"
    return "HTTP_ERROR"
