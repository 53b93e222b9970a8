"""The main window as a person meets it: screens, banners, kiosk mode and the crash dialog."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui import main_window as main_window_module
from app.ui.main_window import MainWindow
from app.ui.start import make_excepthook
from testbed.factories import MARKER_NAME


def test_all_screens_are_reachable_and_demo_is_announced(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    window.resize(1280, 860)
    window.show()
    titles = [window.nav.item(row).text() for row in range(window.nav.count())]
    assert titles == ["Verify", "Issue", "Admin", "Service"]
    for title in titles:
        window.show_screen(title)
        assert window.stack.currentIndex() == titles.index(title)
        window.grab().save(str(screenshot_dir / f"main_{title.lower()}.png"))
    assert window.findChild(type(window.statusBar()), None) is not None
    banner = window.centralWidget().findChild(type(window.nav.parent()), None)
    assert banner is not None
    window.close()
    window.tasks.wait()


def test_kiosk_shows_only_the_verify_screen(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    window = MainWindow(demo_context, kiosk=True)
    qtbot.addWidget(window)
    assert window.nav.count() == 1
    assert window.stack.count() == 1
    assert window.isFullScreen() or window.windowState() & window.windowState().WindowFullScreen
    monkeypatch.setattr(main_window_module, "ask_pin", lambda *a, **k: True)
    window.close()
    window.tasks.wait()


def _labels(window: MainWindow) -> list[str]:
    return [lab.text() for lab in window.findChildren(QLabel) if lab.isVisibleTo(window)]


def test_kiosk_is_locked_closing_and_leaving_full_screen_need_the_pin(
    qtbot: QtBot,
    demo_context: AppContext,
    no_leaks: None,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
) -> None:
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    asked: list[str] = []
    answer = [False]

    def pin(guard: object, parent: object, prompt: str = "", **kw: object) -> bool:
        asked.append(prompt)
        assert kw.get("required") is True  # no PIN, no way out
        return answer[0]

    monkeypatch.setattr(main_window_module, "ask_pin", pin)
    window = MainWindow(demo_context, kiosk=True)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    try:
        _check_the_lock(qtbot, window, demo_context, asked, answer, screenshot_dir)
    finally:
        window.locked = False  # never leave a locked window behind, even on failure
        window.close()
        window.tasks.wait()


def _check_the_lock(
    qtbot: QtBot,
    window: MainWindow,
    demo_context: AppContext,
    asked: list[str],
    answer: list[bool],
    screenshot_dir: Path,
) -> None:
    # Demo mode is announced in the kiosk too; no service address anywhere; no file inputs named.
    labels = _labels(window)
    assert any(text.startswith("Demo mode") for text in labels)
    assert not any(demo_context.service_url in text for text in labels)
    assert not window.statusBar().isVisibleTo(window)
    subtitle = window.verify_screen.subtitle.text()
    assert "PDF" not in subtitle and "drop" not in subtitle
    window.grab().save(str(screenshot_dir / "kiosk_locked.png"))

    assert not window.close()  # Alt+F4 and the window's close button end here
    assert window.isVisible() and asked == ["Enter the operator PIN to close the kiosk."]
    with qtbot.waitActive(window):  # the offscreen platform activates on request, later
        window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert window.isVisible() and len(asked) == 2

    window.showNormal()  # a window manager's "leave full screen"
    qtbot.waitUntil(lambda: len(asked) == 3, timeout=2000)
    assert "leave full screen" in asked[-1]
    assert window.isFullScreen() and window.locked

    answer[0] = True
    assert window.close()
    assert not window.isVisible()


def test_kiosk_settings_need_a_pin_even_when_none_is_set(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    from app.ui.pin_dialog import PinGuard, ask_pin

    guard = PinGuard(demo_context.settings)
    assert ask_pin(guard, None, required=True) is False
    assert ask_pin(guard, None) is True  # a desk's first setup


def test_first_kiosk_start_sets_a_pin_or_does_not_start(
    qtbot: QtBot, config_dir: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    from PySide6.QtWidgets import QDialog

    from app.settings.desk import Settings
    from app.ui import pin_dialog
    from app.ui.pin_dialog import SetPinDialog, ensure_kiosk_pin

    settings = Settings()
    monkeypatch.setattr(SetPinDialog, "exec", lambda self: QDialog.DialogCode.Rejected)
    assert ensure_kiosk_pin(settings) is False and not settings.kiosk_pin_hash

    dialog = SetPinDialog(settings)
    qtbot.addWidget(dialog)
    for pin, again, problem in (("123", "123", "4 to 12 digits"), ("2468", "2469", "differ")):
        dialog.field.setText(pin)
        dialog.again.setText(again)
        dialog.try_set()
        assert problem in dialog.message.text() and not settings.kiosk_pin_hash
    dialog.field.setText("2468")
    dialog.again.setText("2468")
    dialog.try_set()
    assert dialog.result() == QDialog.DialogCode.Accepted and settings.check_pin("2468")

    fleet = Settings()
    monkeypatch.setenv(pin_dialog.PIN_ENV, "97531")
    assert ensure_kiosk_pin(fleet) is True
    assert fleet.check_pin("97531") and not fleet.check_pin("2468")
    stored = (config_dir / "settings.json").read_text("utf-8")
    assert "97531" not in stored and fleet.kiosk_pin_hash in stored


def test_an_unhandled_error_shows_a_friendly_dialog_and_logs_no_message(
    qtbot: QtBot, demo_context: AppContext, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    window.show()
    window.show_screen("Admin")
    hook = make_excepthook(window)
    error = RuntimeError(f"failed for {MARKER_NAME}")
    error.request_id = "req-123"  # type: ignore[attr-defined]
    with caplog.at_level(logging.ERROR, logger="app"):
        hook(RuntimeError, error, None)
    dialog = window.findChild(QMessageBox, "crashDialog")
    assert dialog is not None and dialog.isVisible()
    assert "req-123" in dialog.text() and MARKER_NAME not in dialog.text()
    assert window.stack.currentIndex() == 0
    assert "RuntimeError" in caplog.text and "req-123" in caplog.text
    assert MARKER_NAME not in caplog.text
    dialog.close()
    window.close()
    window.tasks.wait()


def test_the_kiosk_does_not_start_without_a_pin(
    qtbot: QtBot, config_dir: Path, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    from PySide6.QtWidgets import QDialog

    from app.ui import start as gui
    from app.ui.pin_dialog import PIN_ENV, SetPinDialog

    monkeypatch.delenv(PIN_ENV, raising=False)
    monkeypatch.setattr(SetPinDialog, "exec", lambda self: QDialog.DialogCode.Rejected)
    started: list[bool] = []
    monkeypatch.setattr(gui, "start_context", lambda *a, **k: started.append(True))
    assert gui.run_gui(kiosk=True) == 2
    assert started == []  # no service, no window: the kiosk never ran unlocked


def test_the_desktop_window_fits_a_1024x600_screen_with_the_verdict_on_top(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    """Issue 9: the verdict takes at least half the height at any size from 1024x600 up; the
    desktop window (not just the kiosk) must be able to be that small. The Issue form, which
    needs more width, scrolls sideways inside the window instead."""
    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    window.resize(1024, 600)
    window.show()
    qtbot.waitExposed(window)
    assert window.width() <= 1024 and window.height() <= 600
    screen = window.verify_screen
    assert demo_context.demo is not None
    payload = next(s for s in demo_context.demo.samples if not s.revoked).payload
    screen.code_field.setText(payload)
    with qtbot.waitSignal(screen.result_shown, timeout=20000) as shown:
        screen.submit_text()
    assert shown.args[0] == "verified"
    banner = screen.card.banner

    def verdict_on_top() -> None:  # once the layout has settled after the result
        assert banner.isVisible() and banner.height() >= window.height() / 2 - 1

    qtbot.waitUntil(verdict_on_top, timeout=5000)
    window.grab().save(str(screenshot_dir / "desktop_1024x600_verified.png"))
    window.show_screen("Issue")
    assert window.width() <= 1024  # the Issue form scrolls; the window stays on the screen
    window.grab().save(str(screenshot_dir / "desktop_1024x600_issue.png"))
    window.close()
    window.tasks.wait()
