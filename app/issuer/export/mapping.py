"""The MAPPING.json of a payroll export: which of the export's headers feeds which payslip field.

`{"columns": {"<export header>": "<target>"}, "date_format": ..., "schema": ..., "sheet": ...,
"skip_rows": N, "defaults": {"<target>": "<value>"}}` (PROTOCOL §12). A target is a column name
of today's CSV layout (`external_id`, `pii.employee_name`, `period_end`, `gross`,
`earnings.0.amount`) or `ignore`. Headers are compared trimmed and case-folded, so a mapping made
for "Gross Earnings" also fits "gross earnings " next fortnight.

A header the mapping does not name and today's layout does not know stops the run before
anything is sent (`unknown_headers`): a column silently dropped could be the one holding the pay.
Errors name headers and targets, never cell values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from app.issuer.fields import spec_for_path
from app.issuer.pii import FORMATS
from app.issuer.run.rows import META_COLUMNS, PayrunFileError
from app.output.files import unreadable
from service.protocol.schemas import PAYSLIP_SCHEMAS

__all__ = [
    "DATE_FORMATS",
    "IGNORE",
    "ExportMapping",
    "MappingError",
    "is_target",
    "load_mapping",
    "norm_header",
    "resolve_headers",
]

IGNORE = "ignore"
DATE_FORMATS = ("DD/MM/YYYY", "YYYY-MM-DD", "MM/DD/YYYY", "D MMM YYYY")
_KEYS = frozenset({"columns", "date_format", "schema", "sheet", "skip_rows", "defaults"})


class MappingError(PayrunFileError):
    """The mapping file cannot be used (plain text naming the key, never a cell value)."""


def norm_header(header: object) -> str:
    """A header as it is compared: trimmed, inner spaces collapsed, case-folded."""
    return " ".join(str(header if header is not None else "").split()).casefold()


@cache
def _pii_fields() -> frozenset[str]:
    return frozenset(name for names in FORMATS.values() for name in names)


@cache
def is_target(target: str) -> bool:
    """Whether `target` names a column of today's CSV layout in any schema."""
    if target in META_COLUMNS:
        return True
    if target.startswith("pii."):
        return target[4:] in _pii_fields()
    for schema in PAYSLIP_SCHEMAS:
        spec = spec_for_path(schema, target)
        if spec is not None and spec.kind not in ("object", "array"):
            return True
        alias = spec_for_path(schema, target + "_cents")
        if alias is not None and alias.kind == "cents":
            return True
    return False


@cache
def _canonical_targets() -> dict[str, str]:
    """Case-folded -> canonical name of the fixed targets (meta and PII columns)."""
    names = [*META_COLUMNS, *(f"pii.{n}" for n in sorted(_pii_fields()))]
    return {n.casefold(): n for n in names}


def _as_target(header: str) -> str | None:
    """The target a header names by itself in today's layout (`Period_End` -> `period_end`)."""
    folded = norm_header(header)
    fixed = _canonical_targets().get(folded)
    if fixed is not None:
        return fixed
    return folded if is_target(folded) else None


@dataclass(frozen=True)
class ExportMapping:
    """A parsed MAPPING.json. `columns` is keyed by the normalised header."""

    columns: dict[str, str] = field(default_factory=dict)
    date_format: str = "YYYY-MM-DD"
    schema: str | None = None
    sheet: str | None = None
    skip_rows: int = 0
    defaults: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    """Normalised header -> the header as written in the mapping file (for messages)."""

    @classmethod
    def from_json(cls, data: Any) -> ExportMapping:
        """The mapping a MAPPING.json holds. Keys are read in a fixed order (columns, then the
        options in `_OPTIONS`, then defaults) and the first mistake stops it: one message."""
        if not isinstance(data, dict):
            raise MappingError('the mapping must be a JSON object with a "columns" object')
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise MappingError("the mapping has unknown keys: " + ", ".join(unknown))
        columns, headers = _read_columns(data.get("columns", {}))
        options: dict[str, Any] = {}
        for key, default, valid, message in _OPTIONS:
            value = data.get(key, default)
            if not valid(value):
                raise MappingError(message)
            options[key] = value
        defaults = _read_defaults(data.get("defaults", {}))
        return cls(columns, defaults=defaults, headers=headers, **options)

    def to_json(self) -> dict[str, Any]:
        """The MAPPING.json form (headers as written)."""
        data: dict[str, Any] = {
            "columns": {self.headers.get(k, k): v for k, v in self.columns.items()},
            "date_format": self.date_format,
        }
        if self.schema:
            data["schema"] = self.schema
        if self.sheet:
            data["sheet"] = self.sheet
        if self.skip_rows:
            data["skip_rows"] = self.skip_rows
        if self.defaults:
            data["defaults"] = dict(self.defaults)
        return data


def _read_columns(raw_columns: Any) -> tuple[dict[str, str], dict[str, str]]:
    """`columns`: (normalised header -> target, normalised header -> header as written). A
    header mapped twice to different fields stops at once; every other unknown target is
    listed together, so one edit fixes them all. A null target (an unplaced header of a
    suggested mapping) is left out: the header stays unknown."""
    if not isinstance(raw_columns, dict):
        raise MappingError('columns: expected an object of "<export header>": "<field>"')
    columns: dict[str, str] = {}
    headers: dict[str, str] = {}
    bad: list[str] = []
    for header, target in raw_columns.items():
        key = norm_header(header)
        if target is None:
            continue
        if not isinstance(target, str) or not (target == IGNORE or is_target(target)):
            bad.append(f"{header!s} -> {target!s}")
            continue
        if key in columns and columns[key] != target:
            raise MappingError(f"columns: the header {header} is mapped twice")
        columns[key], headers[key] = target, str(header)
    if bad:
        raise MappingError(
            "columns: not a payslip field (use a column name of the pay-run layout or "
            '"ignore"): ' + "; ".join(bad)
        )
    return columns, headers


def _read_defaults(raw_defaults: Any) -> dict[str, str]:
    """`defaults`: target -> the text every row gets when its own cell is empty or absent."""
    if not isinstance(raw_defaults, dict):
        raise MappingError('defaults: expected an object of "<field>": "<value>"')
    defaults: dict[str, str] = {}
    for target, value in raw_defaults.items():
        if not is_target(str(target)):
            raise MappingError(f"defaults: {target} is not a payslip field")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise MappingError(f"defaults: {target} needs a text value")
        defaults[str(target)] = str(value)
    return defaults


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: The mapping's single-value options, read in this order: (key, value when absent, check,
#: message when the check fails). Adding an option is adding a row here and a field above.
_OPTIONS: tuple[tuple[str, Any, Callable[[Any], bool], str], ...] = (
    (
        "date_format",
        "YYYY-MM-DD",
        lambda v: isinstance(v, str) and v in DATE_FORMATS,
        "date_format: use one of " + ", ".join(DATE_FORMATS),
    ),
    (
        "schema",
        None,
        lambda v: v is None or (isinstance(v, str) and v in PAYSLIP_SCHEMAS),
        "schema: use one of " + ", ".join(PAYSLIP_SCHEMAS),
    ),
    (
        "sheet",
        None,
        lambda v: v is None or isinstance(v, str),
        "sheet: expected the name of a sheet",
    ),
    ("skip_rows", 0, _whole_number, "skip_rows: expected a whole number from 0"),
)


def load_mapping(path: Path) -> ExportMapping:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise MappingError(unreadable(path, exc)) from None
    except UnicodeDecodeError:
        raise MappingError(f"{path.name} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MappingError(f"{path.name} is not valid JSON (line {exc.lineno})") from None
    return ExportMapping.from_json(data)


def resolve_headers(header: list[str], mapping: ExportMapping) -> list[str | None]:
    """Each column's target (None: ignored or unnamed). Raises `PayrunFileError` listing every
    header the mapping does not name and today's layout does not know, and repeated headers."""
    targets: list[str | None] = []
    unknown: list[str] = []
    seen: dict[str, str] = {}
    repeated: list[str] = []
    for raw in header:
        key = norm_header(raw)
        if not key:
            targets.append(None)
            continue
        if key in seen:
            repeated.append(str(raw).strip())
        seen[key] = str(raw)
        target = mapping.columns.get(key)
        if target is None:
            target = _as_target(str(raw))
            if target is None:
                unknown.append(str(raw).strip())
        targets.append(None if target == IGNORE else target)
    if repeated:
        raise PayrunFileError("the header repeats columns: " + ", ".join(repeated))
    if unknown:
        raise PayrunFileError(
            'headers that are not payslip fields (map them or mark them "ignore" in a mapping '
            "file; --suggest-mapping prints a start): " + ", ".join(unknown)
        )
    used = [t for t in targets if t is not None]
    twice = sorted({t for t in used if used.count(t) > 1})
    if twice:
        raise PayrunFileError("several headers feed the same field: " + ", ".join(twice))
    return targets
