"""Typed errors raised by `app.api` (spec "Errors", PROTOCOL §6).

Callers branch on the exception class (or `code`), never on message text, exactly as the spec asks
clients to branch on `code` rather than `error`/`detail`. One class per family lets the kiosk and
the issuer library say `except IvReused:` (re-encrypt with a fresh IV) or `except Conflict:` (the
reference is taken) without string matching.

These objects travel into GUI dialogs, logs and bug reports, so they deliberately hold only what
the server said about the failure (code, status, human text, field paths, request id,
Retry-After) and never the request: no body, no barcode text, no ciphertext, no token, no secret.
They are also never chained to an httpx exception, because an httpx exception holds the request
object and with it the `Authorization` header.

The wire codes, their statuses and the `field_errors` item type are the protocol's
(`service.protocol.errors`); this module adds one exception class per code and the client's own
codes for failures that never reached the service (SERVICE_UNREACHABLE, INVALID_RESPONSE,
HTTP_ERROR, API_ERROR).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from service.protocol.errors import ErrorCode, FieldError

__all__ = [
    "ApiError",
    "ClientCode",
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
    "unreachable_words",
]

#: Longest server-supplied human text kept on an exception; the text is informational only and a
#: misbehaving proxy could otherwise stuff a whole HTML page into a dialog.
_MAX_TEXT = 300


def _field_errors(items: Iterable[FieldError | Mapping[str, Any]] | None) -> list[FieldError]:
    """The protocol's FieldError for each item; `{"path", "message"}` mappings are converted."""
    found: list[FieldError] = []
    for item in items or ():
        if isinstance(item, FieldError):
            found.append(item)
        else:
            found.append(FieldError(str(item.get("path", "")), str(item.get("message", ""))))
    return found


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


class ClientCode(StrEnum):
    """The client's own codes, for failures that never got a usable answer from the service (the
    wire codes are :class:`service.protocol.errors.ErrorCode`'s)."""

    SERVICE_UNREACHABLE = "SERVICE_UNREACHABLE"
    INVALID_RESPONSE = "INVALID_RESPONSE"
    HTTP_ERROR = "HTTP_ERROR"
    """An error status that came without a code and means nothing the protocol names."""
    API_ERROR = "API_ERROR"
    """Anything else (and a code this app does not know yet)."""


_BY_CODE: dict[str, type[ApiError]] = {}
"""One class per wire code (every `ErrorCode`), and the client's own codes; filled by the
classes themselves (`class X(ApiError, code=...)`), so a code and its class are named once."""


class ApiError(Exception):
    """A call to the service failed; `code` says how (spec Errors table, or a client-side code).

    `status` is the HTTP status (None when no response arrived), `retry_after` the server's
    `Retry-After` in seconds when it sent one, `request_id` the `X-Request-ID` to quote to support.
    """

    default_code: str = ClientCode.API_ERROR

    def __init_subclass__(cls, code: str | None = None, also: tuple[str, ...] = ()) -> None:
        """`code`: the wire code this class stands for (its default); `also`: more codes it
        is raised for."""
        super().__init_subclass__()
        if code is not None:
            cls.default_code = code
            for each in (code, *also):
                _BY_CODE[str(each)] = cls

    def __init__(
        self,
        code: str | None = None,
        status: int | None = None,
        message: str | None = None,
        field_errors: Iterable[FieldError | Mapping[str, Any]] | None = None,
        request_id: str | None = None,
        retry_after: int | None = None,
        *,
        reason: str | None = None,
    ) -> None:
        self.code: str = str(code or self.default_code)
        self.status = status
        self.message: str = _clip(message) or self.code
        self.field_errors: list[FieldError] = _field_errors(field_errors)
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


class ValidationFailed(ApiError, code=ErrorCode.VALIDATION_FAILED):
    """The request failed strict validation; `field_errors[].path` names the fields at fault."""


class DecryptionFailed(ApiError, code=ErrorCode.DECRYPTION_FAILED):
    """The barcode ciphertext could not be authenticated (tampered, truncated or foreign)."""


class Unauthorized(ApiError, code=ErrorCode.UNAUTHORIZED):
    """Credentials rejected: bad client id/secret, disabled client, or a token refused twice."""


class Forbidden(ApiError, code=ErrorCode.FORBIDDEN):
    """Authenticated, but this client may not use the operation (wrong role, scope or audience)."""


class NotFound(ApiError, code=ErrorCode.SERVICE_REFERENCE_NOT_FOUND):
    """No record for the service reference (SERVICE_REFERENCE_NOT_FOUND)."""


class EndpointNotFound(ApiError, code=ErrorCode.NOT_FOUND, also=(ErrorCode.METHOD_NOT_ALLOWED,)):
    """Unknown path or method (NOT_FOUND / METHOD_NOT_ALLOWED): a misconfigured base URL.

    Kept apart from `NotFound` so a wrong URL is never reported to a kiosk user as "no such
    payslip".
    """


class Conflict(ApiError, code=ErrorCode.CONFLICT):
    """The reference is already registered with different data; the first record is kept."""


class IvReused(ApiError, code=ErrorCode.IV_REUSED):
    """The IV was already used by this issuer: encrypt again with a fresh IV, then resend.

    Deliberately not a `Conflict` subclass: the remedy differs (re-encrypt vs. new reference).
    """


class PayloadTooLarge(ApiError, code=ErrorCode.PAYLOAD_TOO_LARGE):
    """The JSON body exceeds the route's size limit."""


class UnsupportedMediaType(ApiError, code=ErrorCode.UNSUPPORTED_MEDIA_TYPE):
    """The server refused the Content-Type (a client bug; this client always sends JSON)."""


class KeyVersionUnavailable(ApiError, code=ErrorCode.KEY_VERSION_UNAVAILABLE):
    """No live decryption key for the record (the key version was retired or is unknown)."""


class RateLimited(ApiError, code=ErrorCode.RATE_LIMITED):
    """Rate limit hit; nothing was processed. `retry_after` says how long to wait."""


class InternalError(ApiError, code=ErrorCode.INTERNAL_ERROR):
    """The server failed unexpectedly (HTTP 500 or another unexplained 5xx)."""


class ServiceUnavailable(ApiError, code=ErrorCode.SERVICE_UNAVAILABLE):
    """A dependency or the batch capacity is unavailable (503/502/504); try again later."""


class ServiceUnreachable(ApiError, code=ClientCode.SERVICE_UNREACHABLE):
    """No usable response: connection refused or dropped, timed out, or the call deadline ran out.

    For a non-idempotent call whose request may have been sent, the outcome is unknown.
    `reason` says how it failed (one of `UNREACHABLE_WORDS`' keys) and `address` names the
    service tried (scheme, host and port only: no path, no query), so the words shown to a user
    can say "refused" or "did not answer in time" truthfully and name the address.
    """

    def __init__(self, *args: Any, address: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address = address

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_unreachable,
            (self.code, self.message, self.request_id, self.reason, self.address),
        )


def _rebuild_unreachable(
    code: str, message: str, request_id: str | None, reason: str | None, address: str | None
) -> ServiceUnreachable:
    return ServiceUnreachable(code, None, message, None, request_id, reason=reason, address=address)


UNREACHABLE_WORDS: dict[str, str] = {
    "refused": "The service at {address} refused the connection: nothing is listening there. "
    "Is the service running, and is the address right?",
    "unknown_host": "The address {address} is not known on this network. Check the address.",
    "no_answer": "The service at {address} did not answer in time. Check the address and the "
    "network.",
    "dropped": "The service at {address} dropped the connection before answering.",
    "network": "The service at {address} cannot be reached (network error). Check the network.",
    "certificate": "The service at {address} showed a certificate other than the one this desk "
    "trusts, so nothing was sent to it. If the office renewed its certificate, ask your "
    "administrator for its new fingerprint; otherwise something else is answering there.",
}
"""Each way of not reaching the service, in words that name the address tried."""


def unreachable_words(exc: ApiError) -> str | None:
    """Plain words for a `ServiceUnreachable` that say how it failed and name the address, or
    None for any other error (or one without an address)."""
    address = getattr(exc, "address", None)
    if not isinstance(exc, ServiceUnreachable) or not address:
        return None
    template = UNREACHABLE_WORDS.get(exc.reason or "", UNREACHABLE_WORDS["no_answer"])
    return template.format(address=address)


class InvalidResponse(ApiError, code=ClientCode.INVALID_RESPONSE):
    """A success status with a body that is not the documented JSON (a proxy or a server bug)."""


_GENERIC: tuple[ErrorCode, ...] = (
    ErrorCode.VALIDATION_FAILED,
    ErrorCode.UNAUTHORIZED,
    ErrorCode.FORBIDDEN,
    ErrorCode.NOT_FOUND,
    ErrorCode.METHOD_NOT_ALLOWED,
    ErrorCode.CONFLICT,
    ErrorCode.KEY_VERSION_UNAVAILABLE,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    ErrorCode.RATE_LIMITED,
    ErrorCode.SERVICE_UNAVAILABLE,
)
"""For a status that came without a code, the least specific code the protocol sends with it:
a bare 404 is an unknown path (NOT_FOUND), never "no such payslip"."""

_BY_STATUS: dict[int, str] = {
    **{code.status: code for code in _GENERIC},
    # Not statuses the service sends, but proxies and gateways do.
    408: ErrorCode.SERVICE_UNAVAILABLE,
    422: ErrorCode.VALIDATION_FAILED,
    502: ErrorCode.SERVICE_UNAVAILABLE,
    504: ErrorCode.SERVICE_UNAVAILABLE,
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
        return ErrorCode.INTERNAL_ERROR
    return ClientCode.HTTP_ERROR
