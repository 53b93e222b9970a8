"""The pay-run tab with a payroll system's export, driven offscreen with pytest-qt against the
real demo service: pick the export, correct the suggested fields, see the first rows as they
will be registered (problems in plain words), register with one combined PDF, and find the
columns remembered for the next export with the same headers. Screenshots at 1366x768 go to
the test's tmp_path (and /tmp/shots-export) for a person to look at."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from pypdf import PdfReader
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.issuer.export.memory import SETTINGS_KEY
from app.issuer.run.results import RunSummary
from app.settings.desk import Settings
from app.ui.issue.payrun_columns import NOT_PLACED
from app.ui.issue.screen import IssueScreen
from testbed.export_files import payslip_page_lines, text_pdf

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[4]
REVIEW = Path("/tmp/shots-export")


def shot(widget: IssueScreen, folder: Path, name: str) -> None:
    widget.resize(1366, 768)
    for _ in range(3):
        QApplication.processEvents()
    path = folder / f"{name}-1366x768.png"
    assert widget.grab().save(str(path))
    REVIEW.mkdir(exist_ok=True)
    shutil.copy(path, REVIEW / path.name)


def export_with_a_title_column(path: Path) -> list[list[str]]:
    """The AU sample export with a "Title" (Mr/Ms) column first, which the suggestion takes for
    the job title, and row 2's period end made impossible."""
    with open(ROOT / "resources/exports/au_payroll_export.csv", encoding="utf-8-sig") as handle:
        rows = list(csv.reader(handle))
    rows[0].insert(0, "Title")
    for index, row in enumerate(rows[1:], start=1):
        row.insert(0, "Ms" if index % 2 else "Mr")
    rows[2][5] = "31/11/2026"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return rows


def test_export_columns_preview_combined_pdf_and_remembered(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path, screenshot_dir: Path
) -> None:
    screen.tabs.setCurrentIndex(1)
    tab = screen.payrun
    source = tmp_path / "pay run 13 Nov.csv"
    rows = export_with_a_title_column(source)
    with qtbot.waitSignal(tab.columns_ready, timeout=20000) as ready:
        tab.run_file.setText(str(source))
    look = ready.args[0]
    assert look.is_export and not look.remembered
    columns = tab.columns
    assert columns.box.isVisible() and columns.columns_widget.isVisible()
    # The suggestion: "Title" taken for the job title, "Job Title" and "Super" left open.
    assert columns.columns()["Title"] == "pii.position"
    assert columns.columns()["Job Title"] is None and columns.columns()["Super"] is None
    assert columns.picker("Super").currentText() == NOT_PLACED
    qtbot.waitUntil(lambda: "Choose a field" in columns.status.text(), timeout=10000)
    assert "Job Title, Super" in columns.status.text()
    shot(screen, screenshot_dir, "export-columns-suggested")

    # The clerk corrects the suggestion: Title is ignored, Job Title is the position.
    title, job = columns.picker("Title"), columns.picker("Job Title")
    title.setCurrentIndex(title.findData("ignore"))
    job.setCurrentIndex(job.findData("pii.position"))
    super_picker = columns.picker("Super")
    with qtbot.waitSignal(tab.preview_ready, timeout=20000) as previewed:
        super_picker.setCurrentIndex(super_picker.findData("ignore"))
    preview = previewed.args[0]
    assert [r.external_id for r in preview] == ["E1001", "E1002", "E1003", "E1004", "E1005"]
    assert preview[0].name == "Casey Sampleton" and preview[0].gross == "3846.15"
    assert preview[0].problems == ()
    assert preview[1].problems == ("Pay Period End: expected a real calendar date as DD/MM/YYYY",)
    assert columns.preview.item(1, 5).text().startswith("Pay Period End")
    assert columns.preview.item(0, 5).text() == "Ready"
    assert "1 of the first 5 rows have problems" in columns.status.text()
    shot(screen, screenshot_dir, "export-preview")

    # One PDF with every payslip, split by the names on its pages.
    combined = tmp_path / "payslips.pdf"
    people = [(r[1], r[2]) for r in rows[1:]]
    combined.write_bytes(text_pdf([payslip_page_lines(ext, name, 1, 1) for ext, name in people]))
    tab.files.combined.setChecked(True)
    tab.files.run_pdf_dir.setText(str(combined))
    out = tmp_path / "out"
    tab.run_out_dir.setText(str(out))
    with qtbot.waitSignal(tab.run_finished, timeout=120000) as finished:
        tab.run_button.click()
    summary = finished.args[0]
    assert isinstance(summary, RunSummary), summary
    assert summary.progress.created == 4 and summary.progress.rejected == 1
    stamped = sorted(p.name for p in (out / "pdfs").iterdir())
    assert stamped == [
        "000001_E1001.pdf",
        "000003_E1003.pdf",
        "000004_E1004.pdf",
        "000005_E1005.pdf",
    ]
    first = PdfReader(out / "pdfs" / "000001_E1001.pdf").pages[0].extract_text() or ""
    assert "Casey Sampleton" in first
    assert "Done: 4 registered" in tab.run_status.text()
    assert tab.results_view.isVisible() and not columns.box.isVisible()
    assert tab.results_model.rows[1][2] == "rejected"
    shot(screen, screenshot_dir, "export-run-done")

    # Remembered by header set (order and case do not matter), and no cell in the settings.
    saved = Settings.load().extra[SETTINGS_KEY]
    assert len(saved) == 1
    settings_text = (Path(Settings.load.__globals__["config_dir"]()) / "settings.json").read_text()
    assert "Sampleton" not in settings_text and "3,846.15" not in settings_text
    next_run = tmp_path / "pay run 27 Nov.csv"
    with open(next_run, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        header = [h.upper() for h in rows[0]]
        writer.writerow(header[1:] + header[:1])
        for row in rows[1:]:
            writer.writerow(row[1:] + row[:1])
    with qtbot.waitSignal(tab.preview_ready, timeout=20000) as previewed:
        tab.run_file.setText(str(next_run))
    assert tab.columns.look is not None and tab.columns.look.remembered
    assert columns.box.isVisible() and columns.preview.isVisible()
    assert not columns.columns_widget.isVisible()  # straight to the preview
    assert previewed.args[0][0].problems == ()
    assert "as you confirmed them last time" in columns.intro.text()
    shot(screen, screenshot_dir, "export-remembered")


def test_a_mapping_that_failed_every_row_is_not_remembered(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path
) -> None:
    """Issue 35: one "Check file" with a mapping that failed every row remembered it as
    confirmed, so the next export opened on the preview with its columns folded away. Now only
    a check that read a row confirms it."""
    from app.issuer.export.memory import remembered_mapping

    screen.tabs.setCurrentIndex(1)
    tab = screen.payrun
    source = tmp_path / "pay run 13 Nov.csv"
    export_with_a_title_column(source)
    with qtbot.waitSignal(tab.columns_ready, timeout=20000) as ready:
        tab.run_file.setText(str(source))
    headers = ready.args[0].headers
    columns = tab.columns
    for header, target in (("Job Title", "pii.position"), ("Super", "ignore"), ("Title", "ignore")):
        picker = columns.picker(header)
        picker.setCurrentIndex(picker.findData(target))
    gross = columns.picker("Gross Earnings")
    gross.setCurrentIndex(gross.findData("ignore"))  # every row now lacks its gross pay
    with qtbot.waitSignal(tab.checked, timeout=60000) as checked:
        tab.run_check_button.click()
    assert checked.args[0].ready == 0 and len(checked.args[0].problems) == 5
    assert remembered_mapping(Settings.load(), headers) is None
    assert remembered_mapping(screen.context.settings, headers) is None
    gross.setCurrentIndex(gross.findData("gross"))  # put right: four rows read, one refused
    with qtbot.waitSignal(tab.checked, timeout=60000) as checked:
        tab.run_check_button.click()
    assert checked.args[0].ready == 4
    remembered = remembered_mapping(Settings.load(), headers)
    assert remembered is not None and dict(remembered.columns)["gross earnings"] == "gross"
