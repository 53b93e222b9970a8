"""The Issue screen, driven offscreen with pytest-qt against the real demo service: inline
validation, the badge preview, saving the PNG, stamping a PDF, service-managed badges, typed-in
credentials and a pay run. Screenshots go to the test's tmp_path for a human to look at."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pytestqt.qtbot import QtBot

from app.context import AppContext
from app.inputs.reading import read_input
from app.issuer.runner import RunSummary
from app.ui.issue_screen import IssueScreen
from app.ui.tasks import TaskRunner
from service.demo import sample_records

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
AU_PII = {
    "employee_name": "Casey Sampleton",
    "position": "Store Manager",
    "employer_abn": "51824753556",
    "bsb": "062-000",
    "account_number": "11112222",
    "line1": "1 Example Street",
    "suburb": "Exampleton",
    "state": "NSW",
    "postcode": "2000",
}
NZ_PII = {
    "employee_name": "Sam Sampleford",
    "ird_number": "123-456-789",
    "employer_name": "Demo Payroll NZ Ltd",
    "account_number": "12-3456-7890123-00",
    "line1": "2 Example Road",
    "suburb": "Te Aro",
    "city": "Wellington",
    "postcode": "6011",
}


@pytest.fixture
def screen(
    qtbot: QtBot,
    demo_context: AppContext,
    no_leaks: None,
) -> Iterator[IssueScreen]:
    tasks = TaskRunner()
    widget = IssueScreen(demo_context, tasks)
    qtbot.addWidget(widget)
    widget.resize(1180, 900)
    widget.show()
    yield widget
    tasks.wait()
    widget.shutdown()
    widget.close()


def blank_pdf(pages: int = 1) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(595, 842)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def shoot(widget: IssueScreen, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    assert widget.grab().save(str(path))
    return path


def test_required_fields_and_bad_values_are_shown_inline(
    screen: IssueScreen, qtbot: QtBot, screenshot_dir: Path
) -> None:
    failures: list[str] = []
    screen.single.failed.connect(failures.append)
    screen.single.issue_button.click()
    form = screen.single.payslip_form
    assert form is not None
    for path in ("period_end", "payment_date", "currency", "gross", "paygw", "net"):
        editor = form.editor(path)
        assert editor is not None and editor.error.isVisible(), path
        assert editor.error.text() == "required"
    assert failures and "need attention" in screen.single.status.text()
    assert screen.single.pii_form.error.text() == "employee name: is required"

    form.editor("period_end").set_text("2026-02-30")  # type: ignore[union-attr]
    form.editor("gross").set_text("12.3.4")  # type: ignore[union-attr]
    form.editor("net").set_text("1,234.50")  # type: ignore[union-attr]
    screen.single.check_button.click()
    assert form.editor("period_end").error.text() == (  # type: ignore[union-attr]
        "expected a real calendar date as YYYY-MM-DD"
    )
    assert form.editor("gross").error.text() == "expected a number such as 1234.50"  # type: ignore[union-attr]
    assert not form.editor("net").error.isVisible()  # type: ignore[union-attr]
    shoot(screen, screenshot_dir, "issue-validation")
    assert screen.single.last is None  # nothing was sent


def test_conditional_fields_follow_the_earning_type(screen: IssueScreen, qtbot: QtBot) -> None:
    screen.single.set_schema("au.payslip.v1")
    form = screen.single.payslip_form
    assert form is not None
    form.more_button.setChecked(True)
    earnings = form._array("earnings")
    assert earnings is not None
    item = earnings.add_item()
    allowance = item.editors["allowance_type"]
    qtbot.waitUntil(lambda: item.editors["type"].isVisibleTo(screen))
    assert not allowance.isVisibleTo(screen)
    item.editors["type"].set_text("allowance")
    assert allowance.isVisibleTo(screen)
    item.editors["amount_cents"].set_text("19.80")
    screen.single.check_button.click()
    assert allowance.error.text() == "required when type is allowance"


def test_self_managed_badge_preview_save_and_stamp(
    screen: IssueScreen,
    qtbot: QtBot,
    demo_context: AppContext,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    _, record, _ = sample_records()[0]
    screen.single.set_schema("au.payslip.v1")
    screen.single.fill_example(record["payslip_non_pii"], AU_PII)
    assert screen.single.check()
    with qtbot.waitSignal(screen.single.issued, timeout=20000) as issued:
        screen.single.issue_button.click()
    result = issued.args[0]
    assert result.managed_by == "issuer" and result.created
    pixmap = screen.single.preview.pixmap()
    assert pixmap is not None and not pixmap.isNull()
    assert screen.single.save_button.isEnabled() and result.service_reference in (
        screen.single.reference_label.text()
    )
    shoot(screen, screenshot_dir, "issue-badge")

    target = tmp_path / "badge.png"
    with qtbot.waitSignal(screen.single.saved, timeout=10000):
        screen.single.save_png(target)
    assert target.read_bytes() == result.badge_png
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    source = tmp_path / "payslip.pdf"
    source.write_bytes(blank_pdf(2))
    stamped = tmp_path / "payslip-verified.pdf"
    with qtbot.waitSignal(screen.single.saved, timeout=20000):
        screen.single.stamp_pdf(source, stamped, 2, "top-right")
    reading = read_input(str(stamped))
    assert reading.payloads and not reading.disagreement
    for payload in reading.payloads:
        verified = demo_context.verifier.verify_payload(payload)
        assert verified["verified"] is True
        assert verified["employee"]["employee_name"] == "Casey Sampleton"
        assert verified["employee"]["address"] == "1 Example Street, Exampleton NSW 2000"
        assert verified["payslip"]["payslip_non_pii"] == record["payslip_non_pii"]

    with qtbot.waitSignal(screen.single.failed, timeout=10000):
        screen.single.stamp_pdf(source, tmp_path / "x.pdf", 9, "top-right")
    assert (
        "no such page" in screen.single.status.text().lower()
        or "page" in screen.single.status.text()
    )


def test_service_managed_badge(
    screen: IssueScreen, qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path
) -> None:
    _, record, _ = sample_records()[1]
    screen.single.set_schema("nz.payslip.v2")
    assert "NZ2" in screen.single.pii_form.title()
    screen.single.fill_example(record["payslip_non_pii"], NZ_PII)
    screen.single.service_managed.setChecked(True)
    with qtbot.waitSignal(screen.single.issued, timeout=20000) as issued:
        screen.single.issue_button.click()
    result = issued.args[0]
    assert result.managed_by == "service"
    verified = demo_context.verifier.verify_payload(result.payload)
    assert verified["employee"]["ird_number"] == "123-456-789"
    assert verified["payslip"]["payslip_non_pii"]["gross"] == "3200.00"
    shoot(screen, screenshot_dir, "issue-service-managed")


def test_typed_in_credentials_stay_out_of_settings(
    qtbot: QtBot,
    demo_context: AppContext,
    config_dir: Path,
    no_leaks: None,
) -> None:
    context = dataclasses.replace(demo_context, issuer=None, issuer_info={})
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    info = demo_context.issuer_info
    panel = widget.issuer_panel
    panel.fields["client_id"].setText(info["client_id"])
    panel.fields["client_secret"].setText(info["client_secret"])
    panel.fields["encryption_key"].setText(info["encryption_key"])
    panel.fields["key_version"].setText(info["key_version"])
    _, record, _ = sample_records()[1]
    widget.single.set_schema("nz.payslip.v2")
    widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
    try:
        with qtbot.waitSignal(widget.single.issued, timeout=20000) as issued:
            widget.single.issue_button.click()
        verified = demo_context.verifier.verify_payload(issued.args[0].payload)
        assert verified["verified"] is True
        settings_text = (config_dir / "settings.json").read_text()
        assert info["client_id"] in settings_text
        assert info["client_secret"] not in settings_text
        assert info["encryption_key"] not in settings_text
        assert not (config_dir / "secrets.json").exists()  # "Remember" was not ticked
    finally:
        tasks.wait()
        widget.shutdown()
        widget.close()


def test_pay_run_streams_results(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path, screenshot_dir: Path
) -> None:
    screen.tabs.setCurrentIndex(1)
    source = tmp_path / "run.csv"
    lines = (ROOT / "resources" / "sample_payrun.csv").read_text().splitlines()
    bad = lines[1].replace("2026-11-12", "2026-11-31").replace("AU-0001", "AU-BAD")
    source.write_text("\n".join([*lines, bad]) + "\n")
    screen.payrun.run_file.setText(str(source))
    with qtbot.waitSignal(screen.payrun.checked, timeout=20000) as checked:
        screen.payrun.run_check_button.click()
    assert checked.args[0].ready == len(lines) - 1 and len(checked.args[0].problems) == 1
    assert "1 with problems" in screen.payrun.run_status.text()

    screen.payrun.run_out_dir.setText(str(tmp_path / "out"))
    with qtbot.waitSignal(screen.payrun.run_finished, timeout=60000) as finished:
        screen.payrun.run_button.click()
    summary = finished.args[0]
    assert isinstance(summary, RunSummary), summary
    assert summary.progress.created == len(lines) - 1 and summary.progress.rejected == 1
    model = screen.payrun.results_model
    assert [row[2] for row in model.rows] == ["created"] * (len(lines) - 1) + ["rejected"]
    assert "period_end" in model.rows[-1][4]
    assert screen.payrun.run_progress.value() == screen.payrun.run_progress.maximum()
    shoot(screen, screenshot_dir, "issue-pay-run")
    screen.payrun.problems_only.setChecked(True)
    assert screen.payrun.results_filter.rowCount() == 1
    assert (tmp_path / "out" / "results.csv").exists()
    assert len(list((tmp_path / "out" / "badges").iterdir())) == len(lines) - 1
    # Nothing personal in the results file.
    text = (tmp_path / "out" / "results.csv").read_text()
    assert "Sampleton" not in text and json.dumps(AU_PII["account_number"]) not in text


def test_employee_data_in_a_payslip_text_field_is_flagged(screen: IssueScreen) -> None:
    payslip = {
        "period_end": "2026-11-12",
        "payment_date": "2026-11-13",
        "currency": "AUD",
        "gross": "100.00",
        "paygw": "10.00",
        "net": "90.00",
        "award": "Retail award for Sampleton",
    }
    screen.single.fill_example(payslip, AU_PII)
    assert not screen.single.check()
    form = screen.single.payslip_form
    assert form is not None
    award = form.editor("award")
    assert award is not None and award.isVisibleTo(screen)  # the optional part was opened
    assert award.error.text().startswith("seems to contain the employee's name")
    assert "Sampleton" not in screen.single.status.text() + award.error.text()
    award.set_text("General Retail Industry Award 2020")
    assert screen.single.check()
