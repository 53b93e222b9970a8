"""Bridges the protocol's schema errors into the domain's VALIDATION_FAILED."""

from __future__ import annotations

from service.domain.errors import FieldProblem, ServiceError
from service.protocol import schemas


def schema_failure(exc: schemas.SchemaValidationError) -> ServiceError:
    problems = [FieldProblem(e.path, e.message) for e in exc.field_errors]
    first = problems[0] if problems else FieldProblem("", "invalid request")
    return ServiceError(
        "VALIDATION_FAILED", f"{first.path or 'body'}: {first.message}", field_errors=problems
    )
