"""The failures the domain raises; their vocabulary (codes, statuses, titles) is
`service.protocol.errors.ErrorCode`, mapped to HTTP once in `service.http.errors`.

Messages here end up in responses and logs, so they never carry submitted values: no barcode text,
no ciphertext, no PII, no secret. `detail` says what is wrong and what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.protocol.errors import ErrorCode, FieldError


class MasterKeyMismatch(Exception):
    """The master key does not open this store's instance secrets: the data directory (or
    PAYSLIP_MASTER_KEY) belongs to another instance than the database. Nothing was changed."""


class ServiceError(Exception):
    """A failure a client can act on, identified by its `code`."""

    def __init__(
        self,
        code: ErrorCode,
        detail: str,
        *,
        field_errors: Sequence[FieldError] = (),
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
        ErrorCode.VALIDATION_FAILED,
        detail or f"{path or 'body'}: {message}",
        field_errors=[FieldError(path, message)],
    )
