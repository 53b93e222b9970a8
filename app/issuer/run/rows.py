"""One pay-run row, checked: either a `PayrunRow` ready to seal and register, or a `RowProblem`.

A row arrives from any file format (`source`) as a `RowInput` in one neutral shape, so the
checks are written once: schema, external id (unique in the file), the employee's data in its PII
format, the non-personal part typed by the schema (`app.issuer.records.check_payslip`, the same
rule the service applies), stray personal data (`stray_pii`) and the optional PDF to stamp.
Every reason a row fails is collected, not just the first, so a payroll clerk can fix a row in
one pass; reasons name columns, never values, because they go to results files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.issuer.fields import FieldSpec, FormValues, ValueProblem, read_value, spec_for_path
from app.issuer.pii import FORMATS, PiiTextError, build_pii_text, format_for_schema
from app.issuer.records import check_payslip
from app.issuer.run.stray_pii import stray_pii
from service.documents.pdf_stamp import CORNERS
from service.protocol.schemas import PAYSLIP_SCHEMAS

__all__ = ["META_COLUMNS", "PayrunFileError", "PayrunRow", "RowInput", "RowProblem", "check_row"]

META_COLUMNS = ("schema", "external_id", "issued_at", "pii_format", "pdf", "pdf_page", "pdf_corner")
_SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class PayrunFileError(Exception):
    """The file as a whole cannot be read (not found, not CSV/JSON, no header). Plain text."""


@dataclass(frozen=True)
class PayrunRow:
    """One row ready to issue. `pii_text` is personal data: it is excluded from the repr."""

    number: int
    external_id: str
    schema: str
    issued_at: str | None
    payslip_non_pii: dict[str, Any]
    pii_format: str
    pii_text: str = field(repr=False)
    pdf: str | None = None
    pdf_page: int = 1
    pdf_corner: str = "bottom-right"

    @property
    def file_stem(self) -> str:
        """A safe, unique file name stem for this row's badge and PDF."""
        safe = _SAFE_NAME_RE.sub("_", self.external_id).strip("._")[:80] or "payslip"
        return f"{self.number:06d}_{safe}"


@dataclass(frozen=True)
class RowProblem:
    """A row that will not be issued, with every reason found (no values quoted)."""

    number: int
    external_id: str
    reasons: tuple[str, ...]


@dataclass
class RowInput:
    """A row in a neutral shape: CSV cells are text, JSON values keep their wire types."""

    number: int
    meta: dict[str, str]
    pii: dict[str, str]
    pii_format: str | None
    non_pii: dict[str, Any] | None = None  # JSON: the object as given
    cells: dict[str, str] = field(default_factory=dict)  # CSV: path -> text
    reasons: list[str] = field(default_factory=list)


@lru_cache(maxsize=8192)
def _column(schema: str, column: str) -> tuple[FieldSpec | None, str, bool]:
    """(spec, path, money) for a CSV column under a schema: the field at that path, or a v1
    cents field given as money under its name without `_cents` (`gross` for `gross_cents`)."""
    spec = spec_for_path(schema, column)
    if spec is not None:
        return spec, column, False
    alias = spec_for_path(schema, column + "_cents")
    if alias is not None and alias.kind == "cents":
        return alias, column + "_cents", True
    return None, column, False


def _field_path(path: str) -> str:
    return path.removeprefix("payslip_non_pii.")


def _csv_non_pii(
    schema: str, cells: Mapping[str, str], reasons: list[str]
) -> tuple[dict[str, Any], set[str]]:
    values = FormValues()
    bad: set[str] = set()
    for column, text in cells.items():
        if not text.strip():
            continue
        spec, path, money = _column(schema, column)
        if spec is None:
            reasons.append(f"{column}: not a field of {schema}")
            continue
        if spec.kind in ("object", "array"):
            reasons.append(f"{column}: give its parts as separate columns ({column}.<field>)")
            continue
        try:
            values.set(path, read_value(spec, text, money=money))
        except ValueProblem as exc:
            reasons.append(f"{column}: {exc}")
            bad.add(path)
    return values.compacted(), bad


def check_row(
    raw: RowInput, default_schema: str | None, seen_ids: dict[str, int], pdf_dir: Path | None
) -> PayrunRow | RowProblem:
    """Check one row; `seen_ids` (external id -> row number) is shared across the file so a
    repeated external id is caught."""
    number = raw.number
    reasons = list(raw.reasons)
    external_id = (raw.meta.get("external_id") or "").strip() or f"row-{number}"
    schema = (raw.meta.get("schema") or "").strip() or (default_schema or "")
    if reasons:
        return RowProblem(number, external_id, tuple(reasons))
    if schema not in PAYSLIP_SCHEMAS:
        what = "missing" if not schema else "not a known schema"
        return RowProblem(
            number, external_id, (f"schema: {what} (use one of {', '.join(PAYSLIP_SCHEMAS)})",)
        )
    if external_id in seen_ids:
        reasons.append(f"external_id: repeats row {seen_ids[external_id]}")
    else:
        seen_ids[external_id] = number
    issued_at = (raw.meta.get("issued_at") or "").strip() or None

    # The employee's data, in the format that fits the schema unless the row names another.
    pii_format = (raw.pii_format or "").strip() or format_for_schema(schema)
    pii_text = ""
    if pii_format not in FORMATS:
        reasons.append(f"pii_format: not a known format (use one of {', '.join(FORMATS)})")
    else:
        names = FORMATS[pii_format]
        pii = {k: v for k, v in raw.pii.items() if v != ""}
        for name in sorted(set(pii) - set(names)):
            reasons.append(f"pii.{name}: not a field of {pii_format}")
        if not (pii.get("employee_name") or "").strip():
            reasons.append("pii.employee_name: required")
        try:
            pii_text = build_pii_text(pii_format, {k: v for k, v in pii.items() if k in names})
        except PiiTextError as exc:
            reasons.append(f"pii.{exc.field}: {exc.problem}")

    # The non-personal part, typed by the schema.
    bad: set[str] = set()
    if raw.non_pii is not None:
        non_pii = raw.non_pii
    else:
        non_pii, bad = _csv_non_pii(schema, raw.cells, reasons)
    if not isinstance(non_pii, dict):
        reasons.append("payslip_non_pii: expected an object")
        non_pii = {}
    for error in check_payslip(
        schema, non_pii, issued_at, external_id=raw.meta.get("external_id") or None
    ):
        path = _field_path(error.path)
        if path in bad:
            continue  # already explained by the value that could not be read
        message = (
            "required (column missing or empty)" if error.message == "required" else (error.message)
        )
        reasons.append(f"{path or 'row'}: {message}")

    for column, message in stray_pii(
        schema, non_pii, raw.pii, external_id=raw.meta.get("external_id")
    ).items():
        reasons.append(f"{column}: {message}")

    # The employee's payslip PDF to stamp, when one is given.
    pdf = (raw.meta.get("pdf") or "").strip() or None
    page_text = (raw.meta.get("pdf_page") or "").strip() or "1"
    corner = (raw.meta.get("pdf_corner") or "").strip() or "bottom-right"
    page = 1
    if not page_text.isdigit() or int(page_text) < 1:
        reasons.append("pdf_page: expected a page number from 1")
    else:
        page = int(page_text)
    if corner not in CORNERS:
        reasons.append(f"pdf_corner: expected one of {', '.join(CORNERS)}")
    if pdf_dir is not None:
        if pdf is None and (pdf_dir / f"{external_id}.pdf").is_file():
            pdf = f"{external_id}.pdf"
        if pdf is not None:
            candidate = (pdf_dir / pdf).resolve()
            if pdf_dir.resolve() not in candidate.parents:
                reasons.append("pdf: must name a file inside the PDF folder")
            elif not candidate.is_file():
                reasons.append("pdf: no such file in the PDF folder")
    elif pdf is not None:
        reasons.append("pdf: a PDF is named but no PDF folder was given")

    if reasons:
        return RowProblem(number, external_id, tuple(reasons))
    return PayrunRow(
        number=number,
        external_id=external_id,
        schema=schema,
        issued_at=issued_at,
        payslip_non_pii=non_pii,
        pii_format=pii_format,
        pii_text=pii_text,
        pdf=pdf,
        pdf_page=page,
        pdf_corner=corner,
    )
