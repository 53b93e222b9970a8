"""The main window as a person meets it: screens, banners, kiosk mode and the crash dialog."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialog, QLabel, QMessageBox
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.main_window import MainWindow
from app.ui.start import make_excepthook
from testbed.factories import MARKER_NAME
from tests.app.ui.dialog_answers import DialogAnswers, all_of, cancel, type_pin


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
    qtbot: QtBot, demo_context: AppContext, no_leaks: None, dialog_answers: DialogAnswers
) -> None:
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    window = MainWindow(demo_context, kiosk=True)
    qtbot.addWidget(window)
    assert window.nav.count() == 1
    assert window.stack.count() == 1
    assert window.isFullScreen() or window.windowState() & window.windowState().WindowFullScreen
    window.show()
    qtbot.waitExposed(window)
    dialog_answers.then(type_pin("2468"))  # the real PIN prompt, the PIN typed and OK pressed
    assert window.close()
    assert dialog_answers.kinds == ["PinDialog"]
    window.tasks.wait()


def _labels(window: MainWindow) -> list[str]:
    return [lab.text() for lab in window.findChildren(QLabel) if lab.isVisibleTo(window)]


def test_kiosk_is_locked_closing_and_leaving_full_screen_need_the_pin(
    qtbot: QtBot,
    demo_context: AppContext,
    no_leaks: None,
    dialog_answers: DialogAnswers,
    screenshot_dir: Path,
) -> None:
    window = _locked_kiosk(qtbot, demo_context)
    try:
        _check_the_lock(qtbot, window, demo_context, dialog_answers, screenshot_dir)
    finally:
        window.locked = False  # never leave a locked window behind, even on failure
        window.close()
        window.tasks.wait()


def _locked_kiosk(qtbot: QtBot, context: AppContext) -> MainWindow:
    """The kiosk window with operator PIN 2468 and no camera, shown (the caller unlocks and
    closes it, even on failure)."""
    context.settings.set_pin("2468")
    context.settings.camera = "no-camera-here.avi"
    window = MainWindow(context, kiosk=True)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def _check_the_lock(
    qtbot: QtBot,
    window: MainWindow,
    demo_context: AppContext,
    answers: DialogAnswers,
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

    # The real PIN prompt each time: cancelled; a wrong PIN (the prompt stays), then cancelled;
    # cancelled; and at last the right PIN.
    wrong: list[str] = []
    answers.then(
        cancel,
        all_of(
            type_pin("1357"),
            lambda d: wrong.append(d.findChild(QLabel, "pinMessage").text()),
            cancel,
        ),
        cancel,
    )
    assert not window.close()  # Alt+F4 and the window's close button end here
    assert window.isVisible() and answers.kinds == ["PinDialog"]
    assert "Enter the operator PIN to close the kiosk." in answers.shown[0].texts
    qtbot.waitUntil(answers.all_closed)  # the prompt is gone (deleted once the loop runs)
    with qtbot.waitActive(window):  # the offscreen platform activates on request, later
        window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(answers.shown) == 2, timeout=5000)
    assert window.isVisible() and wrong == ["Wrong PIN. 4 tries left."]

    qtbot.waitUntil(answers.all_closed)
    with qtbot.waitActive(window):  # the kiosk in front again, as when somebody at it...
        window.activateWindow()
    window.showNormal()  # ...asks the window manager to leave full screen
    qtbot.waitUntil(lambda: len(answers.shown) == 3, timeout=5000)
    assert any("leave full screen" in text for text in answers.shown[-1].texts)
    assert window.isFullScreen() and window.locked

    answers.then(type_pin("2468"))
    assert window.close()
    assert not window.isVisible()


def test_the_keepers_way_back_through_the_normal_state_asks_no_pin(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None, dialog_answers: DialogAnswers
) -> None:
    """Hidden (or unmapped, or minimised), the kiosk is brought back by its keeper; a window
    manager shows it normal before full screen again. That passing state asks nobody for the
    operator PIN (a prompt nobody asked for, and the next scan typed into it as a wrong PIN);
    once the way back has settled, leaving full screen asks for it again."""
    window = _locked_kiosk(qtbot, demo_context)
    try:
        with qtbot.waitSignal(window.keeper.restored, timeout=5000):
            window.hide()  # the keeper's remap hides and shows the window
        assert window.keeper.bringing_back
        window.showNormal()  # the window manager's first state for a window mapped anew
        qtbot.waitUntil(window.isFullScreen, timeout=5000)
        for _ in range(5):
            QApplication.processEvents()
        assert dialog_answers.shown == [] and window.locked

        window.keeper._settling.stop()  # SETTLE_MS later (no real wait in a test)
        if not window.isActiveWindow():
            with qtbot.waitActive(window):
                window.activateWindow()
        dialog_answers.then(cancel)
        window.showNormal()  # now somebody leaving full screen: the PIN is asked
        qtbot.waitUntil(lambda: len(dialog_answers.shown) == 1, timeout=5000)
        assert "Enter the operator PIN to leave full screen." in dialog_answers.shown[0].texts
        assert window.isFullScreen() and window.locked
    finally:
        window.locked = False
        window.close()
        window.tasks.wait()


def test_kiosk_settings_need_a_pin_even_when_none_is_set(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    from app.ui.pin_dialog import PinGuard, ask_pin

    guard = PinGuard(demo_context.settings)
    assert ask_pin(guard, None, required=True) is False
    assert ask_pin(guard, None) is True  # a desk's first setup


def test_first_kiosk_start_sets_a_pin_or_does_not_start(
    qtbot: QtBot,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_leaks: None,
    dialog_answers: DialogAnswers,
) -> None:

    from app.settings.desk import Settings
    from app.ui import pin_dialog
    from app.ui.pin_dialog import SetPinDialog, ensure_kiosk_pin

    settings = Settings()
    dialog_answers.then(cancel)  # the real "choose a PIN" dialog, cancelled
    assert ensure_kiosk_pin(settings) is False and not settings.kiosk_pin_hash
    dialog_answers.then(type_pin("2468", "2468"))  # and chosen, typed twice
    assert ensure_kiosk_pin(settings) is True and settings.check_pin("2468")
    assert dialog_answers.kinds == ["SetPinDialog", "SetPinDialog"]
    settings = Settings()

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
    qtbot: QtBot,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_leaks: None,
    dialog_answers: DialogAnswers,
) -> None:

    from app.ui import start as gui
    from app.ui.pin_dialog import PIN_ENV

    monkeypatch.delenv(PIN_ENV, raising=False)
    dialog_answers.then(cancel)  # the real "choose a PIN" dialog, cancelled
    started: list[bool] = []
    monkeypatch.setattr(gui, "start_context", lambda *a, **k: started.append(True))
    assert gui.run_gui(kiosk=True) == 2
    assert started == []  # no service, no window: the kiosk never ran unlocked
    assert dialog_answers.kinds == ["SetPinDialog"]


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
