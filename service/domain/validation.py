"""Bridges the protocol's schema errors into the domain's VALIDATION_FAILED."""

from __future__ import annotations

from service.domain.errors import ServiceError
from service.protocol import schemas
from service.protocol.errors import ErrorCode, FieldError

MAX_FIELD_ERRORS = 50
"""At most this many `field_errors` in one response: a body with thousands of bad fields gets
the first fifty and a count of the rest, not an answer larger than itself."""


def schema_failure(exc: schemas.SchemaValidationError) -> ServiceError:
    problems = exc.field_errors[:MAX_FIELD_ERRORS]
    first = problems[0] if problems else FieldError("", "invalid request")
    detail = f"{first.path or 'body'}: {first.message}"
    rest = len(exc.field_errors) - len(problems)
    if rest > 0:
        detail += (
            f" ({len(exc.field_errors)} problems in all; the first {len(problems)} are listed)"
        )
    return ServiceError(ErrorCode.VALIDATION_FAILED, detail, field_errors=problems)
