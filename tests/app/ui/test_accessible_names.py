"""Screen readers: every input, button and result region on every screen has an accessible name.

Walks the widgets of every screen of the real app over the demo service (the four desktop
screens with both Issue tabs and a verdict on the card, the kiosk, the dialogs), as shown, and
lists every visible control without a name. The Issue form had 19 of its 33 controls unnamed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui import accessible_names
from app.ui.accessible_names import needs_name
from app.ui.main_window import MainWindow
from app.ui.pin_dialog import PinDialog, PinGuard, SetPinDialog
from app.ui.verify.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui


def unnamed(root: QWidget) -> list[str]:
    QApplication.processEvents()
    return [
        f"{type(w).__name__} {w.objectName() or ''} {getattr(w, 'text', lambda: '')()!r}"
        for w in [root, *root.findChildren(QWidget)]
        if needs_name(w) and w.isVisibleTo(root) and not w.accessibleName().strip()
    ]


@pytest.fixture
def window(qtbot: QtBot, demo_context: AppContext, no_leaks: None) -> Iterator[MainWindow]:
    demo_context.settings.camera = "no-camera-here.avi"
    made = MainWindow(demo_context)
    qtbot.addWidget(made)
    made.resize(1366, 768)
    made.show()
    qtbot.waitExposed(made)
    yield made
    made.close()
    made.tasks.wait()


def test_every_control_on_every_screen_has_a_name(
    window: MainWindow, qtbot: QtBot, demo_context: AppContext
) -> None:
    missing: dict[str, list[str]] = {}
    # Verify: the scan page, then a verdict on the card.
    missing["Verify"] = unnamed(window)
    screen = window.verify_screen
    assert demo_context.demo is not None
    screen.code_field.setText(demo_context.demo.samples[0].payload)
    with qtbot.waitSignal(screen.result_shown, timeout=20000):
        screen.submit_text()
    for fold in (screen.card.details, screen.card.support):
        if fold is not None and not fold.expanded:
            fold.set_expanded(True)
    missing["Verify result"] = unnamed(window)
    screen.clear_result()
    # The Issue screen: one payslip (NZ and AU forms), then the pay run tab.
    window.show_screen("Issue")
    issue = window.issue_screen
    issue.issuer_panel.details_button.setChecked(True)
    for schema in ("nz.payslip.v1", "au.payslip.v1"):
        issue.single.set_schema(schema)
        missing[f"Issue {schema}"] = unnamed(window)
    form_controls = [
        w for w in issue.single.findChildren(QWidget) if needs_name(w) and w.isVisibleTo(window)
    ]
    assert len(form_controls) >= 30
    issue.tabs.setCurrentWidget(issue.payrun)
    missing["Pay run"] = unnamed(window)
    for title in ("Admin", "Service"):
        window.show_screen(title)
        missing[title] = unnamed(window)
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, missing


def test_the_kiosk_and_the_dialogs_name_their_controls(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    accessible_names.install()
    demo_context.settings.set_pin("2468")
    demo_context.settings.camera = "no-camera-here.avi"
    kiosk = MainWindow(demo_context, kiosk=True)
    settings, secrets = demo_context.settings, demo_context.secrets
    dialogs: list[QWidget] = [
        SettingsDialog(settings, secrets),
        SettingsDialog(settings, secrets, allow_no_pin=False),
        PinDialog(PinGuard(settings)),
        SetPinDialog(settings),
    ]
    try:
        missing = {}
        for widget in [kiosk, *dialogs]:
            qtbot.addWidget(widget) if widget is not kiosk else None
            widget.show()
            qtbot.waitExposed(widget)
            if found := unnamed(widget):
                missing[type(widget).__name__] = found
            if widget is not kiosk:
                widget.close()
        assert not missing, missing
    finally:
        kiosk.locked = False
        kiosk.close()
        kiosk.tasks.wait()
