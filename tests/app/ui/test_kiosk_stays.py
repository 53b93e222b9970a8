"""The kiosk cannot be put away: minimised or hidden, it is back full screen at once; the PIN
prompt has no minimise button. Against the real demo service, offscreen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.main_window import MainWindow
from app.ui.pin_dialog import PinDialog, PinGuard

pytestmark = pytest.mark.gui


@pytest.fixture
def kiosk(qtbot: QtBot, demo_context: AppContext, no_leaks: None) -> Iterator[MainWindow]:
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    window = MainWindow(demo_context, kiosk=True)  # not qtbot's: it would close it still locked
    window.show()
    qtbot.waitExposed(window)
    yield window
    window.locked = False  # never leave a locked window behind, even on failure
    window.close()
    window.tasks.wait()


def back_full_screen(window: MainWindow) -> bool:
    return window.isVisible() and window.isFullScreen() and not window.isMinimized()


def test_a_minimised_kiosk_comes_back_full_screen(
    qtbot: QtBot, kiosk: MainWindow, screenshot_dir: Path
) -> None:
    assert back_full_screen(kiosk)
    with qtbot.waitSignal(kiosk.keeper.restored, timeout=2000):
        kiosk.showMinimized()  # Super+D, the title bar's minimise, a task bar click
    assert back_full_screen(kiosk) and kiosk.locked
    kiosk.grab().save(str(screenshot_dir / "kiosk_restored.png"))


def test_a_hidden_kiosk_comes_back_full_screen(qtbot: QtBot, kiosk: MainWindow) -> None:
    with qtbot.waitSignal(kiosk.keeper.restored, timeout=2000):
        kiosk.hide()
    assert back_full_screen(kiosk)
    # Twice in a row, too: it keeps coming back.
    with qtbot.waitSignal(kiosk.keeper.restored, timeout=2000):
        kiosk.showMinimized()
    assert back_full_screen(kiosk)


def test_an_unlocked_window_may_be_minimised(qtbot: QtBot, kiosk: MainWindow) -> None:
    """After the operator PIN let the kiosk out (locked False), nothing forces it back."""
    kiosk.locked = False
    restored: list[int] = []
    kiosk.keeper.restored.connect(lambda: restored.append(1))
    kiosk.showMinimized()
    QApplication.processEvents()
    assert kiosk.isMinimized() and restored == []


def test_the_pin_prompt_has_no_minimise_button(qtbot: QtBot, demo_context: AppContext) -> None:
    demo_context.settings.set_pin("2468")
    dialog = PinDialog(PinGuard(demo_context.settings))
    qtbot.addWidget(dialog)
    flags = dialog.windowFlags()
    assert not flags & Qt.WindowType.WindowMinimizeButtonHint
    assert not flags & Qt.WindowType.WindowMaximizeButtonHint
    assert flags & Qt.WindowType.WindowCloseButtonHint  # closing it is "Cancel"
