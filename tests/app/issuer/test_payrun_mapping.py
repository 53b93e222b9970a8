"""A MAPPING.json read key by key (issue 21): every refusal word for word, the first mistake in
the file's key order the one reported, and what a good mapping keeps.

`ExportMapping.from_json` is split into one reader per key; this table holds each branch so the
split is proven to refuse and accept exactly what the single function did.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.issuer.export.mapping import ExportMapping, MappingError

SCHEMAS = "au.payslip.v1, nz.payslip.v1, au.payslip.v2, nz.payslip.v2"
NOT_A_FIELD = 'columns: not a payslip field (use a column name of the pay-run layout or "ignore"): '


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], 'the mapping must be a JSON object with a "columns" object'),
        ({"colums": {}, "zz": 1}, "the mapping has unknown keys: colums, zz"),
        ({"columns": []}, 'columns: expected an object of "<export header>": "<field>"'),
        # A header mapped twice to different fields stops at once, before other bad targets.
        (
            {"columns": {"Gross": "gros", "X": "net", " x ": "gross"}},
            "columns: the header  x  is mapped twice",
        ),
        ({"columns": {"Gross": "gros", "Net": 5}}, NOT_A_FIELD + "Gross -> gros; Net -> 5"),
        (
            {"columns": {"A": "ignore", "B": None}, "date_format": "DD-MM-YY", "schema": "x"},
            "date_format: use one of DD/MM/YYYY, YYYY-MM-DD, MM/DD/YYYY, D MMM YYYY",
        ),
        ({"schema": "x", "sheet": 3}, f"schema: use one of {SCHEMAS}"),
        ({"schema": []}, f"schema: use one of {SCHEMAS}"),
        ({"schema": {}}, f"schema: use one of {SCHEMAS}"),
        (
            {"date_format": ["YYYY-MM-DD"]},
            "date_format: use one of DD/MM/YYYY, YYYY-MM-DD, MM/DD/YYYY, D MMM YYYY",
        ),
        ({"sheet": 3, "skip_rows": -1}, "sheet: expected the name of a sheet"),
        ({"skip_rows": True}, "skip_rows: expected a whole number from 0"),
        ({"skip_rows": -1}, "skip_rows: expected a whole number from 0"),
        ({"skip_rows": 1.0}, "skip_rows: expected a whole number from 0"),
        ({"defaults": []}, 'defaults: expected an object of "<field>": "<value>"'),
        ({"defaults": {"nope": "x", "currency": None}}, "defaults: nope is not a payslip field"),
        ({"defaults": {"currency": True}}, "defaults: currency needs a text value"),
        ({"defaults": {"currency": None}}, "defaults: currency needs a text value"),
    ],
)
def test_each_mistake_is_refused_in_words(data: Any, message: str) -> None:
    with pytest.raises(MappingError) as raised:
        ExportMapping.from_json(data)
    assert str(raised.value) == message


def test_a_good_mapping_keeps_every_key() -> None:
    mapping = ExportMapping.from_json(
        {
            "columns": {"Gross Pay": "gross", "gross  pay": "gross", "B": None, "C": "ignore"},
            "date_format": "DD/MM/YYYY",
            "schema": "au.payslip.v2",
            "sheet": "Pay",
            "skip_rows": 2,
            "defaults": {"currency": "AUD", "pdf_page": 2, "award": 1.5},
        }
    )
    assert mapping == ExportMapping(
        columns={"gross pay": "gross", "c": "ignore"},
        date_format="DD/MM/YYYY",
        schema="au.payslip.v2",
        sheet="Pay",
        skip_rows=2,
        defaults={"currency": "AUD", "pdf_page": "2", "award": "1.5"},
        headers={"gross pay": "gross  pay", "c": "C"},
    )
    assert ExportMapping.from_json({}) == ExportMapping()
