"""The service's error vocabulary (spec "Errors"), raised by the domain and mapped to HTTP once.

Messages here end up in responses and logs, so they never carry submitted values: no barcode text,
no ciphertext, no PII, no secret. `detail` says what is wrong and what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldProblem:
    path: str
    message: str


class MasterKeyMismatch(Exception):
    """The master key does not open this store's instance secrets: the data directory (or
    PAYSLIP_MASTER_KEY) belongs to another instance than the database. Nothing was changed."""


class ServiceError(Exception):
    """A failure a client can act on, identified by its `code`."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        field_errors: Sequence[FieldProblem] = (),
        retry_after: int | None = None,
        oauth_error: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.field_errors = list(field_errors)
        self.retry_after = retry_after
        self.oauth_error = oauth_error
        self.reason = reason


def validation_failed(path: str, message: str, detail: str | None = None) -> ServiceError:
    return ServiceError(
        "VALIDATION_FAILED",
        detail or f"{path or 'body'}: {message}",
        field_errors=[FieldProblem(path, message)],
    )


TITLES: dict[str, str] = {
    "VALIDATION_FAILED": "The request failed validation",
    "DECRYPTION_FAILED": "The barcode could not be authenticated",
    "UNAUTHORIZED": "Missing or invalid credentials",
    "FORBIDDEN": "Not permitted",
    "SERVICE_REFERENCE_NOT_FOUND": "No record for this reference",
    "CONFLICT": "Reference already registered with different data",
    "IV_REUSED": "The IV was already used by this issuer",
    "PAYLOAD_TOO_LARGE": "The request body is too large",
    "UNSUPPORTED_MEDIA_TYPE": "Unsupported content type",
    "KEY_VERSION_UNAVAILABLE": "No live decryption key for this record",
    "RATE_LIMITED": "Too many requests",
    "INTERNAL_ERROR": "Internal error",
    "SERVICE_UNAVAILABLE": "Service unavailable",
    "NOT_FOUND": "Not found",
    "METHOD_NOT_ALLOWED": "Method not allowed",
}
