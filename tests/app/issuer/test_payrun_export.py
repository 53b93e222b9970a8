"""Pay runs from a payroll system's own export (PROTOCOL §12): its headers, encodings,
delimiters, day-first dates and `$` amounts, XLSX cells, the mapping file and the suggested
mapping, all read through the same row checks as our own layout."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.issuer.export.mapping import ExportMapping, load_mapping
from app.issuer.export.suggest import suggest_for_file
from app.issuer.run.rows import PayrunFileError, PayrunRow, RowProblem
from app.issuer.run.source import count_rows, read_payrun
from testbed.export_files import write_xlsx
from tests.commands import run_module

ROOT = Path(__file__).resolve().parents[3]
EXPORTS = ROOT / "resources" / "exports"
SAMPLES = ("au_payroll_export.csv", "au_payroll_export_semicolon.csv", "nz_payroll_export.xlsx")


def mapping(**data: Any) -> ExportMapping:
    return ExportMapping.from_json(data)


def rows_of(path: Path, m: ExportMapping | None = None) -> list[PayrunRow | RowProblem]:
    return list(read_payrun(path, mapping=m))


AU_COLUMNS = {
    "Staff Number": "external_id",
    "Worker": "pii.employee_name",
    "Start": "period_start",
    "Finish": "period_end",
    "Paid": "payment_date",
    "Total Gross": "gross",
    "Tax Withheld": "paygw",
    "Take Home": "net",
    "Expenses": "reimbursements",
}
AU_HEADER = "Staff Number,Worker,Start,Finish,Paid,Total Gross,Tax Withheld,Take Home,Expenses"


def au_mapping(**extra: Any) -> ExportMapping:
    return mapping(
        columns=AU_COLUMNS,
        date_format="DD/MM/YYYY",
        schema="au.payslip.v2",
        defaults={"currency": "AUD"},
        **extra,
    )


def test_foreign_headers_day_first_dates_and_dollar_amounts(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text(
        AU_HEADER + "\n"
        'S1,Casey Sampleton,30/10/2026,12/11/2026,13/11/2026,"$1,234.56",$200.00,'
        '"$1,047.06",(12.50)\n'
        'S2,Jordan Testwell,1/11/2026,14/11/2026,15/11/2026,"$ 2,000.00",300.00-,1700,\n',
        encoding="utf-8",
    )
    first, second = rows_of(source, au_mapping())
    assert isinstance(first, PayrunRow) and isinstance(second, PayrunRow)
    assert first.external_id == "S1"
    assert first.payslip_non_pii == {
        "currency": "AUD",
        "period_start": "2026-10-30",
        "period_end": "2026-11-12",
        "payment_date": "2026-11-13",
        "gross": "1234.56",
        "paygw": "200.00",
        "net": "1047.06",
        "reimbursements": "-12.50",
    }
    assert first.pii_text.split("|")[1] == "Casey Sampleton"
    assert second.payslip_non_pii["period_start"] == "2026-11-01"
    assert second.payslip_non_pii["gross"] == "2000.00"
    assert second.payslip_non_pii["paygw"] == "-300.00"
    assert "reimbursements" not in second.payslip_non_pii  # an empty cell is an absent field


def test_semicolons_windows_1252_and_a_bom(tmp_path: Path) -> None:
    text = AU_HEADER + '\nS1,Zoë Fictional,30/10/2026,12/11/2026,13/11/2026,"$1,234.56",0,0,\n'
    semicolons = text.replace(",", ";").replace('"$1;234.56"', "$1,234.56")
    for name, data in {
        "cp1252.csv": semicolons.encode("cp1252"),
        "bom.csv": text.encode("utf-8-sig"),
        "tab.csv": text.replace(",", "\t").replace('"$1\t234.56"', "$1,234.56").encode(),
    }.items():
        source = tmp_path / name
        source.write_bytes(data)
        (row,) = rows_of(source, au_mapping())
        assert isinstance(row, PayrunRow), (name, row)
        assert row.pii_text.split("|")[1] == "Zoë Fictional", name
        assert row.payslip_non_pii["gross"] == "1234.56", name


def test_v1_cents_from_money_are_exact(tmp_path: Path) -> None:
    source = tmp_path / "v1.csv"
    source.write_text(
        "Emp,Name,From,To,Paid,Gross,Tax,Net,YTD Gross,YTD Tax\n"
        'E1,Casey Sampleton,30/10/2026,12/11/2026,13/11/2026,"$3,846.15",0.10,"$1,000,000.29",'
        '"$34,615.35",$0.29\n'
    )
    m = mapping(
        columns={
            "Emp": "external_id",
            "Name": "pii.employee_name",
            "From": "period_start",
            "To": "period_end",
            "Paid": "payment_date",
            "Gross": "gross",
            "Tax": "paygw",
            "Net": "net",
            "YTD Gross": "ytd_gross",
            "YTD Tax": "ytd_paygw_cents",
        },
        date_format="DD/MM/YYYY",
        schema="au.payslip.v1",
        defaults={"currency": "AUD"},
    )
    (row,) = rows_of(source, m)
    assert isinstance(row, RowProblem)  # `YTD Tax` is mapped to whole cents, not money
    assert row.reasons == (
        "YTD Tax (PAYG, year to date): expected a whole number of cents such as 384615",
    )
    m = mapping(**{**m.to_json(), "columns": {**m.to_json()["columns"], "YTD Tax": "ytd_paygw"}})
    (row,) = rows_of(source, m)
    assert isinstance(row, PayrunRow), row
    assert row.payslip_non_pii["gross_cents"] == 384615
    assert row.payslip_non_pii["paygw_cents"] == 10
    assert row.payslip_non_pii["net_cents"] == 100000029
    assert row.payslip_non_pii["ytd_gross_cents"] == 3461535
    assert row.payslip_non_pii["ytd_paygw_cents"] == 29


def test_xlsx_with_date_cells_numbers_and_a_title_row(tmp_path: Path) -> None:
    source = write_xlsx(
        tmp_path / "run.xlsx",
        ["Emp", "Name", "Pay Date", "End", "Gross", "PAYE", "Net", "Cents"],
        [
            [
                "N1",
                "Aroha Testington",
                dt.date(2026, 11, 13),
                dt.datetime(2026, 11, 12),
                0.1 + 0.2,
                612.4,
                3200,
                1,
            ],
            [7, "Wiremu Placeholder", "13/11/2026", "12/11/2026", "$10.00", 1, 9, None],
        ],
        title="Pay Run Report - fortnight ending 12 Nov 2026",
    )
    columns = {
        "Emp": "external_id",
        "Name": "pii.employee_name",
        "Pay Date": "payment_date",
        "End": "period_end",
        "Gross": "gross",
        "PAYE": "paye",
        "Net": "net",
        "Cents": "ignore",
    }
    m = mapping(
        columns=columns,
        date_format="DD/MM/YYYY",
        schema="nz.payslip.v2",
        skip_rows=2,
        defaults={"currency": "NZD"},
    )
    first, second = rows_of(source, m)
    assert isinstance(first, PayrunRow) and isinstance(second, PayrunRow), (first, second)
    assert first.payslip_non_pii == {
        "currency": "NZD",
        "payment_date": "2026-11-13",
        "period_end": "2026-11-12",
        "gross": "0.30",
        "paye": "612.40",
        "net": "3200.00",
    }
    assert second.external_id == "7"
    assert second.payslip_non_pii["payment_date"] == "2026-11-13"
    # Without skipping the title, the title is taken for the header and refused by name.
    with pytest.raises(PayrunFileError, match="Pay Run Report - fortnight ending 12 Nov 2026"):
        rows_of(source, mapping(columns=columns, schema="nz.payslip.v2"))


def test_an_unknown_header_is_one_error_naming_every_such_header(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text(AU_HEADER + ",Bonus Notes, Cost Centre \nS1,A B,,,,,,,,x,y\n")
    with pytest.raises(PayrunFileError) as caught:
        rows_of(source, au_mapping())
    message = str(caught.value)
    assert "Bonus Notes" in message and "Cost Centre" in message
    assert "Total Gross" not in message  # the mapped ones are fine
    assert "x" not in message.split(":")[-1].split(", ")  # no cell values


def test_cli_unknown_header_exits_2_before_anything_is_sent(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text(AU_HEADER + ",Mystery Column\nS1,A B,,,,,,,,x\n")
    map_file = tmp_path / "mapping.json"
    map_file.write_text(json.dumps(au_mapping().to_json()))
    out = tmp_path / "out"
    # The service URL points nowhere: a connection attempt would fail with exit 3, not 2.
    env = {**os.environ, "PAYSLIP_CLIENT_SECRET": "s", "PAYSLIP_ENCRYPTION_KEY": "A" * 43}
    done = run_module(
        "app",
        "issue-run",
        str(source),
        "--mapping",
        str(map_file),
        "--out",
        str(out),
        "--service-url",
        "http://127.0.0.1:9",
        "--client-id",
        "x",
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "Mystery Column" in done.stderr and "Traceback" not in done.stderr
    # One error line; the loopback warning (badges on 127.0.0.1 open on no phone) may precede it.
    errors = [x for x in done.stderr.strip().splitlines() if "warning:" not in x]
    assert len(errors) == 1, done.stderr
    assert not (out / "results.csv").exists()


def test_a_bad_cell_names_the_exports_header(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text(
        AU_HEADER + "\nS1,Casey Sampleton,30/10/2026,31/02/2026,13/11/2026,$1.00,lots,1,\n"
        "S2,Jordan Testwell,30/10/2026,2026-11-12,13/11/2026,,1,1,\n"
    )
    first, second = rows_of(source, au_mapping())
    assert isinstance(first, RowProblem) and isinstance(second, RowProblem)
    assert "Finish (Pay period end): expected a real calendar date as DD/MM/YYYY" in first.reasons
    assert "Tax Withheld (Tax withheld (PAYG)): expected an amount such as 1234.56" in first.reasons
    assert second.reasons == ("Total Gross (Gross pay): required (column missing or empty)",)


def test_mapping_file_mistakes_are_plain_errors(tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    for data, words in [
        ({"columns": {"Gross": "gros"}}, "Gross -> gros"),
        ({"columns": {}, "date_format": "DD-MM-YY"}, "date_format"),
        ({"columns": {}, "skip_rows": -1}, "skip_rows"),
        ({"columns": {}, "colums": {}}, "colums"),
    ]:
        bad.write_text(json.dumps(data))
        with pytest.raises(PayrunFileError, match=words):
            load_mapping(bad)


@pytest.mark.parametrize("name", SAMPLES)
def test_suggested_mapping_is_right_for_each_sample(name: str) -> None:
    shipped = json.loads((EXPORTS / name).with_suffix(".mapping.json").read_text())
    suggested = suggest_for_file(EXPORTS / name)
    # The shipped mapping is the suggestion with the clerk's one decision: unplaced -> ignore.
    expected = {
        **shipped,
        "columns": {h: (None if t == "ignore" else t) for h, t in shipped["columns"].items()},
    }
    assert suggested == expected
    rows = rows_of(EXPORTS / name, load_mapping((EXPORTS / name).with_suffix(".mapping.json")))
    assert rows and all(isinstance(r, PayrunRow) for r in rows), rows


def test_samples_carry_what_the_exports_say() -> None:
    au = rows_of(
        EXPORTS / "au_payroll_export.csv", load_mapping(EXPORTS / "au_payroll_export.mapping.json")
    )
    assert isinstance(au[0], PayrunRow)
    assert au[0].payslip_non_pii["gross"] == "3846.15"
    assert au[0].payslip_non_pii["period_end"] == "2026-11-12"
    semi = rows_of(
        EXPORTS / "au_payroll_export_semicolon.csv",
        load_mapping(EXPORTS / "au_payroll_export_semicolon.mapping.json"),
    )
    assert isinstance(semi[0], PayrunRow) and isinstance(semi[3], PayrunRow)
    assert semi[0].pii_text.split("|")[1] == "Zoë Fictional"
    assert semi[0].payslip_non_pii["reimbursements"] == "-12.50"
    assert semi[3].payslip_non_pii["reimbursements"] == "-12.50"  # `12.50-`
    nz_mapping = load_mapping(EXPORTS / "nz_payroll_export.mapping.json")
    assert count_rows(EXPORTS / "nz_payroll_export.xlsx", nz_mapping) == 4  # title rows left out
    assert count_rows(EXPORTS / "au_payroll_export.csv") == 5
    nz = rows_of(
        EXPORTS / "nz_payroll_export.xlsx", load_mapping(EXPORTS / "nz_payroll_export.mapping.json")
    )
    assert isinstance(nz[1], PayrunRow)
    assert nz[1].payslip_non_pii["tax_code"] == "M SL"
    assert nz[1].payslip_non_pii["student_loan"] == "147.00"
    assert nz[1].payslip_non_pii["period_start"] == "2026-10-31"


def test_cli_suggest_mapping_needs_no_service_or_out() -> None:
    done = run_module(
        "app", "issue-run", str(EXPORTS / "nz_payroll_export.xlsx"), "--suggest-mapping"
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["columns"]["PAYE"] == "paye" and printed["skip_rows"] == 2
    assert printed["schema"] == "nz.payslip.v2"


def test_unplaced_headers_are_null_in_the_suggestion(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text("Employee,Gross Pay,Favourite Colour\nA B,1,blue\n")
    suggested = suggest_for_file(source)
    assert suggested["columns"] == {
        "Employee": "pii.employee_name",
        "Gross Pay": "gross",
        "Favourite Colour": None,
    }
    # A suggestion used as it is still refuses the unplaced header.
    with pytest.raises(PayrunFileError, match="Favourite Colour"):
        rows_of(source, ExportMapping.from_json(suggested))


def test_stray_personal_data_is_caught_in_an_exports_columns(tmp_path: Path) -> None:
    source = tmp_path / "export.csv"
    source.write_text(
        AU_HEADER + ",Award Name\n"
        'S1,Casey Sampleton,30/10/2026,12/11/2026,13/11/2026,"$1,234.56",$200.00,$1034.56,,'
        "Sampleton Retail Award\n"
    )
    m = mapping(**{**au_mapping().to_json(), "columns": {**AU_COLUMNS, "Award Name": "award"}})
    (row,) = rows_of(source, m)
    assert isinstance(row, RowProblem)
    assert row.reasons == (
        "Award Name (Award): seems to contain the employee's name; personal data belongs only "
        "in the employee's details, where it is encrypted",
    )


def test_worker_take_home_bank_bsb_and_bank_acct_are_suggested(tmp_path: Path) -> None:
    """Issue 35: an export headed Worker, Take-Home, Bank BSB, Bank Acct got no suggestion for
    those four, and its problems named internal paths ("pii.employee_name: required")."""
    source = tmp_path / "export.csv"
    source.write_text(
        "Worker ID,Worker,Pay Date,Period From,Period To,Gross Pay,PAYG,Take-Home,Bank BSB,"
        "Bank Acct\n"
        "W1,Casey Sampleton,13/11/2026,30/10/2026,12/11/2026,100.00,20.00,80.00,062-000,12345678\n"
        "W2,,13/11/2026,30/10/2026,12/11/2026,100.00,20.00,80.00,062-000,12345678\n"
    )
    suggested = suggest_for_file(source)
    columns = suggested["columns"]
    assert columns["Worker"] == "pii.employee_name" and columns["Worker ID"] == "external_id"
    assert columns["Take-Home"] == "net"
    assert columns["Bank BSB"] == "pii.bsb" and columns["Bank Acct"] == "pii.account_number"
    assert None not in columns.values()
    first, second = rows_of(source, ExportMapping.from_json(suggested))
    assert not isinstance(first, RowProblem), first
    assert isinstance(second, RowProblem)
    assert second.reasons == ("Worker (Employee name): required (this row's cell is empty)",)
    without = {**suggested, "columns": {**columns, "Worker": "ignore"}}
    first, _ = rows_of(source, ExportMapping.from_json(without))
    assert isinstance(first, RowProblem)
    assert first.reasons == ("Employee name: required (no column goes into it)",)
    assert not any("pii." in reason for reason in first.reasons + second.reasons)
