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
from collections.abc import Callable, Iterator, Mapping
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

    def put(self, column: str, text: str) -> None:
        """One cell under its column's name in today's layout: a meta column or an employee
        field (`pii.<field>`), trimmed, or a path inside the non-personal part, kept as typed
        (the checks read its text). Today's CSV and a mapped export place cells alike."""
        if column in META_COLUMNS:
            self.meta[column] = text.strip()
        elif column.startswith("pii."):
            self.pii[column[4:]] = text.strip()
        else:
            self.cells[column] = text


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


@dataclass
class _Draft:
    """A row part way through `_CHECKS`: the row as read, and what the checks so far took from
    it. A check reads what earlier ones filled in (the PII names, the typed non-PII part) and
    may fill in more (the PII text, the page, the PDF), so each rule is written once and the
    finished row is built from the draft."""

    raw: RowInput
    schema: str
    external_id: str
    seen_ids: dict[str, int]
    pdf_dir: Path | None
    issued_at: str | None
    pii_format: str
    pii_names: tuple[str, ...] | None = None  # None: the PII format is unknown
    pii_text: str = ""
    non_pii: dict[str, Any] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)  # paths whose cell could not be read
    pdf: str | None = None
    pdf_page: int = 1
    pdf_corner: str = "bottom-right"
    pii: dict[str, str] = field(init=False)
    """The employee's data as given, an empty field counting as absent."""

    def __post_init__(self) -> None:
        self.pii = {k: v for k, v in self.raw.pii.items() if v != ""}

    def meta(self, column: str) -> str:
        """A meta column's text, trimmed ("" when absent)."""
        return (self.raw.meta.get(column) or "").strip()


def _unique_external_id(row: _Draft) -> Iterator[str]:
    """The first row with an external id keeps it; a later one is refused (the service would
    refuse the second record as a conflict, after the first was sent)."""
    if row.external_id in row.seen_ids:
        yield f"external_id: repeats row {row.seen_ids[row.external_id]}"
    else:
        row.seen_ids[row.external_id] = row.raw.number


def _known_pii_format(row: _Draft) -> Iterator[str]:
    """The format named (or the schema's): the later PII checks run only when it is known."""
    row.pii_names = FORMATS.get(row.pii_format)
    if row.pii_names is None:
        yield f"pii_format: not a known format (use one of {', '.join(FORMATS)})"


def _pii_fields_of_format(row: _Draft) -> Iterator[str]:
    """A field the format has no place for would be dropped silently: name each one."""
    if row.pii_names is not None:
        for name in sorted(set(row.pii) - set(row.pii_names)):
            yield f"pii.{name}: not a field of {row.pii_format}"


def _employee_name_given(row: _Draft) -> Iterator[str]:
    if row.pii_names is not None and not (row.pii.get("employee_name") or "").strip():
        yield "pii.employee_name: required"


def _pii_text_builds(row: _Draft) -> Iterator[str]:
    """The text the ciphertext will hold, built from the format's own fields now, so a value
    it cannot carry is a reason here and not a failure after the row was sent."""
    if row.pii_names is None:
        return
    names = row.pii_names
    try:
        row.pii_text = build_pii_text(
            row.pii_format, {k: v for k, v in row.pii.items() if k in names}
        )
    except PiiTextError as exc:
        yield f"pii.{exc.field}: {exc.problem}"


def _non_pii_readable(row: _Draft) -> Iterator[str]:
    """The non-personal part as an object: JSON gives one (or something else, refused); CSV
    cells are read by the schema's field types, and a cell that cannot be read is remembered
    so the schema's own complaint about that field is not listed twice."""
    if row.raw.non_pii is None:
        reasons: list[str] = []
        row.non_pii, row.unreadable = _csv_non_pii(row.schema, row.raw.cells, reasons)
        yield from reasons
    elif isinstance(row.raw.non_pii, dict):
        row.non_pii = row.raw.non_pii
    else:
        yield "payslip_non_pii: expected an object"


def _schema_rules(row: _Draft) -> Iterator[str]:
    """The same rules the service applies (`check_payslip`), so a row refused there is refused
    here, before anything is sent."""
    external_id = row.raw.meta.get("external_id") or None
    for error in check_payslip(row.schema, row.non_pii, row.issued_at, external_id=external_id):
        path = _field_path(error.path)
        if path in row.unreadable:
            continue  # already explained by the value that could not be read
        message = error.message
        if message == "required":
            message = "required (column missing or empty)"
        yield f"{path or 'row'}: {message}"


def _no_stray_pii(row: _Draft) -> Iterator[str]:
    found = stray_pii(
        row.schema, row.non_pii, row.raw.pii, external_id=row.raw.meta.get("external_id")
    )
    for column, message in found.items():
        yield f"{column}: {message}"


def _pdf_page(row: _Draft) -> Iterator[str]:
    text = row.meta("pdf_page") or "1"
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # "²" is a digit to isdigit
        yield "pdf_page: expected a page number from 1"
    else:
        row.pdf_page = int(text)


def _pdf_corner(row: _Draft) -> Iterator[str]:
    row.pdf_corner = row.meta("pdf_corner") or "bottom-right"
    if row.pdf_corner not in CORNERS:
        yield f"pdf_corner: expected one of {', '.join(CORNERS)}"


def _pdf_file(row: _Draft) -> Iterator[str]:
    """The employee's payslip PDF to stamp: the one the row names, else `<external id>.pdf`
    when the folder holds it; never a file outside the folder."""
    row.pdf = row.meta("pdf") or None
    if row.pdf_dir is None:
        if row.pdf is not None:
            yield "pdf: a PDF is named but no PDF folder was given"
        return
    if row.pdf is None and (row.pdf_dir / f"{row.external_id}.pdf").is_file():
        row.pdf = f"{row.external_id}.pdf"
    if row.pdf is None:
        return
    candidate = (row.pdf_dir / row.pdf).resolve()
    if row.pdf_dir.resolve() not in candidate.parents:
        yield "pdf: must name a file inside the PDF folder"
    elif not candidate.is_file():
        yield "pdf: no such file in the PDF folder"


#: Every rule a row is held to after its schema is known, in the order its reasons are listed
#: (a clerk reads them top to bottom). Each rule reads the draft and yields its reasons, never
#: quoting a value; adding a rule is adding its function here.
_CHECKS: tuple[Callable[[_Draft], Iterator[str]], ...] = (
    _unique_external_id,
    _known_pii_format,
    _pii_fields_of_format,
    _employee_name_given,
    _pii_text_builds,
    _non_pii_readable,
    _schema_rules,
    _no_stray_pii,
    _pdf_page,
    _pdf_corner,
    _pdf_file,
)


def check_row(
    raw: RowInput, default_schema: str | None, seen_ids: dict[str, int], pdf_dir: Path | None
) -> PayrunRow | RowProblem:
    """Check one row; `seen_ids` (external id -> row number) is shared across the file so a
    repeated external id is caught.

    A row the reader could not split, or one without a known schema, stops there: every later
    rule depends on the schema. Otherwise every rule in `_CHECKS` runs and all reasons are
    returned together."""
    external_id = (raw.meta.get("external_id") or "").strip() or f"row-{raw.number}"
    schema = (raw.meta.get("schema") or "").strip() or (default_schema or "")
    if raw.reasons:
        return RowProblem(raw.number, external_id, tuple(raw.reasons))
    if schema not in PAYSLIP_SCHEMAS:
        what = "missing" if not schema else "not a known schema"
        return RowProblem(
            raw.number, external_id, (f"schema: {what} (use one of {', '.join(PAYSLIP_SCHEMAS)})",)
        )
    row = _Draft(
        raw,
        schema,
        external_id,
        seen_ids,
        pdf_dir,
        issued_at=(raw.meta.get("issued_at") or "").strip() or None,
        # The employee's data, in the format that fits the schema unless the row names another.
        pii_format=(raw.pii_format or "").strip() or format_for_schema(schema),
    )
    reasons = tuple(reason for check in _CHECKS for reason in check(row))
    if reasons:
        return RowProblem(raw.number, external_id, reasons)
    return PayrunRow(
        number=raw.number,
        external_id=external_id,
        schema=schema,
        issued_at=row.issued_at,
        payslip_non_pii=row.non_pii,
        pii_format=row.pii_format,
        pii_text=row.pii_text,
        pdf=row.pdf,
        pdf_page=row.pdf_page,
        pdf_corner=row.pdf_corner,
    )
