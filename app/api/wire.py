"""What crosses the wire on each call, in both directions: an id quoted as exactly one path
segment on the way out, a success body parsed into its response model on the way back.

Apart from `app.api.client` so the two rules that keep a call honest (no id reaching another
route, no half-read answer) are read in one place."""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from app.api.errors import ClientCode, InvalidResponse

M = TypeVar("M", bound=BaseModel)


def parse_answer(model: type[M], data: dict[str, Any], status: int, request_id: str | None) -> M:
    """A success body as its response model, or `InvalidResponse`. Raised outside the `except`
    block and without pydantic's error, whose text quotes the values (PII, secrets)."""
    try:
        return model.model_validate(data)
    except ValidationError:
        pass
    raise InvalidResponse(
        ClientCode.INVALID_RESPONSE,
        status,
        f"the answer is not a {model.__name__} (service.protocol.schemas)",
        None,
        request_id,
    )


def path_segment(value: str) -> str:
    """Quote one path segment so an id can never add path segments or a query."""
    if value in ("", ".", ".."):
        # These survive quoting and would be resolved as dot-segments, changing the route.
        raise ValueError("not a usable path segment")
    return quote(str(value), safe="")
