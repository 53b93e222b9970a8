"""A payroll export's rows as today's neutral `RowInput`s, and then checked like any pay run.

Each column's target comes from the mapping (`mapping.resolve_headers`, which has already
refused unknown headers); each cell is converted for its target's kind under the row's schema
(`cells`): a date field reads `date_format` or an Excel date cell, a money field (a v2 decimal or
a v1 `*_cents` field given as money) reads `$1,234.56` and `(12.50)`. `defaults` fill fields the
export lacks; a cell wins over a default. The rest (schema rules, stray PII, PDFs, repeated ids)
is `app.issuer.run.rows.check_row`, unchanged.

A problem found by the row checks names the target (`gross: required`); for an export it is
reworded in the clerk's words: the export's header and the field it fills, as the pay-run tab's
picker names it (`Worker (Employee name): required (this row's cell is empty)`), or the field
alone when no column fills it (`Employee name: required (no column goes into it)`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.issuer.export.cells import cell_text, date_text, money_text
from app.issuer.export.field_words import field_words
from app.issuer.export.formats import has_extra_cell, is_bad_csv, open_table
from app.issuer.export.mapping import ExportMapping, resolve_headers
from app.issuer.fields import ValueProblem, spec_for_path
from app.issuer.run.rows import META_COLUMNS, PayrunRow, RowInput, RowProblem, check_row

__all__ = ["export_header", "read_export", "read_export_raw"]

_DATE, _MONEY, _TEXT = 1, 2, 0


@lru_cache(maxsize=4096)
def _kind(schema: str, target: str) -> int:
    """How a cell for `target` is converted under `schema` (unknown schema: as text)."""
    if target in META_COLUMNS or target.startswith("pii."):
        return _TEXT
    try:
        spec = spec_for_path(schema, target)
        if spec is None:
            alias = spec_for_path(schema, target + "_cents")
            return _MONEY if alias is not None and alias.kind == "cents" else _TEXT
    except KeyError:
        return _TEXT
    if spec.kind == "date":
        return _DATE
    if spec.kind == "decimal":
        return _MONEY
    return _TEXT


def _convert(value: Any, kind: int, date_format: str) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    if kind == _DATE:
        return date_text(value, date_format)
    if kind == _MONEY:
        return money_text(value)
    return cell_text(value)


def _row_input(
    number: int,
    cells: list[Any],
    targets: list[str | None],
    header: list[str],
    mapping: ExportMapping,
    default_schema: str | None,
    schema_index: int | None,
) -> RowInput:
    row = RowInput(number, {}, {}, None)
    if is_bad_csv(cells):
        row.reasons.append("row: not valid CSV (check quotes)")
        return row
    if has_extra_cell(cells) or len(cells) != len(targets):
        row.reasons.append(
            f"row: has {len(cells) - has_extra_cell(cells)} cells but the header has "
            f"{len(targets)} columns (a missing or extra delimiter?)"
        )
        return row
    schema = ""
    if schema_index is not None:
        schema = cell_text(cells[schema_index]).strip()
    schema = schema or mapping.schema or default_schema or ""
    values: dict[str, Any] = dict(mapping.defaults)
    for target, value in zip(targets, cells, strict=True):
        if target is not None and value is not None and str(value).strip():
            values[target] = value
    date_format = mapping.date_format
    for target, value in values.items():
        try:
            text = _convert(value, _kind(schema, target), date_format)
        except ValueProblem as exc:
            row.reasons.append(f"{_header_of(target, targets, header, schema)}: {exc}")
            continue
        row.put(target, text)
    if schema and "schema" not in row.meta:
        row.meta["schema"] = schema
    row.pii_format = row.meta.get("pii_format")
    return row


def _header_of(target: str, targets: list[str | None], header: list[str], schema: str = "") -> str:
    """The column a reason is about: its header, and the field it fills in the picker's words
    ("Total Gross (Gross pay)"); a default's field alone."""
    words = field_words(schema, target) or target
    for name, t in zip(header, targets, strict=False):
        if t == target:
            name = " ".join(str(name).split())
            return (
                name
                if name.casefold() in (words.casefold(), target.casefold())
                else (f"{name} ({words})")
            )
    return f"{words} (default)"


def _reworded(problem: RowProblem, names: Mapping[str, str], schema: str) -> RowProblem:
    """Each reason's field named as the clerk sees it: by its column, else by its words."""
    reasons = []
    for reason in problem.reasons:
        column, sep, rest = reason.partition(": ")
        if sep and column in names:
            rest = "required (this row's cell is empty)" if rest == "required" else rest
            reason = f"{names[column]}: {rest}"
        elif sep and (words := field_words(schema, column)) is not None:
            rest = "required (no column goes into it)" if rest == "required" else rest
            reason = f"{words}: {rest}"
        reasons.append(reason)
    return RowProblem(problem.number, problem.external_id, tuple(reasons))


def _raw_rows(
    table: Any, targets: list[str | None], mapping: ExportMapping, default_schema: str | None
) -> Iterator[RowInput]:
    schema_index = targets.index("schema") if "schema" in targets else None
    for number, cells in table.rows:
        yield _row_input(
            number, cells, targets, table.header, mapping, default_schema, schema_index
        )


def read_export_raw(
    path: Path, mapping: ExportMapping, *, default_schema: str | None = None
) -> Iterator[RowInput]:
    """The export's rows in the neutral shape, unchecked (raises PayrunFileError for a file
    that cannot be read or has headers nobody placed)."""
    with open_table(path, sheet=mapping.sheet, skip_rows=mapping.skip_rows) as table:
        targets = resolve_headers(table.header, mapping)
        yield from _raw_rows(table, targets, mapping, default_schema)


def export_header(path: Path, mapping: ExportMapping | None = None) -> list[str]:
    """The export's header cells (for suggesting a mapping), without checking them."""
    mapping = mapping or ExportMapping()
    with open_table(path, sheet=mapping.sheet, skip_rows=mapping.skip_rows) as table:
        return [str(h) for h in table.header]


def _column_names(targets: list[str | None], header: list[str], schema: str) -> dict[str, str]:
    """Target path (and its v1 `_cents` twin) -> how a reason names it for this export."""
    names: dict[str, str] = {}
    for target in targets:
        if target is not None:
            names[target] = _header_of(target, targets, header, schema)
            names.setdefault(target + "_cents", names[target])
    return names


def read_export(
    path: Path,
    mapping: ExportMapping,
    *,
    default_schema: str | None = None,
    pdf_dir: Path | None = None,
    pdf_names: Mapping[int, str] | None = None,
) -> Iterator[PayrunRow | RowProblem]:
    """Every row of the export, checked, in file order (see `read_payrun`). With `pdf_names`
    (row number -> PDF file in `pdf_dir`, from a combined PDF), those name each row's PDF."""
    seen: dict[str, int] = {}
    with open_table(path, sheet=mapping.sheet, skip_rows=mapping.skip_rows) as table:
        targets = resolve_headers(table.header, mapping)
        names: dict[str, str] | None = None
        for raw in _raw_rows(table, targets, mapping, default_schema):
            if pdf_names is not None:
                raw.meta.pop("pdf", None)
                if raw.number in pdf_names:
                    raw.meta["pdf"] = pdf_names[raw.number]
            checked = check_row(raw, default_schema, seen, pdf_dir)
            if isinstance(checked, RowProblem):
                schema = raw.meta.get("schema") or mapping.schema or default_schema or ""
                names = names or _column_names(targets, table.header, schema)
                checked = _reworded(checked, names, schema)
            yield checked
