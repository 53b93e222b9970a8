"""Field errors (`service.protocol.errors.FieldError`) from pydantic's, built so that no submitted
value leaks out.

Request bodies carry pay amounts and may carry personal data by mistake, and error bodies end up in
logs and on screens. So a message never quotes the input: it names what was expected. Pydantic's own
messages are not trusted for that (some quote the input), so only a vetted set of its error types
keeps a message, rebuilt here from the schema-side context alone; everything else becomes a generic
message.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core import core_schema as cs

from service.protocol.errors import FieldError

DETAIL_PROBLEMS = 10
"""A batch record's one-line `detail` names at most this many problems, then counts the rest."""


class SchemaValidationError(Exception):
    """A request failed strict validation; `field_errors` says where and what was expected."""

    def __init__(self, field_errors: Sequence[FieldError]) -> None:
        self.field_errors: list[FieldError] = list(field_errors)
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        """One line for a batch result's `detail` or a log: `path: message; path: message`."""
        shown = self.field_errors[:DETAIL_PROBLEMS]
        text = "; ".join(f"{e.path}: {e.message}" if e.path else e.message for e in shown)
        rest = len(self.field_errors) - len(shown)
        return f"{text}; and {rest} more" if rest > 0 else text


# Pydantic error types whose meaning we restate from schema-side context (never from the input).
_MESSAGES: dict[str, str] = {
    "missing": "required",
    "extra_forbidden": "unknown field",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "dict_type": "expected an object",
    "list_type": "expected an array",
    "string_type": "expected a string",
    "string_too_short": "expected at least {min_length} characters",
    "string_too_long": "expected at most {max_length} characters",
    "string_pattern_mismatch": "expected a string matching {pattern}",
    "too_short": "expected at least {min_length} item(s)",
    "too_long": "expected at most {max_length} item(s)",
    "literal_error": "expected one of {expected}",
}
_GENERIC = "invalid value"
_BUILTIN_TYPES: frozenset[str] = frozenset(typing.get_args(cs.ErrorType))


def path_of(loc: Iterable[int | str]) -> str:
    """Dot-and-index path. The models use no pydantic unions (whose variant tags pydantic would
    insert into `loc`), so every part is a real JSON key or array index."""
    return ".".join(str(part) for part in loc)


def _message(error: Any) -> str:
    kind: str = error["type"]
    if kind not in _BUILTIN_TYPES:
        # Our own PydanticCustomError: its text is written here and never formats the input.
        return str(error["msg"])
    template = _MESSAGES.get(kind)
    if template is None:
        return _GENERIC
    ctx = error.get("ctx") or {}
    try:
        return template.format(**ctx)
    except (KeyError, IndexError):
        return _GENERIC


def field_errors_from(exc: ValidationError) -> list[FieldError]:
    seen: set[FieldError] = set()
    result: list[FieldError] = []
    for error in exc.errors(include_url=False):
        item = FieldError(path_of(error["loc"]), _message(error))
        if item not in seen:
            seen.add(item)
            result.append(item)
    return result


def rule_error(loc: tuple[int | str, ...], kind: str, message: str) -> InitErrorDetails:
    """A cross-field rule violation, placed at the field the client has to change."""
    return InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input=None)


def rebuild(exc: ValidationError) -> list[InitErrorDetails]:
    """Turn raised errors back into raisable ones, so rule errors can join them in one report."""
    rebuilt: list[InitErrorDetails] = []
    for error in exc.errors(include_url=False):
        kind: str = error["type"]
        if kind in _BUILTIN_TYPES:
            item = InitErrorDetails(type=kind, loc=error["loc"], input=error["input"])
            if "ctx" in error:
                item["ctx"] = error["ctx"]
        else:
            # The formatted text becomes the template; our messages contain no braces.
            item = InitErrorDetails(
                type=PydanticCustomError(kind, error["msg"]), loc=error["loc"], input=error["input"]
            )
        rebuilt.append(item)
    return rebuilt
