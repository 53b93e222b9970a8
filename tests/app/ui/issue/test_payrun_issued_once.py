"""The pay-run tab never issues a payslip twice by accident (issue 35, point 5): the same payroll
export registered into out1 and then into out2 stops before anything is registered and says so in
words, offering to open that folder, to skip those rows, to revoke them (a confirmation naming
each by external id and period) or to issue them again on purpose (a confirmation too).

Driven offscreen through the real tab, the real demo service and the real confirmation boxes
(opened without blocking, answered through their buttons). Screenshots at 1366x768 go to
/tmp/shots35-ledger for a person to look at.
"""

from __future__ import annotations

import csv
import datetime
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.inputs.reading import read_input
from app.issuer.ledger import Ledger, day_words, ledger_dir
from app.issuer.run.results import RunSummary
from app.shell.context import AppContext
from app.ui.issue.payrun_tab import PayRunTab
from app.ui.issue.screen import IssueScreen
from tests.app.shots import review_shot

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[4]
EXPORT = ROOT / "resources/exports/au_payroll_export.csv"
REVIEW = Path("/tmp/shots35-ledger")


@pytest.fixture
def screen(screen: IssueScreen) -> IssueScreen:
    """The Issue screen (tests/app/ui/issue/conftest.py) on its pay-run tab."""
    screen.tabs.setCurrentIndex(1)
    return screen


def shot(widget: QWidget, name: str, resize: bool = True) -> None:
    review_shot(widget, REVIEW, name, resize)


def choose_export(tab: PayRunTab, qtbot: QtBot, tmp_path: Path) -> Path:
    """harbour_export.csv (the AU sample export), its unplaced columns ignored."""
    source = tmp_path / "harbour_export.csv"
    shutil.copy(EXPORT, source)
    with qtbot.waitSignal(tab.columns_ready, timeout=20000):
        tab.run_file.setText(str(source))
    for header, field in tab.columns.columns().items():
        if field is None:
            picker = tab.columns.picker(header)
            picker.setCurrentIndex(picker.findData("ignore"))
    return source


def register(tab: PayRunTab, qtbot: QtBot, out: Path) -> object:
    tab.run_out_dir.setText(str(out))
    with qtbot.waitSignal(tab.run_finished, timeout=60000) as finished:
        tab.run_button.click()
    return finished.args[0]


def records(context: AppContext) -> int:
    assert context.service is not None
    return sum(context.service.store.counts().records_by_issuer.values())


def personal_data() -> list[str]:
    with open(EXPORT, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = ("Employee", "BSB", "Account Number", "Account Name", "Address")
    return [row[column] for row in rows for column in columns if row[column]]


def refused_into(
    tab: PayRunTab, qtbot: QtBot, context: AppContext, out1: Path, out: Path, count: int = 5
) -> None:
    """`out` is refused: nothing registered, the box says when and where."""
    before = records(context)
    answer = register(tab, qtbot, out)
    assert isinstance(answer, str)
    today = day_words(datetime.date.today().isoformat())
    words = f"{count} of these payslips were issued on {today} into {out1.resolve()}"
    assert words in tab.issued_before.words.text()
    assert "Nothing was registered" in tab.run_status.text()
    assert "issued before" in tab.run_status.text()
    assert tab.issued_before.isVisibleTo(tab)
    assert records(context) == before
    assert not (out / "results.csv").exists()


def test_the_same_export_twice_is_refused_then_skipped_or_issued_again(
    screen: IssueScreen, qtbot: QtBot, demo_context: AppContext, tmp_path: Path
) -> None:
    tab = screen.payrun
    choose_export(tab, qtbot, tmp_path)
    out1, out2, out3 = (tmp_path / name for name in ("out1", "out2", "out3"))
    first = register(tab, qtbot, out1)
    assert isinstance(first, RunSummary) and first.progress.created == 5

    refused_into(tab, qtbot, demo_context, out1, out2)
    shot(screen, "payrun-issued-before")
    opened: list[QUrl] = []
    tab.open_folder = opened.append  # the desktop's file manager, recorded
    tab.issued_before.open_button.click()
    assert [url.toLocalFile() for url in opened] == [str(out1.resolve())]

    with qtbot.waitSignal(tab.run_finished, timeout=60000) as finished:
        tab.issued_before.skip_button.click()
    skipped = finished.args[0]
    assert isinstance(skipped, RunSummary), skipped
    assert skipped.progress.skipped == 5 and skipped.progress.created == 0
    assert [row[2] for row in tab.results_model.rows] == ["skipped"] * 5
    assert "5 skipped (issued before)" in tab.run_status.text()
    shot(screen, "payrun-skipped")

    refused_into(tab, qtbot, demo_context, out1, out3)
    before = records(demo_context)
    tab.issued_before.again_button.click()
    box = tab.issued_before.confirmation
    assert box is not None and box.isVisible()
    assert "both would verify" in box.text()
    assert "E1001: 30 Oct 2026 to 12 Nov 2026, paid 13 Nov 2026" in box.informativeText()
    assert tab.issued_before.confirm_button is not None
    with qtbot.waitSignal(tab.run_finished, timeout=60000) as finished:
        tab.issued_before.confirm_button.click()
    again = finished.args[0]
    assert isinstance(again, RunSummary) and again.progress.created == 5
    assert records(demo_context) == before + 5

    # The ledger: every payslip issued, no personal data.
    text = "".join(p.read_text("utf-8") for p in ledger_dir().glob("*.jsonl"))
    assert "E1005" in text
    for value in personal_data():
        assert value not in text, "personal data in the ledger"


def test_revoking_the_earlier_payslips_lets_the_export_be_issued_again(
    screen: IssueScreen, qtbot: QtBot, demo_context: AppContext, tmp_path: Path
) -> None:
    tab = screen.payrun
    choose_export(tab, qtbot, tmp_path)
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    assert isinstance(register(tab, qtbot, out1), RunSummary)
    with open(out1 / "results.csv", newline="", encoding="utf-8") as handle:
        first_badge = out1 / next(csv.DictReader(handle))["badge"]
    refused_into(tab, qtbot, demo_context, out1, out2)

    tab.issued_before.revoke_button.click()
    box = tab.issued_before.confirmation
    assert box is not None and box.isVisible()
    assert box.text().startswith("Revoke 5 payslips issued before?")
    names = box.informativeText()
    for external_id in ("E1001", "E1002", "E1003", "E1004", "E1005"):
        assert f"{external_id}: 30 Oct 2026 to 12 Nov 2026, paid 13 Nov 2026" in names
    for value in personal_data():
        assert value not in names
    box.adjustSize()
    shot(box, "revoke-confirmation", resize=False)
    assert tab.issued_before.confirm_button is not None
    with qtbot.waitSignal(tab.issued_before.revoked, timeout=30000):
        tab.issued_before.confirm_button.click()
    assert "5 payslips revoked" in tab.run_status.text()
    assert not tab.issued_before.isVisibleTo(tab)
    payload = read_input(str(first_badge)).payloads[0]
    assert demo_context.verifier.verify_payload(payload).verified is False  # revoked

    again = register(tab, qtbot, out2)  # Register pay run again: no longer refused
    assert isinstance(again, RunSummary) and again.progress.created == 5
    ledger = Ledger(next(ledger_dir().glob("*.jsonl")))
    assert sum(1 for item in ledger.entries() if item.revoked_on) == 5
    assert sum(1 for item in ledger.entries() if not item.revoked_on) == 5


def test_revoke_selected_payslips_of_a_run_from_its_table(
    screen: IssueScreen, qtbot: QtBot, demo_context: AppContext, tmp_path: Path
) -> None:
    tab = screen.payrun
    choose_export(tab, qtbot, tmp_path)
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    assert isinstance(register(tab, qtbot, out1), RunSummary)
    with open(out1 / "results.csv", newline="", encoding="utf-8") as handle:
        badges = [out1 / row["badge"] for row in csv.DictReader(handle)]
    assert not tab.revoke_button.isEnabled()  # nothing selected
    view = tab.results_view
    view.selectRow(0)
    with_ctrl = view.selectionModel()
    with_ctrl.select(
        tab.results_filter.index(1, 0),
        with_ctrl.SelectionFlag.Select | with_ctrl.SelectionFlag.Rows,
    )
    assert tab.revoke_button.isEnabled()
    tab.revoke_button.click()
    box = tab.issued_before.confirmation
    assert box is not None and box.isVisible()
    assert box.text().startswith("Revoke 2 payslips chosen?")
    assert "E1001: 30 Oct 2026" in box.informativeText()
    assert "E1002: 30 Oct 2026" in box.informativeText()
    assert "E1003" not in box.informativeText()
    assert tab.issued_before.confirm_button is not None
    with qtbot.waitSignal(tab.issued_before.revoked, timeout=30000):
        tab.issued_before.confirm_button.click()
    verdicts = [
        demo_context.verifier.verify_payload(read_input(str(b)).payloads[0]).verified
        for b in badges
    ]
    assert verdicts == [False, False, True, True, True]
    assert not tab.revoke_button.isEnabled()  # the selection was cleared
    view.selectRow(0)
    tab.revoke_button.click()  # only revoked ones: said, nothing asked
    assert "revoked already" in tab.run_status.text()

    refused_into(tab, qtbot, demo_context, out1, out2, count=3)
