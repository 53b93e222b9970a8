"""The fields of each payslip schema, read from its pydantic model's JSON Schema.

The Issue form and the pay-run importer both need to know, per schema, which fields exist, which
are required, what kind of value each takes (integer cents, a v2 decimal string, a quantity, a
date, a choice) and which fields only exist for some earning kinds. Deriving that from the very
models the service validates with (`service.protocol.schemas`) means a schema change reaches the
form and the importer without a second hand-written copy that could drift.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache
from typing import Any, Literal

from service.protocol.schemas import PAYSLIP_SCHEMAS
from service.protocol.schemas.scalars import NO_NUL_PATTERN

Kind = Literal[
    "cents", "integer", "quantity", "decimal", "date", "choice", "text", "object", "array"
]

_DECIMAL_RE = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_GROUPED_RE = re.compile(r"-?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?")
_CURRENCY_SIGNS = "$€£¥"


class ValueProblem(ValueError):
    """A typed-in value cannot be read. The message says what is expected, never the value."""


@dataclass(frozen=True)
class FieldSpec:
    """One field of a payslip schema (or of a nested object / array item).

    `conditions` lists (sibling, value) pairs that must all hold for the field to exist at all
    (an earning's `allowance_type` exists only when `type` is `allowance`); such a field is
    required exactly when its conditions hold.
    """

    name: str
    kind: Kind
    required: bool
    title: str
    choices: tuple[str, ...] = ()
    children: tuple[FieldSpec, ...] = ()
    conditions: tuple[tuple[str, str], ...] = ()
    max_length: int | None = None
    description: str = ""
    pattern: str | None = None

    @property
    def is_free_text(self) -> bool:
        """Text a person types freely (an award name), as opposed to a coded identifier."""
        return self.kind == "text" and self.pattern in (None, NO_NUL_PATTERN)

    @property
    def is_money(self) -> bool:
        """Shown and typed as an amount of money (cents on the wire for v1)."""
        if self.kind == "cents":
            return True
        return self.kind == "decimal" and not _is_quantity_name(self.name)

    @property
    def label(self) -> str:
        text = self.title
        if self.kind == "cents" and text.lower().endswith(" cents"):
            text = text[: -len(" cents")]
        return text

    def child(self, name: str) -> FieldSpec | None:
        return next((c for c in self.children if c.name == name), None)


def _is_quantity_name(name: str) -> bool:
    return name in {"units", "hours", "hours_paid", "kiwisaver_employee_rate"}


def _title(name: str) -> str:
    words = name.replace("_", " ").strip()
    fixes = {
        "ytd": "YTD",
        "paygw": "PAYGW",
        "paye": "PAYE",
        "stsl": "STSL",
        "abn": "ABN",
        "usi": "USI",
        "esct": "ESCT",
        "acc": "ACC",
        "etp": "ETP",
        "kiwisaver": "KiwiSaver",
        "slcir": "Student loan compulsory repayment (SLCIR)",
        "slbor": "Student loan borrower-initiated repayment (SLBOR)",
    }
    parts = [fixes.get(w, w) for w in words.split(" ")]
    text = " ".join(parts)
    return text[:1].upper() + text[1:]


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return dict(defs[ref.rsplit("/", 1)[-1]])
    return node


def _unwrap_optional(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    options = node.get("anyOf")
    if isinstance(options, list):
        real = [o for o in options if o.get("type") != "null"]
        if len(real) == 1:
            return _resolve(real[0], defs)
    return _resolve(node, defs)


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Field -> the (selector, value) pairs of its if/then/else rule in `allOf`."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    for rule in obj.get("allOf", []):
        then = rule.get("then", {}).get("required", [])
        props = rule.get("if", {}).get("properties", {})
        if len(then) == 1:
            found[then[0]] = tuple((k, str(v["const"])) for k, v in props.items() if "const" in v)
    return found


def _kind(name: str, node: dict[str, Any]) -> Kind:
    kind = node.get("type")
    if kind == "object":
        return "object"
    if kind == "array":
        return "array"
    if "enum" in node:
        return "choice"
    if kind == "integer":
        return "cents" if name.endswith("_cents") else "integer"
    if kind == "number":
        return "quantity"
    if node.get("format") == "date":
        return "date"
    if node.get("pattern") == r"^-?[0-9]+(\.[0-9]+)?$":
        return "decimal"
    return "text"


def _object_fields(obj: dict[str, Any], defs: dict[str, Any]) -> tuple[FieldSpec, ...]:
    required = set(obj.get("required", []))
    conditional = _conditions(obj)
    specs = []
    for name, raw in obj.get("properties", {}).items():
        node = _unwrap_optional(raw, defs)
        kind = _kind(name, node)
        children: tuple[FieldSpec, ...] = ()
        if kind == "object":
            children = _object_fields(node, defs)
        elif kind == "array":
            children = _object_fields(_resolve(node.get("items", {}), defs), defs)
        specs.append(
            FieldSpec(
                name=name,
                kind=kind,
                required=name in required,
                title=_title(name),
                choices=tuple(str(v) for v in node.get("enum", ())),
                children=children,
                conditions=conditional.get(name, ()),
                max_length=node.get("maxLength"),
                description=str(node.get("description") or ""),
                pattern=node.get("pattern"),
            )
        )
    return tuple(specs)


@cache
def schema_fields(schema_id: str) -> tuple[FieldSpec, ...]:
    """The top-level fields of `payslip_non_pii` for a schema id (KeyError when unknown)."""
    model = PAYSLIP_SCHEMAS[schema_id]
    tree = model.model_json_schema()
    return _object_fields(tree, tree.get("$defs", {}))


@cache
def field_index(schema_id: str) -> dict[str, FieldSpec]:
    """Every field by its path pattern, with `*` for array indexes (`earnings.*.amount`)."""
    index: dict[str, FieldSpec] = {}

    def walk(prefix: str, specs: tuple[FieldSpec, ...]) -> None:
        for spec in specs:
            path = f"{prefix}{spec.name}"
            index[path] = spec
            if spec.kind == "object":
                walk(path + ".", spec.children)
            elif spec.kind == "array":
                walk(path + ".*.", spec.children)

    walk("", schema_fields(schema_id))
    return index


@lru_cache(maxsize=8192)
def spec_for_path(schema_id: str, path: str) -> FieldSpec | None:
    """The spec of a concrete path such as `earnings.0.amount_cents` (None when unknown)."""
    pattern = ".".join("*" if part.isdigit() else part for part in path.split("."))
    return field_index(schema_id).get(pattern)


# --- reading typed-in values ----------------------------------------------------------------


def _clean_number(text: str) -> str:
    value = text.strip().replace(" ", "")
    negative = value.startswith("-")
    if negative:
        value = value[1:]
    value = value.lstrip(_CURRENCY_SIGNS)
    if _GROUPED_RE.fullmatch(value):
        value = value.replace(",", "")
    return ("-" if negative else "") + value


def money_to_cents(text: str) -> int:
    """`"3,846.15"` -> 384615. At most two decimal places: cents are whole."""
    value = _clean_number(text)
    if not _DECIMAL_RE.fullmatch(value):
        raise ValueProblem("expected an amount such as 1234.56")
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise ValueProblem("expected an amount such as 1234.56") from None
    cents = amount * 100
    if cents != cents.to_integral_value():
        raise ValueProblem("expected at most two decimal places (whole cents)")
    return int(cents)


def cents_to_money(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    return f"{sign}{whole}.{part:02d}"


def money_to_decimal(text: str) -> str:
    """A v2 decimal string: thousands separators and a currency sign removed, digits kept as
    typed (`"1.50"` stays `"1.50"`, because v2 stores the exact text)."""
    value = _clean_number(text)
    if not _DECIMAL_RE.fullmatch(value):
        raise ValueProblem("expected a number such as 1234.50")
    return value


def whole_cents(text: str) -> int:
    """An integer count of cents as written in a `*_cents` column (`"384615"`)."""
    value = text.strip()
    if re.fullmatch(r"-?[0-9]+(\.0+)?", value):
        return int(value.split(".", 1)[0])
    raise ValueProblem("expected a whole number of cents such as 384615")


def read_integer(text: str) -> int:
    value = text.strip()
    if re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    raise ValueProblem("expected a whole number")


def read_quantity(text: str) -> int | float:
    value = text.strip().replace(",", "")
    if not _DECIMAL_RE.fullmatch(value):
        raise ValueProblem("expected a number such as 7.5")
    number = float(value)
    return int(number) if number.is_integer() else number


def read_value(spec: FieldSpec, text: str, *, money: bool) -> Any:
    """The JSON value for a typed-in text. With `money`, a `cents` field is read as an amount
    (`12.34` -> 1234); without, as whole cents (how a `*_cents` column is written)."""
    if spec.kind == "cents":
        return money_to_cents(text) if money else whole_cents(text)
    if spec.kind == "integer":
        return read_integer(text)
    if spec.kind == "quantity":
        return read_quantity(text)
    if spec.kind == "decimal":
        return money_to_decimal(text)
    if spec.kind == "choice":
        value = text.strip()
        if value not in spec.choices:
            raise ValueProblem("expected one of " + ", ".join(spec.choices))
        return value
    if spec.kind == "date":
        return text.strip()
    return text


@dataclass
class FormValues:
    """Nested JSON built up from (path, value) pairs; array items are created on demand."""

    root: dict[str, Any] = field(default_factory=dict)

    def set(self, path: str, value: Any) -> None:
        parts = path.split(".")
        node: Any = self.root
        for part, nxt in itertools.pairwise(parts):
            key: Any = int(part) if isinstance(node, list) else part
            if isinstance(node, list):
                while len(node) <= key:
                    node.append({})
                child = node[key]
            else:
                child = node.get(key)
                if child is None:
                    child = [] if nxt.isdigit() else {}
                    node[key] = child
            node = child
        last = parts[-1]
        if isinstance(node, list):
            index = int(last)
            while len(node) <= index:
                node.append({})
            node[index] = value
        else:
            node[last] = value

    def compacted(self) -> dict[str, Any]:
        """Without empty objects and array holes (an all-empty earning line is not an earning)."""

        def squeeze(value: Any) -> Any:
            if isinstance(value, dict):
                kept = {k: squeeze(v) for k, v in value.items()}
                return {k: v for k, v in kept.items() if v not in ({}, [])}
            if isinstance(value, list):
                items = [squeeze(v) for v in value]
                return [v for v in items if v not in ({}, [])]
            return value

        result: dict[str, Any] = squeeze(self.root)
        return result
