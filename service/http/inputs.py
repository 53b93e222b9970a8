"""Request bodies at the boundary: every route's body becomes a validated value here, before the
domain sees it, and every failure is VALIDATION_FAILED with `field_errors`, never a 500.

Bodies with a protocol model go through `validated` (the one mapping of pydantic's errors,
`service.domain.validation.schema_failure`). The small bodies (a name, a revocation reason, a
pairing code) are read by hand: their messages and leniencies are older than the models and
clients see them, so they keep them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from service.domain.admin import NAME_REQUIRED
from service.domain.errors import validation_failed
from service.domain.validation import schema_failure
from service.protocol import schemas

M = TypeVar("M", bound=BaseModel)

MAX_REASON = 500
"""A revocation reason's length limit, in characters."""


def validated(model: type[M], body: object) -> M:
    """The body as `model`, or VALIDATION_FAILED listing every problem."""
    try:
        return schemas.validate_as(model, body)
    except schemas.SchemaValidationError as exc:
        raise schema_failure(exc) from None


def json_object(body: object, known: frozenset[str]) -> dict[str, Any]:
    """A JSON object with no keys but `known` (the first unknown one is named)."""
    if not isinstance(body, dict):
        raise validation_failed("", "the body must be a JSON object")
    unknown = sorted(set(body) - known)
    if unknown:
        raise validation_failed(unknown[0], "is not a known field")
    return body


def name_of(body: object) -> str:
    """`{"name": ...}` of the admin create calls; the name's own rules are the domain's."""
    name = json_object(body, frozenset({"name"})).get("name")
    if not isinstance(name, str):
        raise validation_failed("name", NAME_REQUIRED)
    return name


def revocation_reason(body: object) -> str | None:
    """The optional `{"reason": ...}` of a revocation (no body, or null, is no reason)."""
    if body is None:
        return None
    reason = json_object(body, frozenset({"reason"})).get("reason")
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > MAX_REASON or "\x00" in reason:
        # NUL: no store keeps it (PostgreSQL refuses it in text), so it is refused here.
        raise validation_failed(
            "reason", f"must be text of at most {MAX_REASON} characters, without NUL"
        )
    return reason


def pairing_redemption(body: object) -> tuple[str, object]:
    """(pairing_code, device_name) of a redemption. Any `device_name` is accepted: the domain
    makes a label of what it can use (`schemas.PairingRedeemRequest` documents the body)."""
    data = json_object(body, frozenset({"pairing_code", "device_name"}))
    code = data.get("pairing_code")
    if not isinstance(code, str):
        raise validation_failed("pairing_code", "is required and must be text")
    return code, data.get("device_name")


def no_body(body: object) -> None:
    """Routes whose path says everything: nothing, or an empty object."""
    if body not in (None, {}):
        raise validation_failed("", "send no body or an empty object")


def pairing_days(body: object) -> int | None:
    """`{"days": N}` (or nothing) of a pairing request: how long the phone's client lasts; its
    range is the domain's (service.domain.pairing)."""
    if body is None:
        return None
    days = json_object(body, frozenset({"days"})).get("days")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int)):
        raise validation_failed("days", "must be a whole number of days")
    return days
