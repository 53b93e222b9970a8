"""The base models every request object is built from (PROTOCOL §5: every request object is closed).

Cross-field rules (an earning's `allowance_type` required for allowances and refused elsewhere,
`period_end >= period_start`) are checked on the raw input in a wrap validator rather than after
pydantic has built the model: an after-validator only runs when every field is already valid, so a
client would fix one batch of errors and only then learn about the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic.config import JsonDict, JsonValue
from pydantic_core import InitErrorDetails

from .errors import rebuild, rule_error
from .scalars import is_calendar_date


class ClosedModel(BaseModel):
    """Unknown keys fail with their own path; input values are kept out of exception text."""

    model_config = ConfigDict(extra="forbid", strict=True, hide_input_in_errors=True, frozen=True)

    def as_sent(self) -> dict[str, Any]:
        """The JSON object this model was validated from, with only the wire's normalisations
        (`100.0` where an integer is expected is `100`): exactly the fields that were present,
        nested models and lists alike. What `model_dump(mode="json", exclude_unset=True)` gives
        for these models, which carry no aliases, serializers or non-JSON values (tests check
        both), at a third of its cost: a pay run computes it for every record it registers."""
        values = self.__dict__
        sent: dict[str, Any] = {}
        for name in self.__pydantic_fields_set__:
            value = values[name]
            # Most values are text or numbers: test their type rather than call a function.
            sent[name] = value if type(value) in _SCALARS else _as_sent(value)
        return sent


_SCALARS = frozenset({str, int, float, bool})


def _as_sent(value: Any) -> Any:
    if isinstance(value, ClosedModel):
        return value.as_sent()
    if type(value) is list:
        return [_as_sent(item) for item in value]
    return value


@dataclass(frozen=True)
class Violation:
    """A broken cross-field rule. `refused` marks a key that must not be there at all, so its value
    is not also validated (a wrong enum value in a field that is not allowed is noise)."""

    key: str
    message: str
    refused: bool = False


class RuleCheckedModel(ClosedModel):
    """A closed model with cross-field rules; subclasses override `violations`."""

    @classmethod
    def violations(cls, data: Mapping[str, Any]) -> list[Violation]:
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _check_rules(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict):
            return handler(data)
        found = cls.violations(data)
        if not found:
            return handler(data)
        refused = {v.key for v in found if v.refused}
        errors: list[InitErrorDetails] = []
        try:
            handler({k: v for k, v in data.items() if k not in refused})
        except ValidationError as exc:
            errors = rebuild(exc)
        errors.extend(rule_error((v.key,), "rule", v.message) for v in found)
        raise ValidationError.from_exception_data(cls.__name__, errors, hide_input=True)


def _known(data: Mapping[str, Any], key: str, allowed: frozenset[str]) -> str | None:
    """The value of `key` when it is one of `allowed`; else None (another error reports it)."""
    value = data.get(key)
    return value if isinstance(value, str) and value in allowed else None


@dataclass(frozen=True)
class When:
    """`selector` equals `value`; `choices` are the selector's valid values, so a rule stays silent
    while its selector is missing or invalid (that field's own error already says so)."""

    selector: str
    choices: frozenset[str]
    value: str


@dataclass(frozen=True)
class Conditional:
    """A field that exists only when every `When` holds: required then, refused otherwise."""

    key: str
    when: tuple[When, ...]

    def check(self, data: Mapping[str, Any]) -> Violation | None:
        condition = " and ".join(f"{w.selector} is {w.value}" for w in self.when)
        for w in self.when:
            selected = _known(data, w.selector, w.choices)
            if selected is None:
                return None
            if selected != w.value:
                if self.key in data:
                    return Violation(self.key, f"not allowed unless {condition}", refused=True)
                return None
        if self.key not in data:
            return Violation(self.key, f"required when {condition}")
        return None


def _conditionals_json_schema(schema: JsonDict, cls: type[Any]) -> None:
    """State the conditional fields in the JSON Schema too (if/then/else, JSON Schema 2020-12)."""
    rules: tuple[Conditional, ...] = getattr(cls, "conditionals", ())
    all_of: list[JsonValue] = []
    for rule in rules:
        condition: JsonDict = {
            "properties": {w.selector: {"const": w.value} for w in rule.when},
            "required": [w.selector for w in rule.when],
        }
        all_of.append(
            {
                "if": condition,
                "then": {"required": [rule.key]},
                "else": {"not": {"required": [rule.key]}},
            }
        )
    if all_of:
        schema["allOf"] = all_of


class ConditionalModel(RuleCheckedModel):
    """An item (an earning) whose extra fields depend on its kind."""

    model_config = ConfigDict(json_schema_extra=_conditionals_json_schema)

    conditionals: ClassVar[tuple[Conditional, ...]] = ()

    @classmethod
    def violations(cls, data: Mapping[str, Any]) -> list[Violation]:
        return [v for rule in cls.conditionals if (v := rule.check(data)) is not None]


class PeriodModel(RuleCheckedModel):
    """A payslip whose pay period, when both ends are given, must not end before it starts."""

    @classmethod
    def violations(cls, data: Mapping[str, Any]) -> list[Violation]:
        start, end = data.get("period_start"), data.get("period_end")
        if (
            isinstance(start, str)
            and isinstance(end, str)
            and end < start  # YYYY-MM-DD strings order like the dates they name
            and is_calendar_date(start)  # else that field's own error says it
            and is_calendar_date(end)
        ):
            return [Violation("period_end", "must not be before period_start")]
        return []
