"""What the pay-run tab shows before a run: the export's headers with a field each, and its
first rows as they will be registered, every problem in plain words. Qt-free, so the tab runs it
on a worker thread and the tests call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from app.issuer.export.mapping import IGNORE, ExportMapping, norm_header
from app.issuer.export.memory import remembered_mapping
from app.issuer.export.reader import read_export
from app.issuer.export.suggest import suggest_for_file
from app.issuer.fields import cents_to_money
from app.issuer.run.rows import PayrunRow
from app.issuer.run.source import is_own_layout
from app.settings.desk import Settings

__all__ = ["ExportLook", "PreviewRow", "look_at", "preview_rows"]

PREVIEW_ROWS = 5


@dataclass
class ExportLook:
    """A chosen file: whether it needs a mapping, its headers, and the mapping to start from
    (the one confirmed last time for these headers, else the suggestion; unplaced -> None)."""

    path: Path
    is_export: bool
    headers: list[str] = field(default_factory=list)
    mapping: dict[str, Any] = field(default_factory=dict)
    remembered: bool = False


@dataclass(frozen=True)
class PreviewRow:
    number: int
    external_id: str
    name: str = field(repr=False)
    payment_date: str
    gross: str
    net: str
    problems: tuple[str, ...]


def look_at(path: Path, settings: Settings) -> ExportLook:
    """Raises PayrunFileError when the file cannot be read."""
    suffix = path.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson") or (
        suffix not in (".xlsx", ".xlsm") and is_own_layout(path)
    ):
        return ExportLook(path, False)
    suggested = suggest_for_file(path)
    headers = list(suggested["columns"])
    known = remembered_mapping(settings, headers)
    if known is None:
        return ExportLook(path, True, headers, suggested)
    data = known.to_json()
    by_norm = dict(known.columns)
    data["columns"] = {h: by_norm.get(norm_header(h)) for h in headers}
    return ExportLook(path, True, headers, data, remembered=True)


def _money(values: dict[str, Any], name: str) -> str:
    if name in values:
        return str(values[name])
    cents = values.get(name + "_cents")
    return cents_to_money(cents) if isinstance(cents, int) else ""


def preview_rows(path: Path, mapping: ExportMapping, count: int = PREVIEW_ROWS) -> list[PreviewRow]:
    """The first `count` rows, checked as the run will check them (PayrunFileError for a file
    that cannot be read or headers nobody placed)."""
    rows: list[PreviewRow] = []
    for item in islice(read_export(path, mapping), count):
        if isinstance(item, PayrunRow):
            values = item.payslip_non_pii
            name = item.pii_text.split("|")[1] if "|" in item.pii_text else ""
            rows.append(
                PreviewRow(
                    item.number,
                    item.external_id,
                    name,
                    str(values.get("payment_date", "")),
                    _money(values, "gross"),
                    _money(values, "net"),
                    (),
                )
            )
        else:
            rows.append(PreviewRow(item.number, item.external_id, "", "", "", "", item.reasons))
    return rows


def mapping_from(columns: dict[str, str | None], base: dict[str, Any]) -> ExportMapping:
    """The mapping the tab's pickers make (None: not placed yet; `ignore` kept)."""
    data = {**base, "columns": {h: t for h, t in columns.items() if t is not None}}
    data["columns"] = {h: (IGNORE if t == IGNORE else t) for h, t in data["columns"].items()}
    return ExportMapping.from_json(data)
