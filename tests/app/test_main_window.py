"""The main window as a person meets it: screens, banners, kiosk mode and the crash dialog."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from app.context import AppContext
from app.gui import make_excepthook
from app.ui.main_window import MainWindow
from tests.factories import MARKER_NAME


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
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    window = MainWindow(demo_context, kiosk=True)
    qtbot.addWidget(window)
    assert window.nav.count() == 1
    assert window.stack.count() == 1
    assert window.isFullScreen() or window.windowState() & window.windowState().WindowFullScreen
    window.close()
    window.tasks.wait()


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
