"""The first-run welcome (issue 11): four plain choices in the app's style, a desk connected to a
real service through it, and the welcome opened again from the running app."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel
from pytestqt.qtbot import QtBot

from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_remote_context
from app.ui.main_window import MainWindow
from app.ui.welcome import CHOICES, WelcomeDialog, first_run_choice
from tests.app.shots import shoot

pytestmark = pytest.mark.gui
TITLES = [
    "Try with demo data",
    "Verify payslips at this desk (connect to a service)",
    "Issue payslips from this computer",
    "Run the service on this computer",
]


def test_welcome_offers_four_choices_and_the_demo(
    qtbot: QtBot, config_dir: Path, screenshot_dir: Path, no_leaks: None
) -> None:
    settings, secrets = Settings(), SecretStore(config_dir, use_keyring=False)
    assert [c.title for c in CHOICES] == TITLES
    dialog = WelcomeDialog(settings, secrets)
    qtbot.addWidget(dialog)
    dialog.show()
    words = "\n".join(label.text() for label in dialog.findChildren(QLabel))
    for title in TITLES:
        assert title in words
    shoot(dialog, screenshot_dir, "welcome")
    shoot(dialog, screenshot_dir, "welcome-natural", ((860, 560),))
    dialog.buttons["demo"].click()
    assert dialog.choice == "demo" and not dialog.isVisible()
    saved = Settings.load(config_dir)
    assert saved.demo_offered and saved.extra["start_demo"] is True
    assert saved.extra["start_screen"] == "Verify"


def test_first_run_shows_the_welcome_once_and_closing_it_loses_nothing(
    qtbot: QtBot, config_dir: Path, no_leaks: None
) -> None:
    settings, secrets = Settings(), SecretStore(config_dir, use_keyring=False)

    def close_it() -> None:
        modal = QApplication.activeModalWidget()
        assert isinstance(modal, WelcomeDialog)
        modal.later_button.click()

    QTimer.singleShot(200, close_it)
    assert first_run_choice(settings, secrets) is None
    assert Settings.load(config_dir).demo_offered  # not shown on every start ...
    assert first_run_choice(Settings.load(config_dir), secrets) is None  # ... and no dialog now


def test_connecting_a_desk_through_the_welcome_verifies_against_a_real_service(
    qtbot: QtBot,
    demo_context: AppContext,
    config_dir: Path,
    screenshot_dir: Path,
    no_leaks: None,
) -> None:
    settings, secrets = Settings(), SecretStore(config_dir, use_keyring=False)
    dialog = WelcomeDialog(settings, secrets)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.buttons["connect"].click()
    assert dialog.pages.currentIndex() == 1 and dialog.choice is None
    dialog.url_edit.setText("not an address")
    dialog.connect_button.click()
    assert "Fill in all three" in dialog.connect_status.text() and dialog.isVisible()
    desk = demo_context.demo.verifier  # type: ignore[union-attr]
    dialog.url_edit.setText(demo_context.service_url)
    dialog.client_edit.setText(desk.client_id)
    dialog.secret_edit.setText(desk.client_secret)
    shoot(dialog, screenshot_dir, "welcome-connect", ((860, 560), (1280, 800)))
    dialog.connect_button.click()
    qtbot.waitUntil(lambda: dialog.choice == "connect", timeout=10000)
    assert not dialog.isVisible()
    saved = Settings.load(config_dir)
    assert saved.mode == "remote" and saved.verifier_url == demo_context.service_url
    assert desk.client_secret not in (config_dir / "settings.json").read_text()
    remote = start_remote_context(saved, secrets)
    try:
        sample = demo_context.demo.samples[0]  # type: ignore[union-attr]
        verified = remote.verifier.verify_payload(sample.payload)
        assert verified.verified is True  # the desk signs in with the secret it was given
    finally:
        remote.close()


def test_getting_started_reopens_the_welcome_from_the_running_app(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.welcome_button.text() == "Getting started"
        shoot(window, screenshot_dir, "main-window")
        window.welcome_button.click()
        dialog = next(
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, WelcomeDialog) and w.isVisible()
        )
        qtbot.waitExposed(dialog)
        dialog.buttons["issue"].click()
        assert window.current_screen() is window.issue_screen
        shoot(window, screenshot_dir, "main-window-issue")
    finally:
        window.close()


def test_settings_open_the_welcome_again_but_not_at_the_kiosk(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    from app.ui.verify.settings_dialog import SettingsDialog

    window = MainWindow(demo_context)
    qtbot.addWidget(window)
    try:
        kiosk_settings = SettingsDialog(
            demo_context.settings, demo_context.secrets, window, allow_no_pin=False
        )
        assert not hasattr(kiosk_settings, "welcome_button")
        kiosk_settings.deleteLater()
        dialog = SettingsDialog(demo_context.settings, demo_context.secrets, window)
        dialog.welcome_button.click()
        welcome = next(
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, WelcomeDialog) and w.isVisible()
        )
        welcome.buttons["service"].click()
        assert window.current_screen() is window.admin_screen
        dialog.deleteLater()
    finally:
        window.close()


def test_connect_with_a_wrong_secret_or_address_does_not_say_connected(
    qtbot: QtBot,
    demo_context: AppContext,
    config_dir: Path,
    screenshot_dir: Path,
    no_leaks: None,
) -> None:
    """The check signs in before saving; each failure names the part to fix (issue 27)."""
    import socket

    settings, secrets = Settings(), SecretStore(config_dir, use_keyring=False)
    dialog = WelcomeDialog(settings, secrets)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.buttons["connect"].click()
    desk = demo_context.demo.verifier  # type: ignore[union-attr]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    cases = (
        (demo_context.service_url, desk.client_id, "wrong-secret", "Desk secret:"),
        (demo_context.service_url, "iss_someone", desk.client_secret, "Desk client id:"),
        (dead, desk.client_id, desk.client_secret, "Service address:"),
    )
    for url, client_id, secret, part in cases:
        dialog.url_edit.setText(url)
        dialog.client_edit.setText(client_id)
        dialog.secret_edit.setText(secret)
        with qtbot.waitSignal(dialog.connect_failed, timeout=10000) as failed:
            dialog.connect_button.click()
        assert failed.args[0].startswith(part) and dialog.connect_status.text() == failed.args[0]
        assert dialog.choice is None and dialog.isVisible()
        assert "connected" not in failed.args[0].lower()
        # The window system resizes a shown window on its own time: wait for it to have.
        try:
            qtbot.waitUntil(lambda: not overlaps(dialog), timeout=3000)
        except Exception:
            raise AssertionError(overlaps(dialog)) from None
    assert "refused" in dialog.connect_status.text() and dead in dialog.connect_status.text()
    shoot(dialog, screenshot_dir, "welcome-connect-refused", ((1024, 600), (1366, 768)))
    assert not (config_dir / "settings.json").exists()  # nothing saved
    dialog.close()


def overlaps(dialog: WelcomeDialog) -> list[str]:
    """Issue 35: once an error shows, the Connect form's fields, the error and the buttons must
    each be whole and apart (the error squeezed the fields into each other). What is not."""
    from PySide6.QtCore import QPoint, QRect

    column = [
        dialog.url_edit,
        dialog.client_edit,
        dialog.secret_edit,
        dialog.connect_status,
        dialog.connect_button,
    ]
    boxes = [QRect(w.mapTo(dialog, QPoint(0, 0)), w.size()) for w in column]
    found = [
        f"{above} and {below} are {below.top() - above.bottom() - 1} px apart"
        for above, below in itertools.pairwise(boxes)
        if below.top() - above.bottom() - 1 < 6
    ]
    found += [f"{box} is outside" for box in boxes if not dialog.rect().contains(box)]
    status = dialog.connect_status
    if status.height() < status.heightForWidth(status.width()):
        found.append(f"the error is cut: {status.height()} px for its lines")
    return found
