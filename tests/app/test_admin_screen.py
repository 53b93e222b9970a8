"""The admin screen against a real embedded service: create, rotate, retire, disable."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from app.context import AppContext
from app.ui.admin_screen import AdminScreen
from app.ui.service_panel import ServicePanel
from app.ui.tasks import TaskRunner


def _screen(qtbot: QtBot, context: AppContext) -> tuple[AdminScreen, TaskRunner]:
    tasks = TaskRunner()
    screen = AdminScreen(context, tasks)
    screen.show_dialogs = False
    qtbot.addWidget(screen)
    qtbot.waitUntil(lambda: screen.overview != {}, timeout=10000)
    return screen, tasks


def test_overview_lists_the_demo_issuer_and_its_records(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.resize(1000, 600)
    names = [screen.issuers.item(r, 0).text() for r in range(screen.issuers.rowCount())]
    assert "Demo Payroll Pty Ltd" in names
    assert "registered payslips" in screen.status.text()
    assert int(screen.issuers.item(names.index("Demo Payroll Pty Ltd"), 2).text()) >= 3
    screen.grab().save(str(screenshot_dir / "admin.png"))
    tasks.wait()


def test_creating_an_issuer_shows_credentials_once_and_never_in_the_overview(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.name_edit.setText("Harbour Payroll")
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.create_issuer_button.click()
    qtbot.waitUntil(lambda: screen.last_dialog is not None, timeout=10000)
    dialog = screen.last_dialog
    assert dialog is not None
    secret = dialog.fields["client_secret"].text()
    key = dialog.fields["encryption_key"].text()
    assert len(secret) >= 40 and len(key) == 43
    dialog.show()
    dialog.grab().save(str(screenshot_dir / "credentials.png"))
    assert "Shown once" in dialog.findChild(type(screen.status), "shownOnceWarning").text()
    dialog.accept()
    assert dialog.fields["client_secret"].text() == ""
    qtbot.waitUntil(
        lambda: any(i["name"] == "Harbour Payroll" for i in screen.overview["issuers"]),
        timeout=10000,
    )
    assert secret not in str(screen.overview) and key not in str(screen.overview)
    tasks.wait()


def test_rotate_retire_and_disable_through_the_admin_api(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    issuer_id = demo_context.issuer_info["issuer_id"]
    assert screen.select_row(screen.issuers, issuer_id, column=1)
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.rotate_button.click()
    qtbot.waitUntil(
        lambda: any(k["key_version"] == f"{issuer_id}.2" for k in screen.overview["keys"]),
        timeout=10000,
    )
    first = f"{issuer_id}.1"
    assert screen.select_row(screen.keys, first)
    screen.retire_button.click()
    qtbot.waitUntil(
        lambda: any(
            k["key_version"] == first and k["state"] == "retired" for k in screen.overview["keys"]
        ),
        timeout=10000,
    )
    client_id = demo_context.issuer_info["client_id"]
    assert screen.select_row(screen.clients, client_id)
    screen.disable_button.click()
    qtbot.waitUntil(
        lambda: any(
            c["client_id"] == client_id and c["disabled"] for c in screen.overview["clients"]
        ),
        timeout=10000,
    )
    tasks.wait()


def test_validation_errors_are_shown_in_plain_words(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.name_edit.setText("x" * 300)
    with qtbot.waitSignal(screen.failed, timeout=10000) as blocker:
        screen.create_verifier_button.click()
    assert "name" in blocker.args[0]
    tasks.wait()


def test_service_panel_shows_a_running_embedded_service(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    tasks = TaskRunner()
    panel = ServicePanel(demo_context, tasks)
    qtbot.addWidget(panel)
    qtbot.waitUntil(lambda: panel.healthy is True, timeout=10000)
    assert "Running" in panel.state.text()
    assert panel.url_label.text() == demo_context.service_url
    panel.grab().save(str(screenshot_dir / "service.png"))
    panel.timer.stop()
    tasks.wait()


def test_service_panel_says_when_the_service_does_not_answer(
    qtbot: QtBot, config_dir: Path, no_leaks: None
) -> None:
    import socket

    from app.context import start_remote_context
    from app.settings import SecretStore, Settings

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(mode="remote", verifier_url=f"http://127.0.0.1:{port}", client_id="x")
    context = start_remote_context(settings, SecretStore(config_dir, use_keyring=False))
    tasks = TaskRunner()
    panel = ServicePanel(context, tasks)
    qtbot.addWidget(panel)
    qtbot.waitUntil(lambda: panel.healthy is False, timeout=15000)
    assert "Not answering" in panel.state.text()
    panel.timer.stop()
    tasks.wait()
    context.close()
