"""The error vocabulary of the wire (spec "Errors", PROTOCOL §6), written once for both sides.

Every error code the service can answer with is a member of `ErrorCode`, and the member carries
everything either side needs to know about it: the HTTP status it travels with, the short title
that fills the error object's `error` field, whether `Retry-After` comes with it, and what it
means to a verifier at a desk (`verdict`). The service maps a raised code to a response with it,
the OpenAPI document lists it, and the app decides VERIFIED / NOT VERIFIED / CANNOT VERIFY
from it; nobody keeps a second table.

`FieldError` is the one `field_errors` item (schema validation, the domain's errors, the app's
client), and `ErrorBody` is the error object itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from .vocabulary import Verdict

__all__ = ["ErrorBody", "ErrorCode", "FieldError"]


class ErrorCode(StrEnum):
    """A wire error code. `ErrorCode.CONFLICT == "CONFLICT"`: members are the strings on the wire.

    Each member also carries `status` (HTTP), `summary` (the title that fills the error object's
    `error` text, except on the token endpoint, which carries OAuth's error value there; not
    called `title`, which is a `str` method), `verdict` (meaning for a
    verifier: only codes that say something about the *document* are `not_verified`) and
    `retry_after` (the response carries a `Retry-After` header).
    """

    status: int
    summary: str
    verdict: Verdict
    retry_after: bool

    def __new__(
        cls, value: str, status: int, summary: str, verdict: Verdict, retry_after: bool = False
    ) -> ErrorCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.status = status
        member.summary = summary
        member.verdict = verdict
        member.retry_after = retry_after
        return member

    @classmethod
    def known(cls, code: object) -> ErrorCode | None:
        """The member for a wire string, or None for a code this side does not know (a newer
        peer's). Member names are their values, so the lookup is by name."""
        return cls.__members__.get(code) if isinstance(code, str) else None

    # The document was checked and is not good.
    VALIDATION_FAILED = (
        "VALIDATION_FAILED",
        400,
        "The request failed validation",
        Verdict.NOT_VERIFIED,
    )
    DECRYPTION_FAILED = (
        "DECRYPTION_FAILED",
        400,
        "The barcode could not be authenticated",
        Verdict.NOT_VERIFIED,
    )
    SERVICE_REFERENCE_NOT_FOUND = (
        "SERVICE_REFERENCE_NOT_FOUND",
        404,
        "No record for this reference",
        Verdict.NOT_VERIFIED,
    )
    KEY_VERSION_UNAVAILABLE = (
        "KEY_VERSION_UNAVAILABLE",
        410,
        "No live decryption key for this record",
        Verdict.NOT_VERIFIED,
    )
    # The check itself failed: nothing is known about the document.
    UNAUTHORIZED = ("UNAUTHORIZED", 401, "Missing or invalid credentials", Verdict.CANNOT_VERIFY)
    FORBIDDEN = ("FORBIDDEN", 403, "Not permitted", Verdict.CANNOT_VERIFY)
    CONFLICT = (
        "CONFLICT",
        409,
        "Reference already registered with different data",
        Verdict.CANNOT_VERIFY,
    )
    IV_REUSED = ("IV_REUSED", 409, "The IV was already used by this issuer", Verdict.CANNOT_VERIFY)
    PAYLOAD_TOO_LARGE = (
        "PAYLOAD_TOO_LARGE",
        413,
        "The request body is too large",
        Verdict.CANNOT_VERIFY,
    )
    UNSUPPORTED_MEDIA_TYPE = (
        "UNSUPPORTED_MEDIA_TYPE",
        415,
        "Unsupported content type",
        Verdict.CANNOT_VERIFY,
    )
    RATE_LIMITED = ("RATE_LIMITED", 429, "Too many requests", Verdict.CANNOT_VERIFY, True)
    INTERNAL_ERROR = ("INTERNAL_ERROR", 500, "Internal error", Verdict.CANNOT_VERIFY)
    SERVICE_UNAVAILABLE = (
        "SERVICE_UNAVAILABLE",
        503,
        "Service unavailable",
        Verdict.CANNOT_VERIFY,
        True,
    )
    # Unknown path or method: the caller's base URL or client is wrong (same error body).
    NOT_FOUND = ("NOT_FOUND", 404, "Not found", Verdict.CANNOT_VERIFY)
    METHOD_NOT_ALLOWED = ("METHOD_NOT_ALLOWED", 405, "Method not allowed", Verdict.CANNOT_VERIFY)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One `field_errors` item: where (`path`, dot-and-index, `""` for the whole body) and what
    was expected (`message`, never quoting the input).

    A plain frozen dataclass: hashable (lists of them are de-duplicated), positional
    (`FieldError(path, message)`), and serialised by pydantic as the wire's `{path, message}`.
    """

    path: str
    message: str


class ErrorBody(BaseModel):
    """The error object of every non-2xx response (spec "Error object").

    Field order is the order on the wire. `detail` and `reason` are human text that may change;
    clients branch on `code` only. `error_description` is RFC 6749 §5.2's name for `detail`,
    sent where `error` is OAuth's error value (the token endpoint): OAuth client libraries show
    that field, never `detail`.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    error: str
    code: ErrorCode
    detail: str | None = None
    error_description: str | None = None
    reason: str | None = None
    field_errors: list[FieldError] | None = None

    def wire(self) -> dict[str, Any]:
        """The JSON object as sent: absent fields are left out, never sent as null."""
        return self.model_dump(mode="json", exclude_none=True)
