"""The Issue screen, driven offscreen with pytest-qt against the real demo service: inline
validation, the badge preview, saving the PNG, stamping a PDF, service-managed badges, typed-in
credentials and a pay run. Screenshots go to the test's tmp_path for a human to look at."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QFontInfo
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QDateEdit,
    QLabel,
    QTabBar,
    QWidget,
)
from pytestqt.qtbot import QtBot

from app.inputs.reading import read_input
from app.issuer.local_issuer import save_local_issuer
from app.issuer.run.results import RunSummary
from app.shell.context import AppContext
from app.ui.issue.screen import IssueScreen
from app.ui.issue.single import stamped_pdf_name
from app.ui.widgets.folders import last_folder
from app.ui.widgets.tasks import TaskRunner
from service.composition.demo import sample_records
from testbed.factories import blank_pdf
from tests.app.shots import shoot
from tests.app.ui.file_dialogs import FileDialogs

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[4]
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
def screen(screen: IssueScreen) -> IssueScreen:
    """The Issue screen (tests/app/ui/issue/conftest.py) at 1280x800."""
    screen.resize(1280, 800)
    return screen


def test_required_fields_and_bad_values_are_shown_inline_and_clear_as_fixed(
    screen: IssueScreen, qtbot: QtBot, screenshot_dir: Path
) -> None:
    failures: list[str] = []
    single = screen.single
    single.failed.connect(failures.append)
    single.issue_button.click()
    form = single.payslip_form
    assert form is not None
    assert form.editor("currency").text() == "AUD"  # type: ignore[union-attr]  # preset
    for path in ("period_end", "payment_date", "gross", "paygw", "net"):
        editor = form.editor(path)
        assert editor is not None and editor.error.isVisible(), path
        assert editor.error.text() == "Please fill this in"
    assert failures and "6 fields need attention" in single.status.text()
    assert single.pii_form.error.text() == "employee name: is required"
    assert single.issue_button.isEnabled() and not single.stamp_button.isEnabled()
    shoot(screen, screenshot_dir, "issue-validation")

    form.editor("gross").set_text("12.3.4")  # type: ignore[union-attr]
    form.editor("net").set_text("1,234.50")  # type: ignore[union-attr]
    # The messages follow the typing, without pressing anything.
    qtbot.waitUntil(lambda: not form.editor("net").error.isVisible(), timeout=3000)  # type: ignore[union-attr]
    assert form.editor("gross").error.text() == "expected a number such as 1234.50"  # type: ignore[union-attr]
    assert "5 fields need attention" in single.status.text()
    form.editor("period_end").set_text("2026-11-12")  # type: ignore[union-attr]
    form.editor("payment_date").set_text("2026-11-13")  # type: ignore[union-attr]
    form.editor("gross").set_text("1,500.00")  # type: ignore[union-attr]
    form.editor("paygw").set_text("265.50")  # type: ignore[union-attr]
    single.pii_form.fill({"employee_name": "Casey Sampleton"})
    qtbot.waitUntil(lambda: "Everything looks right now" in single.status.text(), timeout=3000)
    assert not any(e.error.isVisible() for e in form.all_editors())
    assert not single.pii_form.error.isVisible()
    assert single.last is None  # nothing was sent


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
    assert allowance.error.text() == "Please choose the kind of allowance"


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
    # The employee's details left the screen; the next step has the focus, not "page 1".
    assert not screen.single.pii_form.has_input()
    assert "cleared from the screen" in screen.single.status.text()
    assert screen.single.stamp_button.hasFocus()
    shoot(screen, screenshot_dir, "issue-badge")

    target = tmp_path / "badge.png"
    with qtbot.waitSignal(screen.single.saved, timeout=10000):
        screen.single.save_png(target)
    assert target.read_bytes() == result.badge_png
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    source = tmp_path / "payslip.pdf"
    source.write_bytes(blank_pdf(2))
    stamped = stamped_pdf_name(source)
    assert stamped.name == "payslip-badge.pdf"
    with qtbot.waitSignal(screen.single.saved, timeout=20000):
        screen.single.stamp_pdf(source, stamped, 2, "top-right")
    reading = read_input(str(stamped))
    assert reading.payloads and not reading.disagreement
    for payload in reading.payloads:
        verified = demo_context.verifier.verify_payload(payload)
        assert verified.verified is True
        assert verified.employee.employee_name == "Casey Sampleton"
        assert verified.employee.address == "1 Example Street, Exampleton NSW 2000"
        assert verified.payslip.payslip_non_pii == record["payslip_non_pii"]

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
    assert verified.employee.ird_number == "123-456-789"
    assert verified.payslip.payslip_non_pii["gross"] == "3200.00"
    shoot(screen, screenshot_dir, "issue-service-managed")


def test_typed_in_credentials_stay_out_of_settings(
    qtbot: QtBot,
    demo_context: AppContext,
    config_dir: Path,
    screenshot_dir: Path,
    no_leaks: None,
) -> None:
    context = dataclasses.replace(demo_context, issuer=None, issuer_info=None)
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    info = demo_context.issuer_info
    assert info is not None
    panel = widget.issuer_panel
    widget.show()
    assert "No payroll provider is set up" in panel.summary.text()
    assert panel.details.isVisibleTo(widget)  # nothing saved: the fields are open
    shoot(widget, screenshot_dir, "issue-no-issuer-yet")
    panel.fields["client_id"].setText(info.client_id)
    panel.fields["client_secret"].setText(info.client_secret)
    panel.fields["encryption_key"].setText(info.encryption_key)
    panel.fields["key_version"].setText(info.key_version)
    _, record, _ = sample_records()[1]
    widget.single.set_schema("nz.payslip.v2")
    widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
    try:
        with qtbot.waitSignal(widget.single.issued, timeout=20000) as issued:
            widget.single.issue_button.click()
        verified = demo_context.verifier.verify_payload(issued.args[0].payload)
        assert verified.verified is True
        settings_text = (config_dir / "settings.json").read_text()
        assert info.client_id in settings_text
        assert info.client_secret not in settings_text
        assert info.encryption_key not in settings_text
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


DEVELOPER_TERMS = (
    "schema",
    "payload",
    "au.payslip",
    "nz.payslip",
    "PAYGW",
    "AU2",
    "NZ2",
    "Self-managed",
    "Service-managed",
    "iss_",
    "key version",
    "registerNonPII",
)


def visible_words(widget: QWidget) -> str:
    """Every piece of text a person can see on `widget` right now (labels, buttons, inputs)."""
    texts = []
    for child in widget.findChildren(QWidget):
        if not child.isVisibleTo(widget):
            continue
        if isinstance(child, (QLabel, QAbstractButton)):
            texts.append(child.text())
        elif isinstance(child, QComboBox):
            texts.append(child.currentText())
        elif isinstance(child, QTabBar):
            texts.extend(child.tabText(i) for i in range(child.count()))
    return "\n".join(texts)


def test_issue_one_payslip_in_plain_words(
    screen: IssueScreen, qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path
) -> None:
    single = screen.single
    combo = single.schema_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["Australia", "New Zealand"]
    words = visible_words(screen)
    for term in DEVELOPER_TERMS:
        assert term.lower() not in words.lower(), term
    assert "This app makes the badge" in words and "The service makes the badge" in words
    assert "Encrypted on this computer; never sent in clear" in words
    assert "Issuing as Demo Payroll Pty Ltd" in single.issuer_panel.summary.text().replace(
        "<b>", ""
    ).replace("</b>", "")
    assert not single.issuer_panel.details.isVisibleTo(screen)  # credentials collapsed
    assert single.two_columns  # 1280 px wide: the form and the badge side by side
    form = single.payslip_form
    assert form is not None
    assert isinstance(form.editor("period_end").input, QDateEdit)  # type: ignore[union-attr]
    gross = form.editor("gross").edit  # type: ignore[union-attr]
    assert gross is not None and gross.validator() is not None
    shoot(screen, screenshot_dir, "issue-one-payslip")

    # New Zealand: the currency follows the country; older formats only under "More formats".
    combo.setCurrentIndex(combo.findText("New Zealand"))
    assert single.schema == "nz.payslip.v2"
    assert single.payslip_form.editor("currency").text() == "NZD"  # type: ignore[union-attr]
    single.more_formats.setChecked(True)
    assert combo.count() == 4 and "older format" in combo.itemText(3)

    # Demo mode: an example fills everything; issuing clears the employee's details.
    combo.setCurrentIndex(combo.findText("Australia"))
    assert single.example_button.isVisible()
    single.example_button.click()
    assert single.check()
    shoot(screen, screenshot_dir, "issue-example-filled")
    with qtbot.waitSignal(single.issued, timeout=20000) as issued:
        single.issue_button.click()
    verified = demo_context.verifier.verify_payload(issued.args[0].payload)
    assert verified.verified is True
    assert verified.employee.employee_name == "Casey Sampleton"
    assert not single.pii_form.has_input()
    shoot(screen, screenshot_dir, "issue-registered")
    for term in DEVELOPER_TERMS:
        assert term.lower() not in visible_words(screen).lower(), term

    screen.resize(900, 800)
    QApplication.processEvents()
    assert not single.two_columns  # a narrow window stacks the columns


def test_employee_details_are_cleared_after_the_idle_timeout(
    screen: IssueScreen, qtbot: QtBot, screenshot_dir: Path
) -> None:
    single = screen.single
    assert single.idle.interval() >= 60_000  # the real timeout is minutes, not seconds
    single.idle.setInterval(300)
    single.fill_example(single_example(), AU_PII)
    assert single.pii_form.has_input()
    with qtbot.waitSignal(single.cleared, timeout=5000):
        pass
    assert not single.pii_form.has_input()
    assert "cleared after" in single.status.text()
    shoot(screen, screenshot_dir, "issue-idle-cleared")


def single_example() -> dict[str, str]:
    return {"period_end": "2026-11-12", "payment_date": "2026-11-13", "gross": "100.00"}


def test_issuer_saved_from_admin_is_shown_by_name_without_pasting(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    assert demo_context.admin is not None
    made = demo_context.admin.admin_create_issuer("Harbour Payroll")
    save_local_issuer(
        demo_context.settings,
        demo_context.secrets,
        demo_context.service_url,
        "Harbour Payroll",
        made,
    )
    context = dataclasses.replace(demo_context, issuer=None, issuer_info=None)
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    widget.show()
    try:
        panel = widget.issuer_panel
        assert "Harbour Payroll" in panel.summary.text()
        assert not panel.details.isVisibleTo(widget)
        assert made.client_secret not in visible_words(widget)
        shoot(widget, screenshot_dir, "issue-saved-issuer")
        _, record, _ = sample_records()[1]
        widget.single.set_schema("nz.payslip.v2")
        widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
        with qtbot.waitSignal(widget.single.issued, timeout=20000) as issued:
            widget.single.issue_button.click()
        verified = demo_context.verifier.verify_payload(issued.args[0].payload)
        assert verified.verified is True
        assert verified.payslip.issuer.name == "Harbour Payroll"
    finally:
        tasks.wait()
        widget.shutdown()
        widget.close()


def test_stamped_pdf_keeps_its_name_and_dialogs_remember_their_folder(
    screen: IssueScreen,
    qtbot: QtBot,
    demo_context: AppContext,
    tmp_path: Path,
    file_dialogs: FileDialogs,
) -> None:
    single = screen.single
    single.fill_with_example()
    with qtbot.waitSignal(single.issued, timeout=20000):
        single.issue_button.click()
    payslips = tmp_path / "payslips"
    payslips.mkdir()
    source = payslips / "March payslip.pdf"
    source.write_bytes(blank_pdf())
    stamped = payslips / "March payslip-badge.pdf"
    # The real dialogs, answered through their widgets: the payslip, then where to save it (the
    # name offered), twice; the second save replaces the first file (the dialog asks, yes).
    for answer in (source, stamped, source, stamped):
        file_dialogs.pick(answer)
    with qtbot.waitSignal(single.saved, timeout=20000) as saved:
        single.stamp_button.click()
    assert Path(saved.args[0]) == payslips / "March payslip-badge.pdf"
    assert read_input(saved.args[0]).payloads
    assert "-verified" not in saved.args[0]
    with qtbot.waitSignal(single.saved, timeout=20000):
        single.stamp_button.click()
    asked = [(seen.saving, seen.folder, seen.suggested) for seen in file_dialogs.seen]
    assert asked[0][:2] == (False, str(Path.home()))  # first time: the home folder
    assert asked[2][:2] == (False, str(payslips))  # then: the folder used last for payslip PDFs
    assert asked[3] == (True, str(payslips), stamped.name)  # the name offered, beside it
    # Each purpose has its own folder: badges are not offered the payslips folder.
    assert last_folder(demo_context.settings, "badges") == str(Path.home())
    assert last_folder(demo_context.settings, "payslip PDFs") == str(payslips)


def many_rows(path: Path, count: int) -> Path:
    """A pay-run file of `count` rows made from the sample's (invented) rows, ids made unique."""
    lines = (ROOT / "resources" / "sample_payrun.csv").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    out = [header]
    for index in range(count):
        row = rows[index % len(rows)]
        external_id = row.split(",")[1]
        out.append(row.replace(f",{external_id},", f",RUN-{index:05d},", 1))
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_quick_check_keeps_its_result_when_the_files_columns_arrive_later(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path
) -> None:
    """Choosing a file starts a look at its columns (after a short pause, off the GUI thread);
    a "Check" pressed at once can finish first. The look arriving then must not wipe the
    check's result from the status line and the bar (it did, and the test below flaked on it)."""
    tab = screen.payrun
    screen.tabs.setCurrentIndex(1)
    tab.run_file.setText(str(many_rows(tmp_path / "run.csv", 3)))
    tab.run_out_dir.setText(str(tmp_path / "out"))
    with qtbot.waitSignals([tab.checked, tab.columns_ready], timeout=30000):
        tab.run_check_button.click()
    assert "3 rows ready, 0 with problems" in tab.run_status.text()
    assert tab.run_progress.value() == tab.run_progress.maximum()


def test_pay_run_progress_is_determinate_through_every_phase(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path, screenshot_dir: Path
) -> None:
    tab = screen.payrun
    screen.tabs.setCurrentIndex(1)
    source = many_rows(tmp_path / "run.csv", 300)
    tab.run_file.setText(str(source))
    out = tmp_path / "out"
    tab.run_out_dir.setText(str(out))
    assert tab.run_progress.maximum() > 0  # never the animated "busy" bar
    checked: list[int] = []
    tab.progressed.connect(checked.append)
    with qtbot.waitSignal(tab.checked, timeout=30000):
        tab.run_check_button.click()
    assert tab.run_progress.maximum() > 0 and tab.run_progress.value() == tab.run_progress.maximum()
    assert any(0 < v < tab.run_progress.maximum() for v in checked), checked

    values: list[int] = []
    shots: list[Path] = []

    def seen(value: int) -> None:
        values.append(value)
        if not shots and 0.2 * tab.run_progress.maximum() < value < tab.run_progress.maximum():
            shots.extend(shoot(screen, screenshot_dir, "pay-run-progress"))

    tab.progressed.connect(seen)
    with qtbot.waitSignal(tab.run_finished, timeout=120000) as finished:
        tab.run_button.click()
    assert isinstance(finished.args[0], RunSummary), finished.args[0]
    top = tab.run_progress.maximum()
    middle = sorted({v for v in values if 0 < v < top})
    assert len(middle) >= 3, values  # it moved, rather than sitting at 0 and jumping to 100%
    assert values == sorted(values)  # never backwards
    assert tab.run_progress.value() == top
    assert "rows/s" in tab.rate_label.text() and "300 of 300 rows" in tab.rows_label.text()
    assert tab.results_model.rowCount() == 300
    assert shots, "no screenshot mid-run"
    shoot(screen, screenshot_dir, "pay-run-done")

    opened: list[QUrl] = []
    tab.open_folder = opened.append
    assert tab.open_button.isEnabled()
    tab.open_button.click()
    assert opened and Path(opened[0].toLocalFile()) == out


def test_pay_run_hint_is_readable_and_the_sample_file_is_one_click_away(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path, screenshot_dir: Path
) -> None:
    tab = screen.payrun
    screen.tabs.setCurrentIndex(1)
    assert QFontInfo(tab.hint.font()).pixelSize() >= 13  # the old hint was about 9 px
    tab.run_out_dir.setText(str(tmp_path / "sample-out"))
    tab.sample_button.click()
    assert Path(tab.run_file.text()).name == "sample_payrun.csv"
    with qtbot.waitSignal(tab.run_finished, timeout=60000) as finished:
        tab.run_button.click()
    assert isinstance(finished.args[0], RunSummary), finished.args[0]
    assert finished.args[0].progress.created == 6
    words = visible_words(screen)
    for term in ("payload", "schema", "jsonl", "batch"):
        assert term not in words.lower(), term
    shoot(screen, screenshot_dir, "pay-run-sample")


def test_stop_leaves_a_run_that_resumes_without_registering_twice(
    screen: IssueScreen,
    qtbot: QtBot,
    demo_context: AppContext,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    assert demo_context.admin is not None
    before = demo_context.admin.admin_list().record_count
    tab = screen.payrun
    screen.tabs.setCurrentIndex(1)
    tab.batch_size = 40
    tab.run_file.setText(str(many_rows(tmp_path / "run.csv", 200)))
    out = tmp_path / "out"
    tab.run_out_dir.setText(str(out))

    def stop_after_first_rows(rows: object) -> None:
        if tab.results_model.rowCount() >= 40 and tab.run_stop_button.isEnabled():
            tab.run_stop_button.click()

    tab.run_signals.results.connect(stop_after_first_rows)
    with qtbot.waitSignal(tab.run_finished, timeout=120000) as stopped:
        tab.run_button.click()
    tab.run_signals.results.disconnect(stop_after_first_rows)
    message = stopped.args[0]
    assert isinstance(message, str) and message.startswith("Stopped after"), message
    assert "same output folder" in message and "nothing will be registered twice" in message
    done_first = tab.results_model.rowCount()
    assert 40 <= done_first < 200
    assert 0 < tab.run_progress.value() < tab.run_progress.maximum()  # not reset to zero
    assert tab.open_button.isEnabled() and tab.run_button.isEnabled()
    shoot(screen, screenshot_dir, "pay-run-stopped")

    with qtbot.waitSignal(tab.run_finished, timeout=120000) as finished:
        tab.run_button.click()
    summary = finished.args[0]
    assert isinstance(summary, RunSummary), summary
    assert summary.resumed and summary.progress.rows == 200
    assert demo_context.admin.admin_list().record_count == before + 200  # none twice
    lines = (out / "results.csv").read_text().splitlines()
    assert len(lines) == 201


def test_the_rows_figure_agrees_with_the_bar(qtbot: QtBot) -> None:
    """Issue 35: mid-run the bar (the phases' average) read 51 % beside "0 of 2500 rows done"
    (rows count as done only once every phase is through with them). The figure now names the
    step the run is in and its rows, and "rows done" only as far as rows really are."""
    from app.issuer.progress import Progress
    from app.ui.issue.payrun_progress import RunProgress, phase_views

    shown = RunProgress()
    qtbot.addWidget(shown.bar)
    run = Progress(
        total=2500,
        total_exact=True,
        checked=2500,
        accepted=2500,
        answered=1300,
        phase="registering",
    )
    shown.restart()
    shown.show(run.phase, phase_views(run), 10.0, run.rows, run.total, finished=False)
    percent = round(100 * shown.bar.value() / shown.bar.maximum())
    assert 50 <= percent <= 60  # checked, and half registered: half of the first two of three
    text = shown.rows_label.text()
    assert text == "Registering with the service: 1,300 of 2,500", text
    assert "0 of 2,500 rows done" not in text and "0 of 2500" not in text
    run.phase, run.badges, run.rows = "badges", 900, 900
    run.answered = 2500
    shown.show(run.phase, phase_views(run), 12.0, run.rows, run.total, finished=False)
    assert shown.rows_label.text() == "Making badges: 900 of 2,500 · 900 of 2,500 rows done"
    run.phase, run.badges, run.rows = "done", 2500, 2500
    shown.show(run.phase, phase_views(run), 20.0, run.rows, run.total, finished=True)
    assert shown.rows_label.text() == "2,500 of 2,500 rows done" and shown.bar.value() == 1000
