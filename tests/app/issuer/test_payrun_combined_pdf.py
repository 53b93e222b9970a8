"""A payroll system's combined payslip PDF: pages assigned to rows by the names and ids in their
text, split, stamped, and each employee's stamped PDF verifying as that employee through
`python -m app verify` against a real service; pages that match nobody (or several) reported
and never stamped; a scanned PDF refused."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from pypdf import PdfReader

from app.api import ApiClient
from app.commands.run import verify_command
from app.issuer import IssuerKey, PayRun, RunSettings
from app.issuer.export.combined_pdf import SPLIT_DIR, Person, assign_pages
from app.issuer.export.mapping import ExportMapping
from testbed.export_files import image_pdf, payslip_page_lines, text_pdf
from tests.commands import run_module
from tests.service.conftest import (  # noqa: F401 - the fixtures
    LiveService,
    live,
    tinydb_server,
)

FIRST = [
    "Casey",
    "Jordan",
    "Riley",
    "Morgan",
    "Avery",
    "Quinn",
    "Harper",
    "Rowan",
    "Sage",
    "Emerson",
]
LAST = ["Sampleton", "Testwell"]
PEOPLE = [(f"AU-{i + 1:03d}", f"{FIRST[i % 10]} {LAST[i // 10]}") for i in range(20)]
TWO_PAGES = {"AU-005", "AU-010", "AU-016"}
HEADER = [
    "Employee ID",
    "Employee",
    "Pay Period End",
    "Payment Date",
    "Gross Pay",
    "PAYG",
    "Net Pay",
]
MAPPING = ExportMapping.from_json(
    {
        "columns": {
            "Employee ID": "external_id",
            "Employee": "pii.employee_name",
            "Pay Period End": "period_end",
            "Payment Date": "payment_date",
            "Gross Pay": "gross",
            "PAYG": "paygw",
            "Net Pay": "net",
        },
        "date_format": "DD/MM/YYYY",
        "schema": "au.payslip.v2",
        "defaults": {"currency": "AUD"},
    }
)


def write_export(path: Path, people: list[tuple[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for ext, name in people:
            writer.writerow(
                [ext, name, "12/11/2026", "13/11/2026", "$3,846.15", "$782.00", "$3,064.15"]
            )
    return path


def combined_pages() -> list[list[str]]:
    """A cover page (names nobody), every payslip (some two pages), and a department summary
    naming two employees between payslips 12 and 13."""
    pages: list[list[str]] = [["Pay run report", "Fortnight ending 12/11/2026", "Demo Pty Ltd"]]
    for index, (ext, name) in enumerate(PEOPLE):
        count = 2 if ext in TWO_PAGES else 1
        for page in range(1, count + 1):
            pages.append(payslip_page_lines(ext, name, page, count))
        if index == 11:
            pages.append(
                ["Department summary", f"Approved by {PEOPLE[0][1]}", f"Prepared by {PEOPLE[1][1]}"]
            )
    return pages


def results(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def _app_verify(command: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`python -m app verify ...` run in this process by the function the command runs."""
    status = verify_command(command[1:])
    out, err = capsys.readouterr()
    return status, out, err


def test_combined_pdf_split_stamped_and_each_verifies_as_its_employee(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    extra = ("AU-021", "Blake Nopages")  # in the export, on no page of the PDF
    source = write_export(tmp_path / "export.csv", [*PEOPLE, extra])
    combined = tmp_path / "payslips.pdf"
    combined.write_bytes(text_pdf(combined_pages()))
    out = tmp_path / "out"
    url = live.url
    client = ApiClient(url, live.issuer["client_id"], live.issuer["client_secret"], issuer_url=url)
    settings = RunSettings(
        source=source, out_dir=out, workers=1, mapping=MAPPING, combined_pdf=combined
    )
    with client:
        summary = PayRun(
            client, IssuerKey.from_info(live.issuer), live.config.scan_base, settings
        ).run()
    rows = results(out)
    assert [r["status"] for r in rows] == ["created"] * 21
    assert summary.notes[0] == "combined PDF: 25 pages, 20 employees found in it"
    assert "page 1 names no employee of the file; not stamped" in summary.notes[1]
    assert "page 16 names several employees (rows 1, 2); not stamped" in summary.notes[2]
    by_id = {r["external_id"]: r for r in rows}
    # The rows around the unplaced pages say so; the one with no page gets a badge only.
    assert "page 1 of the combined PDF names no employee" in by_id["AU-001"]["reason"]
    assert "page 16 of the combined PDF names several employees" in by_id["AU-012"]["reason"]
    assert "page 16 of the combined PDF names several employees" in by_id["AU-013"]["reason"]
    assert by_id["AU-021"]["pdf"] == "" and by_id["AU-021"]["badge"]
    assert "no page of the combined PDF names this employee" in by_id["AU-021"]["reason"]
    assert not (out / SPLIT_DIR).exists()  # the split pages are not left behind
    # Nothing of the PDF's text or the export's names in results.csv.
    text = (out / "results.csv").read_text()
    assert "Sampleton" not in text and "Testwell" not in text and "Nopages" not in text

    verifier = [
        f"--service-url={url}",
        f"--client-id={live.verifier['client_id']}",
        f"--client-secret={live.verifier['client_secret']}",
    ]
    home = tmp_path / "home"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(home)}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PAYSLIP_CONFIG_DIR", str(home / "config"))
    stamped = sorted((out / "pdfs").iterdir())
    assert len(stamped) == 20
    for index, (ext, name) in enumerate(PEOPLE):
        row = by_id[ext]
        assert row["pdf"] == f"pdfs/{int(row['row']):06d}_{ext}.pdf"
        pdf = out / row["pdf"]
        pages = PdfReader(pdf).pages
        assert len(pages) == (2 if ext in TWO_PAGES else 1), ext
        assert f"Employee ID: {ext}" in (pages[0].extract_text() or "")
        command = ["verify", str(pdf), "--json", *verifier]
        if index == 0:  # as an operator runs it, in a process of its own
            done = run_module("app", *command, env=env)
            status, stdout, stderr = done.returncode, done.stdout, done.stderr
        else:  # the same command's function: ~1.5 s of interpreter start saved per PDF
            status, stdout, stderr = _app_verify(command, capsys)
        assert status == 0, (ext, stdout, stderr)
        result = json.loads(stdout)
        assert result["verified"] is True
        assert result["service_reference"] == row["service_reference"]
        assert result["employee"]["employee_name"] == name, ext


def test_a_scanned_pdf_says_it_has_no_text_to_match(tmp_path: Path) -> None:
    source = write_export(tmp_path / "export.csv", PEOPLE[:2])
    scanned = tmp_path / "scan.pdf"
    scanned.write_bytes(image_pdf(2))
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps(MAPPING.to_json()))
    env = {**os.environ, "PAYSLIP_CLIENT_SECRET": "s", "PAYSLIP_ENCRYPTION_KEY": "A" * 43}
    done = run_module(
        "app",
        "issue-run",
        str(source),
        "--mapping",
        str(mapping),
        "--combined-pdf",
        str(scanned),
        "--out",
        str(tmp_path / "out"),
        "--service-url",
        "http://127.0.0.1:9",
        "--client-id",
        "x",
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "scan.pdf has no text to match pages to employees" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / SPLIT_DIR).exists()


def test_page_assignment_rules() -> None:
    people = [
        Person(1, "E-0001", "Sam Lee"),
        Person(2, "E-0002", "Sam Leeson"),
        Person(3, "7", "Kim  Park"),  # a short numeric id is not matched; the name is
        Person(4, "", "Ana Maria Lopez"),
    ]
    texts = [
        "Pay run cover sheet, 7 employees",  # nobody (the lone 7 is not an id)
        "Payslip for SAM LEESON\nEmployee e-0002",
        "continued: leave balances",  # continues row 2
        "Employee: Sam Lee (E-0001)",
        "Payslip: Kim\nPark, 7 hours",
        "Team sheet: Sam Lee and Ana Maria Lopez",  # several rows
        "continued",  # continues the ambiguous page: nobody's
        "Ana Maria   Lopez",
    ]
    assignment = assign_pages(texts, people)
    assert assignment.pages == {2: [1, 2], 1: [3], 3: [4], 4: [7]}
    assert assignment.unmatched == [0]
    assert assignment.ambiguous == {5: (1, 4)}
    assert assignment.orphans == [6]
    assert "page 1 of the combined PDF names no employee" in assignment.row_notes[2][0]
    assert any("page 6" in note for note in assignment.row_notes[3])
    assert any("page 7" in note for note in assignment.row_notes[4])
    # Page and row numbers only: no text of the PDF in what is reported.
    reported = " ".join(
        [*assignment.summary(), *(n for v in assignment.row_notes.values() for n in v)]
    )
    assert "Lee" not in reported and "Park" not in reported and "Lopez" not in reported
