"""A USB scanner's scan, typed as a scanner types it, is checked wherever the focus is (issue 35).

Scanners press Shift before every capital letter and shifted symbol (``|`` in every payslip
code). The wedge reader used to take that Shift press (a key with no text) for the end of the
burst: the code was cut short, and its Enter pressed the focused button instead (the verdict
vanished, Settings reopened, a demo sample was verified in place of the scanned code). Each
test here focuses one kind of widget a screen has, scans with Shift presses at 5 ms per key
(`tests/app/ui/usb_scanner.py`) and checks that the scanned code, and only it, was checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QDialog, QWidget

from app.shell.context import AppContext
from app.ui.verify.screen import VerifyScreen
from tests.app.ui.applicant.test_applicant_screen import _open as open_applicant
from tests.app.ui.verify.test_wedge_scanner import (
    RESULT_TIMEOUT,
    make_screen,  # noqa: F401 - the fixture
    sample,
    scan,
)

pytestmark = pytest.mark.gui


class DialogWatch(QObject):
    """Records (and closes) every dialog that opens: a scan must open none."""

    def __init__(self) -> None:
        app = QApplication.instance()
        assert app is not None
        super().__init__(app)
        self.opened: list[str] = []
        app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and isinstance(watched, QDialog):
            self.opened.append(type(watched).__name__)
            QTimer.singleShot(0, watched.reject)
        return False


@pytest.fixture
def dialogs(qapp: object) -> Iterator[DialogWatch]:
    watch = DialogWatch()
    yield watch
    app = QApplication.instance()
    assert app is not None
    app.removeEventFilter(watch)
    watch.deleteLater()


FOCUS: dict[str, Callable[[VerifyScreen], QWidget]] = {
    "the code field": lambda screen: screen.code_field,
    "the Verify button": lambda screen: screen.verify_button,
    "the Settings button": lambda screen: screen.settings_button,
    "a sample button": lambda screen: next(
        b for b in screen.sample_buttons if b.text().startswith("NZ")
    ),
    "the Open PDF button": lambda screen: screen.open_pdf_button,
}


@pytest.mark.parametrize("focus", list(FOCUS))
def test_a_scan_with_capitals_is_checked_wherever_the_focus_is(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    dialogs: DialogWatch,
    focus: str,
) -> None:
    screen = make_screen()
    au = sample(demo_context, "AU")
    assert any(c.isupper() for c in au.payload) and "|" in au.payload  # Shift is pressed
    target = FOCUS[focus](screen)
    target.setFocus()
    assert target.hasFocus()
    started: list[str] = []
    screen.verification_started.connect(lambda: started.append("started"))
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        scan(qtbot, screen, au.payload)
    assert shown.args == ["verified"]
    assert started == ["started"]  # one check: the scanned code, not a pressed button's
    texts = screen.card.visible_texts()
    assert "Alex Example" in texts  # the AU payslip scanned, not the NZ sample's Sam Sample
    assert "Sam Sample" not in texts
    assert dialogs.opened == []  # Enter pressed no Settings or Open button
    if focus != "the code field":
        assert screen.code_field.text() == ""


def test_a_scan_after_closing_settings_does_not_reopen_them(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    dialogs: DialogWatch,
) -> None:
    screen = make_screen()
    screen.settings_button.click()  # opened (and closed by the watch), focus back on the button
    assert dialogs.opened == ["SettingsDialog"]
    qtbot.waitUntil(  # the closed dialog is gone (deleted once the event loop runs)
        lambda: not [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog)]
    )
    with qtbot.waitActive(screen):  # the window manager gives the window back its focus
        screen.activateWindow()
    screen.settings_button.setFocus()
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        scan(qtbot, screen, sample(demo_context, "NZ").payload)
    assert shown.args == ["verified"]
    assert dialogs.opened == ["SettingsDialog"]  # not again


APPLICANT_FOCUS: dict[str, str] = {
    "the documents table": "table",
    "the Open files button": "open_button",
    "the code field": "code_field",
}


@pytest.mark.parametrize("focus", list(APPLICANT_FOCUS))
def test_a_scan_on_the_applicant_page_adds_that_payslip(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    dialogs: DialogWatch,
    focus: str,
) -> None:
    screen = make_screen()
    panel = open_applicant(qtbot, screen)
    target: QWidget = getattr(panel, APPLICANT_FOCUS[focus])
    target.setFocus()
    assert target.hasFocus()
    scan(qtbot, screen, sample(demo_context, "AU").payload)
    qtbot.waitUntil(lambda: panel.table.rowCount() == 1, timeout=RESULT_TIMEOUT)
    assert dialogs.opened == []  # the Enter opened no file dialog
    assert screen.pages.currentWidget() is panel
