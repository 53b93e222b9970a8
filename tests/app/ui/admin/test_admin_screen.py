"""The admin screen against a real embedded service: create, rotate, retire, disable, and the
guards that keep an office from locking itself out."""

from __future__ import annotations

import stat
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QGuiApplication, QKeyEvent
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox
from pytestqt.qtbot import QtBot

from app.issuer.local_issuer import load_local_issuer
from app.shell.context import AppContext
from app.ui.admin.overview import NO_OVERVIEW
from app.ui.admin.screen import AdminScreen, CredentialsDialog
from app.ui.issue.issuer_panel import IssuerPanel
from app.ui.service.panel import ServicePanel
from app.ui.widgets.tasks import TaskRunner
from tests.app.shots import shoot


def _screen(qtbot: QtBot, context: AppContext) -> tuple[AdminScreen, TaskRunner]:
    tasks = TaskRunner()
    screen = AdminScreen(context, tasks)
    screen.show_dialogs = False
    qtbot.addWidget(screen)
    qtbot.waitUntil(lambda: screen.overview is not NO_OVERVIEW, timeout=10000)
    return screen, tasks


def _create_issuer(qtbot: QtBot, screen: AdminScreen, name: str) -> CredentialsDialog:
    """Add a payroll provider on the screen; the dialog that shows its credentials once."""
    screen.name_edit.setText(name)
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.create_issuer_button.click()
    qtbot.waitUntil(lambda: screen.last_dialog is not None, timeout=10000)
    dialog = screen.last_dialog
    assert dialog is not None
    return dialog


def _panel(
    qtbot: QtBot, context: AppContext, tasks: TaskRunner | None = None, healthy: bool = True
) -> tuple[ServicePanel, TaskRunner]:
    """The service panel on `context`, once its first health check found it `healthy` (or not)."""
    tasks = tasks or TaskRunner()
    panel = ServicePanel(context, tasks)
    qtbot.addWidget(panel)
    qtbot.waitUntil(lambda: panel.healthy is healthy, timeout=15000)
    return panel, tasks


def test_overview_lists_the_demo_issuer_and_its_records(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.resize(1000, 600)
    names = [screen.issuers.item(r, 0).text() for r in range(screen.issuers.rowCount())]
    assert "Demo Payroll Pty Ltd" in names
    assert "1 payroll provider, 1 front desk," in screen.status.text()
    assert "registered payslips" in screen.status.text()
    assert int(screen.issuers.item(names.index("Demo Payroll Pty Ltd"), 2).text()) >= 3
    shoot(screen, screenshot_dir, "admin")
    tasks.wait()


def test_creating_an_issuer_shows_credentials_once_and_never_in_the_overview(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    dialog = _create_issuer(qtbot, screen, "Harbour Payroll")
    secret = dialog.fields["client_secret"].text()
    key = dialog.fields["encryption_key"].text()
    assert len(secret) >= 40 and len(key) == 43
    dialog.show()
    shoot(dialog, screenshot_dir, "credentials", ((900, 520),))
    assert "Shown once" in dialog.findChild(type(screen.status), "shownOnceWarning").text()
    dialog.confirm_saved()
    assert dialog.fields["client_secret"].text() == ""
    qtbot.waitUntil(
        lambda: any(i.name == "Harbour Payroll" for i in screen.overview.issuers),
        timeout=10000,
    )
    assert secret not in str(screen.overview) and key not in str(screen.overview)
    tasks.wait()


def test_rotate_retire_and_disable_through_the_admin_api(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    issuer_id = demo_context.issuer_info.issuer_id
    assert screen.select_row(screen.issuers, issuer_id, column=1)
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.rotate_button.click()
    qtbot.waitUntil(
        lambda: any(k.key_version == f"{issuer_id}.2" for k in screen.overview.keys),
        timeout=10000,
    )
    first = f"{issuer_id}.1"
    assert screen.select_row(screen.keys, first)
    screen.retire_button.click()
    qtbot.waitUntil(
        lambda: any(k.key_version == first and k.state == "retired" for k in screen.overview.keys),
        timeout=10000,
    )
    screen.name_edit.setText("Other Payroll")
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.create_issuer_button.click()
    qtbot.waitUntil(lambda: screen.last_dialog is not None, timeout=10000)
    client_id = screen.last_dialog.fields["client_id"].text()  # type: ignore[union-attr]
    # Not used for issuing here: a client this computer signs in with cannot be disabled.
    screen.last_dialog.use_here.setChecked(False)  # type: ignore[union-attr]
    screen.last_dialog.confirm_saved()  # type: ignore[union-attr]
    qtbot.waitUntil(lambda: screen.select_row(screen.clients, client_id), timeout=10000)
    screen.disable_button.click()
    qtbot.waitUntil(
        lambda: any(c.client_id == client_id and c.disabled for c in screen.overview.clients),
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
    panel, tasks = _panel(qtbot, demo_context)
    assert "Running" in panel.state.text()
    assert panel.url_label.text() == demo_context.service_url
    qtbot.waitUntil(lambda: "registered payslips" in panel.counts_label.text(), timeout=10000)
    words = "\n".join(w.text() for w in panel.findChildren(QLabel) if w.isVisibleTo(panel))
    assert "Demo" in panel.environment_label.text()
    for term in ("production", "TinyDB", "Store", "OpenAPI", "embedded"):
        assert term not in words, term
    assert "3 registered payslips, 1 payroll provider, 1 front desk" in words
    assert "Files in the data folder" in words and "temporary folder" in words
    assert panel.uptime_label.text()
    shoot(panel, screenshot_dir, "service")
    panel.timer.stop()
    tasks.wait()


def test_service_panel_restarts_the_embedded_service(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    panel, tasks = _panel(qtbot, demo_context)
    panel.timer.stop()
    before = demo_context.service
    url = demo_context.service_url
    assert panel.restart_button.isVisible() or panel.restart_button.isVisibleTo(panel)
    with qtbot.waitSignal(panel.restarted, timeout=20000):
        panel.restart_button.click()
    assert demo_context.service is not before and demo_context.service_url == url
    qtbot.waitUntil(lambda: panel.healthy is True and not panel._checking, timeout=10000)
    assert "restarted" in panel.message.text()
    # The data survived and the app's own clients still work against the restarted service.
    assert demo_context.admin is not None
    assert demo_context.admin.admin_list().record_count == 3
    assert demo_context.verifier.healthz(url)
    # The demo's temporary folder moved with the service: it goes when the app closes.
    assert before is not None and before.temporary_dir is None
    assert demo_context.service.temporary_dir is not None
    assert demo_context.service.temporary_dir.exists()
    shoot(panel, screenshot_dir, "service-restarted")
    tasks.wait()


def test_service_panel_says_when_the_service_does_not_answer(
    qtbot: QtBot, config_dir: Path, screenshot_dir: Path, no_leaks: None
) -> None:
    import socket

    from app.settings.desk import SecretStore, Settings
    from app.shell.context import start_remote_context

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = Settings(mode="remote", verifier_url=f"http://127.0.0.1:{port}", client_id="x")
    context = start_remote_context(settings, SecretStore(config_dir, use_keyring=False))
    panel, tasks = _panel(qtbot, context, healthy=False)
    assert "Not answering" in panel.state.text()
    # ... and why, naming the saved address.
    assert "refused" in panel.problem.text() and settings.verifier_url in panel.problem.text()
    shoot(panel, screenshot_dir, "service-remote-refused", ((1366, 768), (1024, 600)))
    panel.timer.stop()
    tasks.wait()
    context.close()


def test_credentials_dialog_closes_only_when_the_user_says_they_saved_them(
    qtbot: QtBot, demo_context: AppContext, tmp_path: Path, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    dialog = _create_issuer(qtbot, screen, "Harbour Payroll")
    dialog.show()
    qtbot.waitExposed(dialog)
    secret = dialog.fields["client_secret"].text()
    for key in (Qt.Key.Key_Escape, Qt.Key.Key_Return):
        QApplication.sendEvent(
            dialog, QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier)
        )
        assert dialog.isVisible()
    dialog.close()
    assert dialog.isVisible() and "I have saved these" in dialog.status.text()

    dialog.copy_all_button.click()
    copied = QGuiApplication.clipboard().text()
    assert secret in copied and dialog.fields["encryption_key"].text() in copied
    assert "Client secret:" in copied
    target = tmp_path / "harbour.txt"
    dialog.save_to(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert secret in target.read_text()
    shoot(dialog, screenshot_dir, "credentials-saved", ((900, 560),))

    assert dialog.use_here is not None and dialog.use_here.isChecked()
    dialog.done_button.click()
    assert not dialog.isVisible() and dialog.fields["client_secret"].text() == ""
    saved = load_local_issuer(demo_context.settings, demo_context.secrets)
    assert saved is not None and saved.name == "Harbour Payroll" and saved.complete
    assert saved.client_secret == secret
    settings_text = (Path(str(demo_context.secrets._dir)) / "settings.json").read_text()
    assert secret not in settings_text and "Harbour Payroll" in settings_text
    # Even in demo mode the Issue screen now issues as the payroll provider saved here.
    panel = IssuerPanel(demo_context)
    qtbot.addWidget(panel)
    assert "Harbour Payroll" in panel.summary.text()
    client, key, _ = panel.credentials()
    assert client is not demo_context.issuer and key.key_version == saved.key_version
    panel.close_client()
    tasks.wait()


def test_the_app_refuses_to_lock_itself_out(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.resize(1280, 800)
    screen.tabs.setCurrentIndex(2)
    assert not screen.disable_button.isEnabled()  # nothing selected yet
    assert not screen.copy_buttons["clients"].isEnabled()
    admin_id = next(c.client_id for c in screen.overview.clients if c.role == "admin")
    for own in (admin_id, demo_context.issuer_info.client_id):
        assert screen.select_row(screen.clients, own)
        assert screen.disable_button.isEnabled() and screen.copy_buttons["clients"].isEnabled()
        with qtbot.waitSignal(screen.failed, timeout=2000) as refused:
            screen.disable_button.click()
        assert "signs in with this client" in refused.args[0] or "admin client" in refused.args[0]
        assert screen.last_confirmation is None  # not even asked
    notes = {
        screen.clients.item(r, 0).text(): screen.clients.item(r, 5).text()  # type: ignore[union-attr]
        for r in range(screen.clients.rowCount())
    }
    assert notes[admin_id] == notes[demo_context.issuer_info.client_id] == "Used by this app"
    shoot(screen, screenshot_dir, "admin-refusal")
    # The last admin client is protected even when the app would not be using it.
    assert screen.refusal(admin_id) is not None
    # Nothing was disabled.
    screen.refresh()
    qtbot.waitUntil(lambda: screen._busy == 0, timeout=10000)
    assert not any(c.disabled for c in screen.overview.clients)

    screen.copy_buttons["clients"].click()
    assert QGuiApplication.clipboard().text() == demo_context.issuer_info.client_id
    verifier = next(c for c in screen.overview.clients if c.role == "verifier")
    tasks.wait()
    assert verifier.client_id  # the demo's desk client is the one this app verifies with
    assert screen.refusal(verifier.client_id) is not None


def test_confirmations_name_their_target_and_default_to_cancel(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    key_version = screen.overview.keys[0].key_version
    screen.tabs.setCurrentIndex(3)
    assert not screen.retire_button.isEnabled()
    assert screen.select_row(screen.keys, key_version)
    assert screen.retire_button.isEnabled()
    screen.auto_confirm = False  # the user answers Cancel
    screen.retire_button.click()
    box = screen.last_confirmation
    assert box is not None
    assert key_version in box.text() and "Demo Payroll Pty Ltd" in box.text()
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    assert box.escapeButton() is box.button(QMessageBox.StandardButton.Cancel)
    tasks.wait()
    assert all(k.state == "active" for k in screen.overview.keys)

    # A duplicate name asks first; answering Cancel adds nothing.
    before = len(screen.overview.issuers)
    screen.name_edit.setText("demo payroll pty ltd")
    screen.create_issuer_button.click()
    assert "already a payroll provider called" in screen.last_confirmation.text()  # type: ignore[union-attr]
    assert "exists already" in screen.status.text()
    tasks.wait()
    assert screen.last_dialog is None and len(screen.overview.issuers) == before

    # Keys show local times, not raw ISO strings, and ids are whole.
    assert "T" not in screen.keys.item(0, 3).text() and "Z" not in screen.keys.item(0, 3).text()
    assert screen.keys.item(0, 0).text() == key_version
    shoot(screen, screenshot_dir, "admin-keys")
    tasks.wait()


def test_counts_refresh_after_each_change_and_on_a_timer(
    qtbot: QtBot, demo_context: AppContext, no_leaks: None
) -> None:
    screen, tasks = _screen(qtbot, demo_context)
    screen.show()
    assert screen.timer.isActive()
    assert screen.issuers.item(0, 2).text() == "3"
    # A change made elsewhere (another admin, a pay run) shows up without pressing Refresh.
    assert demo_context.admin is not None
    demo_context.admin.admin_create_verifier("Desk made elsewhere")
    screen.timer.setInterval(200)
    qtbot.waitUntil(
        lambda: screen.verifiers.rowCount() == 2 and "2 front desks" in screen.status.text(),
        timeout=10000,
    )
    screen.timer.stop()
    tasks.wait()


def test_a_new_office_sees_what_to_do_first(
    qtbot: QtBot, config_dir: Path, tmp_path: Path, screenshot_dir: Path, no_leaks: None
) -> None:
    from app.settings.desk import SecretStore, Settings
    from app.shell.context import start_embedded_context

    settings = Settings(data_dir=str(tmp_path / "office"))
    context = start_embedded_context(settings, SecretStore(config_dir, use_keyring=False))
    try:
        screen, tasks = _screen(qtbot, context)
        screen.show()
        hint = screen.empty_hints["issuers"]
        assert hint.isVisibleTo(screen) and "Add payroll provider" in hint.text()
        assert "0 payroll providers" in screen.status.text()
        shoot(screen, screenshot_dir, "admin-empty")
        screen.timer.stop()
        panel, _ = _panel(qtbot, context, tasks)
        assert panel.environment_label.text().startswith("Live")
        words = "\n".join(w.text() for w in panel.findChildren(QLabel))
        assert str(tmp_path / "office") in words and "Demo" not in words
        shoot(panel, screenshot_dir, "service-live")
        panel.timer.stop()
        tasks.wait()
    finally:
        context.close()


def test_the_retire_confirmation_counts_the_payslips_it_makes_unverifiable(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    """Issue 35: "payslips encrypted with it can never be verified again" now says how many:
    those pinned to the key and not revoked, and up to how many of the provider's payslips
    whose key the service has not noted yet. The real message box, answered Cancel."""
    from PySide6.QtCore import QTimer

    from testbed.applicant_payslips import register_fortnights

    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    info = demo_context.issuer_info
    key_version = f"{info.issuer_id}.1"

    def counts() -> tuple[int, int]:
        overview = demo_context.admin.admin_list()  # type: ignore[union-attr]
        key = next(k for k in overview.keys if k.key_version == key_version)
        issuer = next(i for i in overview.issuers if i.issuer_id == info.issuer_id)
        assert key.records is not None and issuer.unpinned is not None
        return key.records, issuer.unpinned

    pinned, unpinned = counts()
    made = register_fortnights(demo_context.issuer, info.encryption_key, 3)  # no key named
    demo_context.issuer.revoke(made[0].reference)
    demo_context.verifier.verify_payload(made[1].sealed.payload)  # notes (pins) its key
    assert counts() == (pinned + 1, unpinned + 1)

    screen, tasks = _screen(qtbot, demo_context)
    screen.show_dialogs = True
    screen.tabs.setCurrentIndex(3)
    assert screen.select_row(screen.keys, key_version)
    seen: list[str] = []

    def answer_cancel() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, answer_cancel)  # not shown yet
            return
        seen.append(box.text())
        box.grab().save(str(screenshot_dir / "retire-key-confirmation.png"))
        cancel = box.button(QMessageBox.StandardButton.Cancel)
        qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, answer_cancel)
    screen.retire_button.click()
    (text,) = seen
    expected = f"{pinned + 1:,} payslip" + ("" if pinned + 1 == 1 else "s")
    assert f"Retiring destroys this key: {expected} registered with it" in text, text
    assert f"Up to {unpinned + 1:,} more of Demo Payroll Pty Ltd's payslips" in text, text
    tasks.wait()
    assert all(k.state == "active" for k in screen.overview.keys)  # Cancel: nothing retired
