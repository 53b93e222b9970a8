"""Every reason a pay-run row can fail, pinned word for word and in order (issue 21).

`check_row` is a table of column checks and the CSV and JSON readers are split into small steps;
these tables hold every branch of the rules over real inputs, so a restructure that changed one
message, or the order a clerk reads them in, fails here. The CSV reader and the streaming JSON
array reader are pinned too: header refusals, ragged rows, blank lines, and JSON items decoded
the same whatever the read size (a value may straddle two reads).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from app.issuer.run.json_source import json_array_items
from app.issuer.run.rows import PayrunFileError, PayrunRow, RowInput, RowProblem, check_row
from app.issuer.run.source import _csv_rows

SCHEMAS = "au.payslip.v1, nz.payslip.v1, au.payslip.v2, nz.payslip.v2"
CELLS = {
    "period_end": "2026-11-12",
    "payment_date": "2026-11-13",
    "currency": "AUD",
    "gross": "1000.00",
    "paygw": "100.00",
    "net": "900.00",
    "earnings.0.type": "ordinary",
    "earnings.0.amount": "1000.00",
}
NON_PII = {
    "period_end": "2026-11-12",
    "payment_date": "2026-11-13",
    "currency": "AUD",
    "gross": "1000.00",
    "paygw": "100.00",
    "net": "900.00",
    "earnings": [{"type": "ordinary", "amount": "1000.00"}],
}
PII = {"employee_name": "Casey Sampleton", "account_number": "12345678"}
REQUIRED = "required (column missing or empty)"
STRAY_NAME = (
    "seems to contain the employee's name; personal data belongs only in the employee's "
    "details, where it is encrypted"
)


def raw_row(
    *,
    meta: dict[str, str | None] | None = None,
    pii: dict[str, str] | None = None,
    pii_format: str | None = None,
    cells: dict[str, str] | None = None,
    non_pii: Any = None,
    reasons: tuple[str, ...] = (),
    number: int = 1,
) -> RowInput:
    """A good au.payslip.v2 row (EMP1) as the CSV reader hands it over, with the given
    changes; a meta value of None leaves that column out."""
    given: dict[str, str | None] = {"schema": "au.payslip.v2", "external_id": "EMP1"}
    given.update(meta or {})
    return RowInput(
        number,
        {k: v for k, v in given.items() if v is not None},
        dict(PII if pii is None else pii),
        pii_format,
        non_pii,
        dict(CELLS if cells is None else cells),
        list(reasons),
    )


@pytest.fixture
def pdf_dir(tmp_path: Path) -> Path:
    """A PDF folder holding EMP1.pdf (the default for row EMP1) and named.pdf."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for name in ("EMP1.pdf", "named.pdf"):
        (folder / name).write_bytes(b"%PDF-1.4\n")
    return folder


PROBLEMS: list[tuple[str, RowInput, bool, tuple[str, ...]]] = [
    # (case, row, with the PDF folder, every reason in order)
    (
        "reasons from the reader come alone",
        raw_row(meta={"schema": "x", "pdf_page": "0"}, reasons=("row: not valid CSV",)),
        False,
        ("row: not valid CSV",),
    ),
    (
        "schema missing",
        raw_row(meta={"schema": None}),
        False,
        (f"schema: missing (use one of {SCHEMAS})",),
    ),
    (
        "schema unknown, and nothing else is checked",
        raw_row(meta={"schema": "au.payslip.v9", "pdf_page": "0"}, pii={}),
        False,
        (f"schema: not a known schema (use one of {SCHEMAS})",),
    ),
    (
        "PII format unknown: its fields are not checked",
        raw_row(pii_format="XX", pii={"employee_name": "", "zz": "1"}),
        False,
        ("pii_format: not a known format (use one of P1, P2, AU2, NZ2)",),
    ),
    (
        "PII fields the format does not have, sorted",
        raw_row(pii={**PII, "zz": "2", "ird_number": "1", "blank": ""}),
        False,
        ("pii.ird_number: not a field of AU2", "pii.zz: not a field of AU2"),
    ),
    (
        "employee name blank",
        raw_row(pii={"employee_name": "  "}),
        False,
        ("pii.employee_name: required",),
    ),
    (
        "a PII value the text cannot hold",
        raw_row(pii={**PII, "position": "a|b"}),
        False,
        ("pii.position: must not contain '|'",),
    ),
    (
        "PII text too long",
        raw_row(pii={**PII, "position": "a" * 2000}),
        False,
        ("pii.pii: the whole text exceeds 1024 UTF-8 bytes",),
    ),
    (
        "the row's own format beats the schema's",
        raw_row(pii_format="NZ2", pii={**PII, "bsb": "062000"}),
        False,
        ("pii.bsb: not a field of NZ2",),
    ),
    (
        "CSV cells: unreadable, unknown, whole objects, then the schema's own errors",
        raw_row(cells={**CELLS, "gross": "1x", "nope": "1", "earnings": "x", "net": ""}),
        False,
        (
            "gross: expected a number such as 1234.50",
            "nope: not a field of au.payslip.v2",
            "earnings: give its parts as separate columns (earnings.<field>)",
            f"net: {REQUIRED}",
        ),
    ),
    (
        "v1 money in cents, given as money or as whole cents",
        raw_row(
            meta={"schema": "au.payslip.v1"},
            cells={
                "period_start": "2026-10-30",
                "period_end": "2026-11-12",
                "payment_date": "2026-11-13",
                "currency": "AUD",
                "gross": "10.005",
                "paygw_cents": "1.5",
                "net": "1.00",
            },
        ),
        False,
        (
            "gross: expected at most two decimal places (whole cents)",
            "paygw_cents: expected a whole number of cents such as 384615",
            f"ytd_gross_cents: {REQUIRED}",
            f"ytd_paygw_cents: {REQUIRED}",
        ),
    ),
    (
        "JSON: not an object",
        raw_row(cells={}, non_pii=["x"]),
        False,
        (
            "payslip_non_pii: expected an object",
            *(
                f"{name}: {REQUIRED}"
                for name in ("period_end", "payment_date", "currency", "gross", "paygw", "net")
            ),
        ),
    ),
    (
        "JSON: wire types",
        raw_row(cells={}, non_pii={**NON_PII, "gross": 1000}),
        False,
        ('gross: expected a decimal string such as "12.50" (not a JSON number)',),
    ),
    (
        "issued_at",
        raw_row(meta={"issued_at": "yesterday"}),
        False,
        (
            "issued_at: expected a UTC timestamp as YYYY-MM-DDTHH:MM:SS with optional "
            "fractional seconds and a trailing Z",
        ),
    ),
    (
        "external id the service refuses",
        raw_row(meta={"external_id": "É1"}),
        False,
        ("external_id: expected 1 to 255 printable ASCII characters",),
    ),
    (
        "stray personal data",
        raw_row(cells={**CELLS, "award": "Casey Sampleton award"}),
        False,
        (f"award: {STRAY_NAME}",),
    ),
    (
        "page and corner",
        raw_row(meta={"pdf_page": "0", "pdf_corner": "middle"}),
        False,
        (
            "pdf_page: expected a page number from 1",
            "pdf_corner: expected one of top-left, top-right, bottom-left, bottom-right",
        ),
    ),
    (
        "page not a number",
        raw_row(meta={"pdf_page": "2x"}),
        False,
        ("pdf_page: expected a page number from 1",),
    ),
    (
        "page a superscript digit (isdigit says yes, int says no)",
        raw_row(meta={"pdf_page": "\u00b2"}),
        False,
        ("pdf_page: expected a page number from 1",),
    ),
    (
        "a PDF named without a folder",
        raw_row(meta={"pdf": "named.pdf"}),
        False,
        ("pdf: a PDF is named but no PDF folder was given",),
    ),
    (
        "a PDF outside the folder",
        raw_row(meta={"pdf": "../EMP1.pdf"}),
        True,
        ("pdf: must name a file inside the PDF folder",),
    ),
    (
        "a PDF not in the folder",
        raw_row(meta={"pdf": "missing.pdf"}),
        True,
        ("pdf: no such file in the PDF folder",),
    ),
    (
        "every kind at once, in the order a clerk reads them",
        raw_row(
            meta={"pdf_page": "x", "pdf_corner": "centre", "pdf": "missing.pdf"},
            pii={**PII, "zz": "1", "position": "a|b"},
            cells={**CELLS, "gross": "", "nope": "1", "award": "Pay to 12345678"},
        ),
        True,
        (
            "pii.zz: not a field of AU2",
            "pii.position: must not contain '|'",
            "nope: not a field of au.payslip.v2",
            f"gross: {REQUIRED}",
            "award: seems to contain the employee's bank account number; personal data "
            "belongs only in the employee's details, where it is encrypted",
            "pdf_page: expected a page number from 1",
            "pdf_corner: expected one of top-left, top-right, bottom-left, bottom-right",
            "pdf: no such file in the PDF folder",
        ),
    ),
]


@pytest.mark.parametrize(
    ("row", "with_folder", "reasons"),
    [case[1:] for case in PROBLEMS],
    ids=[case[0] for case in PROBLEMS],
)
def test_every_reason_a_row_fails(
    row: RowInput, with_folder: bool, reasons: tuple[str, ...], pdf_dir: Path
) -> None:
    checked = check_row(row, None, {}, pdf_dir if with_folder else None)
    assert checked == RowProblem(row.number, row.meta.get("external_id", "row-1"), reasons)


def test_a_good_row_with_and_without_its_pdf(pdf_dir: Path) -> None:
    plain = check_row(raw_row(), None, {}, None)
    assert plain == PayrunRow(
        number=1,
        external_id="EMP1",
        schema="au.payslip.v2",
        issued_at=None,
        payslip_non_pii=NON_PII,
        pii_format="AU2",
        pii_text=plain.pii_text if isinstance(plain, PayrunRow) else "",
        pdf=None,
        pdf_page=1,
        pdf_corner="bottom-right",
    )
    assert isinstance(plain, PayrunRow) and plain.pii_text.startswith("AU2|Casey Sampleton|")
    found = check_row(raw_row(), None, {}, pdf_dir)
    assert isinstance(found, PayrunRow) and found.pdf == "EMP1.pdf"  # named after the row
    named = check_row(
        raw_row(
            meta={
                "pdf": " named.pdf ",
                "pdf_page": "3",
                "pdf_corner": "top-left",
                "issued_at": "2026-11-13T00:00:00Z",
            }
        ),
        None,
        {},
        pdf_dir,
    )
    assert isinstance(named, PayrunRow)
    assert (named.pdf, named.pdf_page, named.pdf_corner) == ("named.pdf", 3, "top-left")
    assert named.issued_at == "2026-11-13T00:00:00Z"
    json_row = check_row(raw_row(cells={}, non_pii=NON_PII), None, {}, None)
    assert isinstance(json_row, PayrunRow) and json_row.payslip_non_pii == NON_PII


def test_ids_repeat_across_the_file_and_the_default_schema_fills_in() -> None:
    seen: dict[str, int] = {}
    first = check_row(raw_row(meta={"schema": None}), "au.payslip.v2", seen, None)
    again = check_row(raw_row(number=2), None, seen, None)
    unnamed = check_row(raw_row(number=3, meta={"external_id": " "}), None, seen, None)
    assert isinstance(first, PayrunRow) and first.schema == "au.payslip.v2"
    assert again == RowProblem(2, "EMP1", ("external_id: repeats row 1",))
    assert isinstance(unnamed, PayrunRow) and unnamed.external_id == "row-3"
    assert seen == {"EMP1": 1, "row-3": 3}
    # A row stopped by its schema is not remembered, so a later row may use its id.
    check_row(raw_row(number=4, meta={"schema": "x", "external_id": "EMP4"}), None, seen, None)
    assert "EMP4" not in seen


# --- the CSV reader --------------------------------------------------------------------------

BIG = "x" * 200_000  # beyond the csv module's field limit: a csv.Error


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty (a header line is expected)"),
        (f'"{BIG}"\n', "the header line is not valid CSV"),
        (" , \n1,2\n", "the header line is empty"),
        ("a,b,a,b,c\n", "the header repeats columns: a, b"),
    ],
    ids=["empty", "invalid", "blank", "repeated"],
)
def test_csv_header_refusals(text: str, message: str) -> None:
    with pytest.raises(PayrunFileError) as raised:
        list(_csv_rows(io.StringIO(text)))
    assert str(raised.value) == message


def test_csv_rows_in_the_neutral_shape() -> None:
    text = (
        "schema,external_id, pii.employee_name ,pii_format,gross,,pdf\n"
        "s , E1 , Ann , AU2 , 1.00 ,,x.pdf\n"
        "\n , , , , , , \n"
        "s,E2,Bo,,2,oops,\n"
        "s,E3\n"
        "E4,s,1,2,3,4,5,6\n"
        f'"{BIG}",E5,a,b,c,d,e\n'
        "s,E6,C,,3,,\n"
    )
    ragged = "row: has {} cells but the header has 7 columns (a missing or extra delimiter?)"
    rows = [
        (r.number, r.meta, r.pii, r.pii_format, r.cells, r.reasons)
        for r in _csv_rows(io.StringIO(text))
    ]
    assert rows == [
        (
            1,
            {"schema": "s", "external_id": "E1", "pii_format": "AU2", "pdf": "x.pdf"},
            {"employee_name": "Ann"},
            "AU2",
            {"gross": " 1.00 "},
            [],
        ),
        (
            2,
            {"schema": "s", "external_id": "E2", "pii_format": "", "pdf": ""},
            {"employee_name": "Bo"},
            "",
            {"gross": "2"},
            ["a column without a header name holds a value"],
        ),
        (3, {"external_id": "E3"}, {}, None, {}, [ragged.format(2)]),
        (4, {"external_id": "s"}, {}, None, {}, [ragged.format(8)]),
        (5, {}, {}, None, {}, ["row: not valid CSV (check quotes)"]),
        (
            6,
            {"schema": "s", "external_id": "E6", "pii_format": "", "pdf": ""},
            {"employee_name": "C"},
            "",
            {"gross": "3"},
            [],
        ),
    ]
    (short,) = _csv_rows(io.StringIO("schema;gross\nau\n"), ";")
    assert (short.meta, short.reasons) == (
        {},
        ["row: has 1 cells but the header has 2 columns (a missing or extra delimiter?)"],
    )


# --- the streaming JSON array reader ---------------------------------------------------------

NOT_AN_ARRAY = "a JSON pay run must be an array of objects (or JSON Lines)"
DAMAGED = (None, False)  # the last thing read from a damaged file: nothing after it is known


def items(*values: Any) -> list[tuple[Any, bool]]:
    return [(value, True) for value in values]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", NOT_AN_ARRAY),
        ("  \n", NOT_AN_ARRAY),
        ('{"schema": "x"}', NOT_AN_ARRAY),
        ("[]", []),
        (" \n[ \n] trailing", []),
        (
            '[1, -30, true, false, null, "s,]", {"a": [1, "]"]}, 12345678901234567890]',
            items(1, -30, True, False, None, "s,]", {"a": [1, "]"]}, 12345678901234567890),
        ),
        ("[1,\n 22\n]", items(1, 22)),
        # Numbers cut anywhere by a read (size 1 cuts every one after each character): after
        # the `.`, the `e` and the exponent's sign too, which once decoded short.
        ("[12.5, -0.25e-3, 6E+2, 7e5, 3.0]", items(12.5, -0.25e-3, 6e2, 7e5, 3.0)),
        ('[{"gross": 1234.5}, 99.99]', items({"gross": 1234.5}, 99.99)),
        ('[ "a" , "b" ]  ', items("a", "b")),
        ("[1 2]", [*items(1), DAMAGED]),
        ("[1,", [*items(1), DAMAGED]),
        ("[1,]", [*items(1), DAMAGED]),
        ("[1", [*items(1), DAMAGED]),
        ('[{"a": ]', [DAMAGED]),
        ('["abc', [DAMAGED]),
        ("[tru", [DAMAGED]),
        ('[{"a": 1}, {"b": 2', [*items({"a": 1}), DAMAGED]),
    ],
)
@pytest.mark.parametrize("read_size", [1, 2, 3, 7, 1 << 16])
def test_json_array_items_whatever_the_read_size(
    text: str, expected: str | list[tuple[Any, bool]], read_size: int
) -> None:
    """`expected`: (item, decoded) pairs, or the message of the PayrunFileError for a file that
    is no array at all."""
    stream = json_array_items(io.StringIO(text), read_size)
    if isinstance(expected, str):
        with pytest.raises(PayrunFileError) as raised:
            list(stream)
        assert str(raised.value) == expected
        return
    assert list(stream) == expected
