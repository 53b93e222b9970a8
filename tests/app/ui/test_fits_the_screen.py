"""Every window and dialog fits a small screen: 1024x600 and 1366x768 at scale 1, and 1366x768
at QT_SCALE_FACTOR=1.5, which is 910x512 logical pixels (Qt lays out in logical pixels, so a
size hint within 910x512 is within the screen at 150 %). Dialogs open at their size hint; their
bodies scroll and their buttons sit outside the scroll area. Each staff screen has one vertical
scroll bar (the Issue screen had two, one inside the other)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QDialogButtonBox,
    QScrollArea,
    QTabWidget,
    QWidget,
)
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.main_window import MainWindow
from app.ui.pin_dialog import PinDialog, PinGuard, SetPinDialog
from app.ui.verify.settings_dialog import SettingsDialog
from app.ui.welcome import WelcomeDialog

pytestmark = pytest.mark.gui
SCREENS = {
    "1366x768": QSize(1366, 768),
    "1024x600": QSize(1024, 600),
    "1366x768 at 1.5": QSize(round(1366 / 1.5), round(768 / 1.5)),
}


def fits(widget: QWidget, room: QSize) -> bool:
    hint, least = widget.sizeHint(), widget.minimumSizeHint()
    return all(s.width() <= room.width() and s.height() <= room.height() for s in (hint, least))


@pytest.fixture
def windows(qtbot: QtBot, demo_context: AppContext, no_leaks: None) -> Iterator[dict[str, QWidget]]:
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    desk = MainWindow(demo_context)
    kiosk = MainWindow(demo_context, kiosk=True)
    kiosk.locked = False
    settings, secrets = demo_context.settings, demo_context.secrets
    made: dict[str, QWidget] = {
        "main window": desk,
        "kiosk window": kiosk,
        "settings": SettingsDialog(settings, secrets, desk),
        "kiosk operator settings": SettingsDialog(settings, secrets, kiosk, allow_no_pin=False),
        "operator PIN": PinDialog(PinGuard(settings)),
        "new PIN": SetPinDialog(settings),
        "welcome": WelcomeDialog(settings, secrets),
    }
    for widget in made.values():
        qtbot.addWidget(widget)
    yield made
    for window in (desk, kiosk):
        window.close()
        window.tasks.wait()


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_window_and_dialog_fits(windows: dict[str, QWidget], screen: str) -> None:
    room = SCREENS[screen]
    too_big = {
        name: (w.sizeHint().toTuple(), w.minimumSizeHint().toTuple())
        for name, w in windows.items()
        if not fits(w, room)
    }
    assert not too_big, f"do not fit {screen}: {too_big}"


def test_dialog_buttons_are_outside_the_scrolling_body(windows: dict[str, QWidget]) -> None:
    for name in ("settings", "kiosk operator settings"):
        dialog = windows[name]
        buttons = dialog.findChild(QDialogButtonBox)
        assert buttons is not None
        assert not any(isinstance(p, QScrollArea) for p in ancestors(buttons, dialog)), name


def ancestors(widget: QWidget, top: QWidget) -> list[QWidget]:
    found = []
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        found.append(parent)
        parent = parent.parentWidget()
    return found


def test_each_staff_screen_scrolls_with_one_vertical_bar(
    windows: dict[str, QWidget], qtbot: QtBot, screenshot_dir: Path
) -> None:
    window = windows["main window"]
    assert isinstance(window, MainWindow)
    window.resize(1024, 600)
    window.show()
    qtbot.waitExposed(window)
    for title in ("Issue", "Admin", "Service"):
        window.show_screen(title)
        screen = window.current_screen()
        assert screen is not None
        # Any input on the screen sits inside exactly one area that scrolls vertically.
        field = (
            window.issue_screen.single.pii_form.edits["employee_name"]
            if title == "Issue"
            else screen
        )
        vertical = [
            a
            for a in ancestors(field, window)
            if isinstance(a, QAbstractScrollArea) and isinstance(a, QScrollArea)
        ]
        assert len(vertical) == 1, (title, [type(a).__name__ for a in vertical])
        window.grab().save(str(screenshot_dir / f"{title.lower()}_1024x600.png"))


def test_the_issue_screen_stacks_its_columns_instead_of_scrolling_sideways(
    windows: dict[str, QWidget], qtbot: QtBot, screenshot_dir: Path
) -> None:
    """At 1024x600 both Issue tabs (one payslip, pay run) stack their columns: the clerk scrolls
    down only, never sideways; on a wide window they sit side by side again."""
    window = windows["main window"]
    assert isinstance(window, MainWindow)
    window.show()
    qtbot.waitExposed(window)
    window.show_screen("Issue")
    screen = window.current_screen()
    assert screen is not None
    area = screen.parentWidget().parentWidget()  # the screen's scroll area (viewport between)
    assert isinstance(area, QScrollArea)
    tabs = window.issue_screen.findChild(QTabWidget)
    assert tabs is not None
    for size, stacked in (((1024, 600), True), ((1366, 768), False), ((1024, 600), True)):
        window.resize(*size)
        for index in range(tabs.count()):
            tabs.setCurrentIndex(index)
            try:
                qtbot.waitUntil(lambda: area.horizontalScrollBar().maximum() == 0, timeout=3000)
            except Exception:
                raise AssertionError(
                    (
                        size,
                        index,
                        area.horizontalScrollBar().maximum(),
                        area.viewport().width(),
                        screen.width(),
                        screen.minimumSizeHint().width(),
                        tabs.minimumSizeHint().width(),
                        window.width(),
                    )
                ) from None
        assert window.issue_screen.single.two_columns is not stacked, size
    window.grab().save(str(screenshot_dir / "issue_pay_run_1024x600.png"))
