"""The verify screen's "Check an applicant" page against the real embedded service, offscreen:
three PDFs dropped at once, the list, the set's verdict, its problems and the income; a badge
scanned into the set; Clear all and the idle timeout forget everything."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QLabel

from app.shell.context import AppContext
from app.ui.applicant_panel import ApplicantPanel
from app.ui.tasks import TaskRunner
from app.ui.verify_screen import VerifyScreen
from testbed.applicant_payslips import APPLICANT, register_fortnights, write_inputs
from testbed.factories import MARKER_ACCOUNT

pytestmark = pytest.mark.gui
REVIEW = Path("/tmp/shots24")


@pytest.fixture
def screen(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path
) -> Iterator[VerifyScreen]:
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    tasks = TaskRunner()
    made = VerifyScreen(demo_context, tasks, start_camera=False)
    qtbot.addWidget(made)
    made.resize(1366, 768)
    made.show()
    qtbot.waitExposed(made)
    yield made
    made.shutdown()
    assert tasks.wait(20000)
    made.close()


def _drop(panel: ApplicantPanel, paths: list[str]) -> QDropEvent:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(p) for p in paths])
    event = QDropEvent(
        QPointF(300, 300),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    panel.dropEvent(event)
    return event


def _wait_done(qtbot: Any, panel: ApplicantPanel) -> None:
    qtbot.waitUntil(lambda: panel.pending == 0 and panel.check is not None, timeout=20000)


def _texts(widget: Any) -> str:
    """What the person sees: the visible labels (replaced ones are hidden, then deleted)."""
    QApplication.processEvents()  # labels added to a shown layout are shown by a queued call
    shown = [label for label in widget.findChildren(QLabel) if label.isVisibleTo(widget)]
    return "\n".join(label.text() for label in shown)


def _table(panel: ApplicantPanel) -> list[list[str]]:
    t = panel.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def _shot(widget: Any, name: str, folder: Path) -> None:
    for _ in range(3):
        QApplication.processEvents()
    path = folder / f"{name}-1366x768.png"
    assert widget.grab().save(str(path))
    REVIEW.mkdir(exist_ok=True)
    shutil.copy(path, REVIEW / path.name)


def _open(qtbot: Any, screen: VerifyScreen) -> ApplicantPanel:
    panel = screen.applicant
    assert panel is not None and panel.open_button_on_screen is not None
    qtbot.mouseClick(panel.open_button_on_screen, Qt.MouseButton.LeftButton)
    assert screen.pages.currentWidget() is panel
    assert not panel.open_button_on_screen.isVisible()  # on its own page, the button goes
    return panel


def test_three_pdfs_dropped_show_list_verdict_problems_and_income(
    screen: VerifyScreen,
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    payslips = register_fortnights(demo_context.issuer, key, 4, skip=frozenset({1}))
    files = write_inputs(tmp_path, payslips, ["pdf", "pdf", "pdf"])
    panel = _open(qtbot, screen)
    panel.name_field.setText("Citizen, Jane")
    assert _drop(panel, files).isAccepted()
    assert panel.table.rowCount() == 3  # listed at once, checked in the background
    _wait_done(qtbot, panel)
    rows = _table(panel)
    assert [r[0] for r in rows] == ["payslip1.pdf", "payslip2.pdf", "payslip3.pdf"]
    assert all(r[1] == "VERIFIED" for r in rows)
    assert rows[0][4] == "3,846.15 AUD" and rows[0][5] == "3,076.92 AUD"
    banner = _texts(panel.banner)
    assert "NOT VERIFIED" in banner and "Do not accept them as they are." in banner
    assert "A payslip is missing" in banner
    assert f"names {APPLICANT}, not the applicant Citizen, Jane" in banner
    income = _texts(panel.income)
    assert "Per year" in income and "Per month" in income and "× 26 pays a year" in income
    assert MARKER_ACCOUNT not in banner + income
    panel.income.amount.setText("1500")
    panel.income.per.setCurrentIndex(2)  # per month
    assert panel.income.share.text().startswith("Rent of 1,500.00 AUD a month is 22% of net")
    _shot(screen, "applicant_not_verified", screenshot_dir)

    panel.name_field.setText("jane SMITH")  # the right applicant: only the gap remains
    assert "not the applicant" not in _texts(panel.banner)
    panel.income.amount.setText("600")
    panel.income.per.setCurrentIndex(0)
    assert "% of net income" in panel.income.share.text()
    assert "reference, not a decision" in panel.income.share.text()

    panel.clear_all()
    assert panel.table.rowCount() == 0 and panel.name_field.text() == ""
    assert panel.income.amount.text() == "" and "Add the applicant" in _texts(panel.banner)


def test_a_complete_set_scanned_badge_by_badge_is_verified_and_times_out(
    screen: VerifyScreen, demo_context: AppContext, qtbot: Any, screenshot_dir: Path
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    payslips = register_fortnights(demo_context.issuer, key, 3)
    panel = _open(qtbot, screen)
    panel.name_field.setText(APPLICANT)
    for payslip in payslips[:2]:  # a USB scanner types the code and Enter
        qtbot.keyClicks(panel.code_field, payslip.sealed.scan_url())
        qtbot.keyClick(panel.code_field, Qt.Key.Key_Return)
    screen._on_camera_code(payslips[2].sealed.scan_url())  # the camera reads the third badge
    screen._on_camera_code(payslips[2].sealed.scan_url())  # and again: one document
    _wait_done(qtbot, panel)
    assert panel.table.rowCount() == 3
    banner = _texts(panel.banner)
    assert "VERIFIED" in banner and "Accept these payslips." in banner
    assert panel.check is not None and panel.check.problems == ()
    _shot(screen, "applicant_verified", screenshot_dir)
    demo_context.settings.idle_timeout = 1
    panel._touch()
    qtbot.waitUntil(lambda: panel.table.rowCount() == 0, timeout=5000)
    assert panel.name_field.text() == ""


def test_not_in_the_kiosk(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path
) -> None:
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    tasks = TaskRunner()
    kiosk = VerifyScreen(demo_context, tasks, kiosk=True, start_camera=False)
    qtbot.addWidget(kiosk)
    assert kiosk.applicant is None
    kiosk.shutdown()
    assert tasks.wait(5000)
    kiosk.close()


def test_leaving_the_page_forgets_the_set(
    screen: VerifyScreen, demo_context: AppContext, qtbot: Any
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    (payslip,) = register_fortnights(demo_context.issuer, key, 1)
    panel = _open(qtbot, screen)
    panel.add_code(payslip.sealed.payload)
    _wait_done(qtbot, panel)
    qtbot.mouseClick(panel.back_button, Qt.MouseButton.LeftButton)
    assert screen.pages.currentWidget() is screen.scan_page
    assert panel.table.rowCount() == 0 and panel.check is None


def test_a_file_with_no_payslip_code_leaves_the_set_undecided(
    screen: VerifyScreen, demo_context: AppContext, qtbot: Any, tmp_path: Path
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    payslips = register_fortnights(demo_context.issuer, key, 1)
    files = write_inputs(tmp_path, payslips, ["pdf"])
    note = tmp_path / "cover letter.txt"
    note.write_text("Dear agent, please find my payslips attached.")
    panel = _open(qtbot, screen)
    _drop(panel, [*files, str(note)])
    _wait_done(qtbot, panel)
    assert [r[:2] for r in _table(panel)] == [
        ["payslip1.pdf", "VERIFIED"],
        ["cover letter.txt", "NO PAYSLIP CODE"],
    ]
    banner = _texts(panel.banner)
    assert "CANNOT VERIFY" in banner
    assert "cover letter.txt holds no payslip code" in banner
