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
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from app.shell.context import AppContext
from app.ui.applicant.panel import ApplicantPanel
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.tasks import TaskRunner
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


def _wait_done(qtbot: Any, panel: ApplicantPanel, timeout: int = 20000) -> None:
    qtbot.waitUntil(lambda: panel.pending == 0 and panel.check is not None, timeout=timeout)


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
    assert [r[:2] for r in rows] == [
        ["#1", "payslip1.pdf"],
        ["#2", "payslip2.pdf"],
        ["#3", "payslip3.pdf"],
    ]
    assert all(r[2] == "VERIFIED" for r in rows)
    assert rows[0][3:5] == [APPLICANT, "Demo Payroll Pty Ltd"]  # name and employer columns
    assert rows[0][7] == "3,846.15 AUD" and rows[0][8] == "3,076.92 AUD"
    banner = _texts(panel.banner)
    assert "NOT VERIFIED" in banner and "Do not accept them as they are." in banner
    assert "A payslip is missing" in banner
    assert f"names {APPLICANT}, not the applicant Citizen, Jane" in banner
    income = _texts(panel.income)
    assert "Per year" not in income and "No income is proved" in income  # §10 (issue 35)
    assert "does not name the applicant" in income
    assert MARKER_ACCOUNT not in banner + income
    panel.income.amount.setText("1500")
    assert panel.income.share.text() == "No income to compare with."
    _shot(screen, "applicant_not_verified", screenshot_dir)

    panel.name_field.setText("jane SMITH")  # the right applicant: only the gap remains
    assert "not the applicant" not in _texts(panel.banner)
    assert "a payslip is missing, so the pays shown" in _texts(panel.income)

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
    income = _texts(panel.income)
    assert "Per year" in income and "Per month" in income and "× 26 pays a year" in income
    assert "The average of 3 fortnightly payslips" in income
    panel.income.amount.setText("1500")
    panel.income.per.setCurrentIndex(2)  # per month
    assert panel.income.share.text().startswith("Rent of 1,500.00 AUD a month is 22% of net")
    assert "reference, not a decision" in panel.income.share.text()
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
    assert [r[:3] for r in _table(panel)] == [
        ["#1", "payslip1.pdf", "VERIFIED"],
        ["#2", "cover letter.txt", "NO PAYSLIP CODE"],
    ]
    banner = _texts(panel.banner)
    assert "CANNOT VERIFY" in banner
    assert "#2 cover letter.txt holds no payslip code" in banner
    assert "an input holds no payslip code" in _texts(panel.income)


SCREENS = {"1366x768": (1366, 768), "1024x600": (1024, 600), "1366x768 at 150 %": (910, 512)}
"""Logical sizes: Qt lays out in logical pixels, so 1366x768 at QT_SCALE_FACTOR=1.5 is a
910x512 window (as in test_fits_the_screen)."""


def test_a_mixed_set_shows_why_not_income_and_fits_every_screen(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path, screenshot_dir: Path
) -> None:
    """Issue 35: two people's payslips and a revoked one prove no income (the reason instead);
    rows are numbered and named, with name and employer, NOT VERIFIED rows in the verdict's
    colours; every control has an accessible name; and the page never widens the main window
    past the smallest screen, not even after it has been left."""
    from PySide6.QtGui import QColor

    from app.ui.accessible_names import needs_name
    from app.ui.main_window import MainWindow
    from app.ui.widgets.style import PALETTES

    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    mine = register_fortnights(demo_context.issuer, key, 2)
    (other,) = register_fortnights(demo_context.issuer, key, 1, name="John Citizen")
    (revoked,) = register_fortnights(demo_context.issuer, key, 1)
    demo_context.issuer.revoke(revoked.reference)
    files = write_inputs(tmp_path, [*mine, other], ["pdf", "pdf", "pdf"])
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    narrow = SCREENS["1366x768 at 150 %"]
    window.resize(*narrow)
    window.show()
    qtbot.waitExposed(window)
    screen = window.verify_screen
    panel = _open(qtbot, screen)
    panel.name_field.setText("Jane Smith")
    _drop(panel, files)
    panel.add_code(revoked.sealed.payload)
    _wait_done(qtbot, panel)

    rows = _table(panel)
    assert [r[:3] for r in rows] == [
        ["#1", "payslip1.pdf", "VERIFIED"],
        ["#2", "payslip2.pdf", "VERIFIED"],
        ["#3", "payslip3.pdf", "VERIFIED"],
        ["#4", "Code 4", "NOT VERIFIED"],
    ]
    assert rows[2][3:5] == ["John Citizen", "Demo Payroll Pty Ltd"]
    assert rows[3][3:] == [""] * 6  # a revoked payslip shows no name, employer or figures
    table = panel.table
    red = PALETTES["not_verified"]
    revoked_row, verdict_cell, first_row = table.item(3, 0), table.item(3, 2), table.item(0, 0)
    assert revoked_row is not None and verdict_cell is not None and first_row is not None
    assert revoked_row.background().color() == QColor(red.tint)
    assert verdict_cell.foreground().color() == QColor(red.strong)
    assert first_row.background().color() == QColor(PALETTES["verified"].tint)
    banner = _texts(panel.banner)
    assert "#4 Code 4 is NOT VERIFIED" in banner
    assert "#3 payslip3.pdf, paid on" in banner and "names John Citizen" in banner
    income = _texts(panel.income)
    assert "Per year" not in income and "No income is proved" in income
    assert "a payslip is NOT VERIFIED" in income
    assert panel.check is not None and panel.check.income.income is None

    unnamed = [
        f"{type(w).__name__} {w.objectName()}"
        for w in [panel, *panel.findChildren(QWidget)]
        if needs_name(w) and w.isVisibleTo(window) and not w.accessibleName().strip()
    ]
    assert unnamed == []
    assert table.accessibleName() == "Payslips of this applicant"

    for name, size in SCREENS.items():
        window.resize(*size)
        QApplication.processEvents()
        assert window.width() <= size[0], (name, window.width())
        assert window.minimumSizeHint().width() <= size[0], (name, window.minimumSizeHint())
        bar = table.horizontalScrollBar()
        h = table.horizontalHeader()
        assert bar.maximum() == 0 or not bar.isVisible(), (  # the columns fit, words wrap
            name,
            table.viewport().width(),
            [h.sectionSize(c) for c in range(table.columnCount())],
        )
        label = name.replace(" ", "_").replace("%", "pc")
        body = panel.findChild(QWidget, "applicantBody")
        assert body is not None
        for part, widget in (("window", window), ("body", body)):
            path = screenshot_dir / f"applicant_mixed_{part}_{label}.png"
            assert widget.grab().save(str(path))
            REVIEW.mkdir(exist_ok=True)
            shutil.copy(path, REVIEW / path.name)
    window.resize(*narrow)
    qtbot.mouseClick(panel.back_button, Qt.MouseButton.LeftButton)
    QApplication.processEvents()
    assert window.width() <= narrow[0] and window.minimumSizeHint().width() <= narrow[0]
    window.close()
    window.tasks.wait()
