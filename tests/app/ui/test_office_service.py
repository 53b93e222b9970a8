"""An office through its weeks (issue 27, items 1-3, 8, 9): the embedded service on a kept port,
settings that follow it, key rotation that keeps issuing, the app's own clients guarded.

Every test runs the real embedded service in a temporary data folder with settings in a
temporary config folder. "Restarting the app" is what a new start does: the context is closed,
and settings and secrets are read again from the same folders into a new context.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.issuer.local_issuer import THIS_COMPUTER, load_local_issuer
from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_embedded_context
from app.ui.admin.screen import AdminScreen
from app.ui.issue.screen import IssueScreen
from app.ui.service.panel import ServicePanel
from app.ui.widgets.tasks import TaskRunner
from service.composition.demo import sample_records
from service.hosting.network_address import choose_port
from tests.app.shots import shoot
from tests.app.ui.admin.adding import add_client, admin_screen
from tests.app.ui.issue.test_issue_screen import NZ_PII

SMALL = ((1366, 768), (1024, 600))


class Office:
    """The config and data folders of one office computer, and its app's starts."""

    def __init__(self, root: Path) -> None:
        self.config = root / "config"
        self.data = root / "data"
        self.context: AppContext | None = None

    def start(self, **changes: object) -> AppContext:
        if self.context is not None:
            self.context.close()
        settings = Settings.load(self.config)
        if not settings.data_dir:
            settings.data_dir = str(self.data)
        for name, value in changes.items():
            setattr(settings, name, value)
        settings.save(self.config)
        secrets = SecretStore(self.config, use_keyring=False)
        self.context = start_embedded_context(Settings.load(self.config), secrets)
        return self.context

    def saved(self) -> dict[str, object]:
        return dict(json.loads((self.config / "settings.json").read_text("utf-8")))

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
            self.context = None


@pytest.fixture
def office(tmp_path: Path, config_dir: Path) -> Iterator[Office]:
    place = Office(tmp_path)
    assert place.config == config_dir  # Settings.save() with no folder writes here too
    try:
        yield place
    finally:
        place.close()


def add_issuer_used_here(qtbot: QtBot, screen: AdminScreen, name: str) -> str:
    """Admin → Add payroll provider, "Use this issuer for issuing on this computer" ticked."""
    screen.name_edit.setText(name)
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.create_issuer_button.click()
    dialog = screen.last_dialog
    assert dialog is not None and dialog.use_here is not None and dialog.use_here.isChecked()
    client_id = dialog.fields["client_id"].text()
    dialog.confirm_saved()
    return client_id


def issue_one(qtbot: QtBot, context: AppContext, shots: Path | None = None) -> str:
    """Open the Issue screen as after a start and issue one payslip; its payload."""
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    widget.resize(1280, 800)
    widget.show()
    try:
        _, record, _ = sample_records()[1]
        widget.single.set_schema("nz.payslip.v2")
        widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
        if shots is not None:
            shoot(widget, shots, "issue-loopback-warning", SMALL)
        failures: list[str] = []
        results: list[object] = []
        widget.single.failed.connect(failures.append)
        widget.single.issued.connect(results.append)
        widget.single.issue_button.click()
        qtbot.waitUntil(lambda: bool(failures or results), timeout=20000)
        assert not failures, failures
        return str(results[0].payload)  # type: ignore[attr-defined]
    finally:
        tasks.wait()
        widget.shutdown()
        widget.close()


def test_issuing_survives_a_restart_on_the_kept_port(
    qtbot: QtBot, office: Office, screenshot_dir: Path, no_leaks: None
) -> None:
    first = office.start()
    port = office.saved()["service_port"]
    assert isinstance(port, int) and port >= 8080
    assert first.service_url == f"http://127.0.0.1:{port}"
    screen, tasks = admin_screen(qtbot, first)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    tasks.wait()
    issuer = office.saved()["extra"]["issuer"]  # type: ignore[index]
    assert issuer["url"] == THIS_COMPUTER  # a marker, not a port

    second = office.start()  # the next morning: nothing touched in the settings
    assert second.service_url == f"http://127.0.0.1:{port}"  # the port survived
    payload = issue_one(qtbot, second, screenshot_dir)
    verified = second.verifier.verify_payload(payload)
    assert verified.verified and verified.payslip.issuer.name == "Harbour Payroll"


def test_a_changed_port_in_settings_is_followed_too(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    first = office.start()
    screen, tasks = admin_screen(qtbot, first)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    tasks.wait()
    wanted = choose_port("127.0.0.1", 18080)
    moved = office.start(service_port=wanted)
    assert moved.service_url == f"http://127.0.0.1:{wanted}"
    assert moved.verifier.verify_payload(issue_one(qtbot, moved)).verified


def test_rotate_use_here_retire_the_old_key_and_issue_again(
    qtbot: QtBot, office: Office, screenshot_dir: Path, no_leaks: None
) -> None:
    context = office.start()
    screen, tasks = admin_screen(qtbot, context)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    qtbot.waitUntil(lambda: screen.select_row(screen.issuers, "Harbour Payroll"), timeout=10000)
    issuer_id = screen.overview.issuers[0].issuer_id
    first_key = f"{issuer_id}.1"
    qtbot.waitUntil(lambda: screen._busy == 0, timeout=10000)
    screen.rotate_button.click()
    qtbot.waitUntil(
        lambda: screen.last_dialog is not None and screen.last_dialog.title.startswith("New key"),
        timeout=10000,
    )
    dialog = screen.last_dialog
    assert dialog is not None and dialog.use_here is not None
    assert dialog.use_here.text() == "Use this key for issuing on this computer"
    assert dialog.use_here.isChecked()  # this computer issues as Harbour Payroll
    new_key = dialog.fields["key_version"].text()
    shoot(dialog, screenshot_dir, "new-key-use-here", SMALL)
    dialog.confirm_saved()
    saved = load_local_issuer(context.settings, context.secrets)
    assert saved is not None and saved.key_version == new_key
    assert saved.encryption_key  # kept in the secret store, not in settings.json
    assert saved.encryption_key not in (office.config / "settings.json").read_text()

    qtbot.waitUntil(lambda: screen.select_row(screen.keys, new_key), timeout=10000)
    states = {
        screen.keys.item(r, 0).text(): screen.keys.item(r, 2).text()  # type: ignore[union-attr]
        for r in range(screen.keys.rowCount())
    }
    assert states == {new_key: "Current", first_key: "Previous (still verifies old payslips)"}
    screen.tabs.setCurrentIndex(3)
    shoot(screen, screenshot_dir, "admin-keys-in-words", SMALL)
    assert screen.select_row(screen.keys, first_key)
    screen.retire_button.click()  # not the key this computer issues with now: a plain question
    assert screen.last_confirmation is not None
    assert "still issues" not in screen.last_confirmation.text()
    qtbot.waitUntil(
        lambda: any(
            k.key_version == first_key and k.state == "retired" for k in screen.overview.keys
        ),
        timeout=10000,
    )
    tasks.wait()
    assert context.verifier.verify_payload(issue_one(qtbot, context)).verified

    # Retiring the key this computer does issue with warns first, and says what to do.
    screen.auto_confirm = False
    assert screen.select_row(screen.keys, new_key)
    screen.retire_button.click()
    assert "This computer still issues payslips with this key" in screen.last_confirmation.text()
    tasks.wait()


def test_an_issue_refused_for_a_retired_key_says_what_to_do(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    context = office.start()
    screen, tasks = admin_screen(qtbot, context)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    saved = load_local_issuer(context.settings, context.secrets)
    assert saved is not None and context.admin is not None
    context.admin.admin_rotate_key(saved.key_version.rsplit(".", 1)[0])
    context.admin.admin_retire_key(saved.key_version)  # from another admin computer, say
    tasks.wait()
    widget_tasks = TaskRunner()
    widget = IssueScreen(context, widget_tasks)
    qtbot.addWidget(widget)
    widget.show()
    try:
        _, record, _ = sample_records()[1]
        widget.single.set_schema("nz.payslip.v2")
        widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
        with qtbot.waitSignal(widget.single.failed, timeout=20000) as failed:
            widget.single.issue_button.click()
        text = failed.args[0]
        assert "retired" in text and "give this payroll provider a new key" in text
        assert "Use this key for issuing on this computer" in text
        assert "again" in text and "Pressing the button again" not in text
    finally:
        widget_tasks.wait()
        widget.shutdown()
        widget.close()


def test_the_app_will_not_disable_its_own_issuer_client(
    qtbot: QtBot, office: Office, screenshot_dir: Path, no_leaks: None
) -> None:
    context = office.start()
    screen, tasks = admin_screen(qtbot, context)
    client_id = add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    qtbot.waitUntil(lambda: screen._busy == 0, timeout=10000)
    assert screen.select_row(screen.clients, client_id)
    notes = {
        screen.clients.item(r, 0).text(): screen.clients.item(r, 5).text()  # type: ignore[union-attr]
        for r in range(screen.clients.rowCount())
    }
    assert notes[client_id] == "Used by this app"
    assert all(note == "Used by this app" for note in notes.values())  # admin, desk, issuer
    with qtbot.waitSignal(screen.failed, timeout=2000) as refused:
        screen.disable_button.click()
    assert "signs in with this client" in refused.args[0]
    assert screen.last_confirmation is None
    screen.tabs.setCurrentIndex(2)
    shoot(screen, screenshot_dir, "admin-own-issuer", SMALL)
    screen.refresh()
    qtbot.waitUntil(lambda: screen._busy == 0, timeout=10000)
    assert not any(c.disabled for c in screen.overview.clients)
    tasks.wait()


def test_service_screen_sets_the_office_address_and_says_what_it_means(
    qtbot: QtBot, office: Office, screenshot_dir: Path, no_leaks: None
) -> None:
    context = office.start()
    tasks = TaskRunner()
    panel = ServicePanel(context, tasks)
    qtbot.addWidget(panel)
    panel.show()
    try:
        section = panel.address
        assert section is not None
        assert section.loopback_warning.isVisibleTo(panel)  # badges would say 127.0.0.1
        assert "this computer only" in panel.public_label.text()
        shoot(panel, screenshot_dir, "service-loopback", SMALL)
        section.who.setCurrentIndex(1)  # this office network, no HTTPS
        assert section.clear_warning.isVisibleTo(panel)
        assert "in clear" in section.clear_warning.text()
        section.scan_base.setText("verify.office")
        section.apply()
        assert "must start with http://" in section.status.text()
        office_url = f"http://192.0.2.10:{context.settings.service_port}"
        section.scan_base.setText(office_url)
        assert not section.loopback_warning.isVisibleTo(panel)
        shoot(panel, screenshot_dir, "service-office-network", SMALL)
        # Tests listen on loopback only; the office address stands for a reverse proxy here.
        section.who.setCurrentIndex(0)
        assert not section.clear_warning.isVisibleTo(panel)
        with qtbot.waitSignal(panel.restarted, timeout=20000):
            section.apply()
        assert context.service is not None
        assert context.service.config.scan_base == office_url
        assert context.public_url == office_url
        # The app's own clients follow: tokens for the office address, calls on loopback.
        assert context.admin is not None and context.admin.admin_list().clients
        assert office.saved()["scan_base"] == office_url
        assert office.saved()["service_listen"] == "loopback"
        shoot(panel, screenshot_dir, "service-restarted-office", SMALL)
        panel.scroll_area.verticalScrollBar().setValue(10_000)  # the bottom: Save and restart
        shoot(panel, screenshot_dir, "service-restarted-office-bottom", SMALL)
    finally:
        panel.timer.stop()
        tasks.wait()
        panel.close()


def test_the_embedded_service_speaks_https_with_the_operators_certificate(
    qtbot: QtBot, office: Office, tmp_path: Path, no_leaks: None
) -> None:
    from tests.service.hosting.test_tls_serve import self_signed

    cert, key = self_signed(tmp_path)
    context = office.start(tls_cert=str(cert), tls_key=str(key))
    url = context.service_url
    assert url.startswith("https://127.0.0.1:")
    # This app's own clients trust exactly that certificate, and sign in over HTTPS.
    assert context.admin is not None and context.admin.admin_list().clients
    screen, tasks = admin_screen(qtbot, context)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    tasks.wait()
    again = office.start()  # and after a restart
    assert again.service_url == url
    assert again.verifier.verify_payload(issue_one(qtbot, again)).verified


def test_a_new_front_desk_is_given_the_office_address_with_its_sign_in(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    context = office.start(scan_base="https://verify.office.test")
    assert context.public_url == "https://verify.office.test"
    screen, tasks = admin_screen(qtbot, context)
    dialog = add_client(qtbot, screen, "Front desk 2", "verifier")
    assert dialog.fields["service_url"].text() == "https://verify.office.test"
    assert dialog.fields["client_id"].text().startswith("ver_")
    dialog.confirm_saved()
    tasks.wait()


def test_an_issuer_saved_at_an_old_random_port_is_taken_over_after_the_update(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    """Settings written before this change kept the embedded service's random port."""
    from app.issuer.local_issuer import save_local_issuer

    context = office.start()
    assert context.admin is not None
    made = context.admin.admin_create_issuer("Harbour Payroll")
    with socket.socket() as gone:
        gone.bind(("127.0.0.1", 0))
        old_url = f"http://127.0.0.1:{gone.getsockname()[1]}"
        save_local_issuer(context.settings, context.secrets, old_url, "Harbour Payroll", made)
        assert office.saved()["extra"]["issuer"]["url"] == old_url  # type: ignore[index]
        again = office.start()  # the old port does not answer (held, never listening)
    assert office.saved()["extra"]["issuer"]["url"] == THIS_COMPUTER  # type: ignore[index]
    assert again.verifier.verify_payload(issue_one(qtbot, again)).verified


def test_after_a_restart_the_address_for_badges_is_tried_before_it_is_announced(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    """Issue 35: the Service screen said "now answers at verify.office.lan" without trying that
    name. It now says so only once the address answered from this computer, and otherwise what
    happened and what to check; the clear-text warning points up, to the fields above it."""
    import socket

    context = office.start()
    tasks = TaskRunner()
    panel = ServicePanel(context, tasks)
    qtbot.addWidget(panel)
    panel.show()
    try:
        section = panel.address
        assert section is not None
        section.who.setCurrentIndex(1)
        assert "HTTPS certificate and key above" in section.clear_warning.text()
        assert "below" not in section.clear_warning.text()
        grid_bottom = section.cert.mapTo(section, section.cert.rect().bottomLeft()).y()
        assert section.clear_warning.mapTo(section, section.clear_warning.rect().topLeft()).y() > (
            grid_bottom
        )
        section.who.setCurrentIndex(0)
        with socket.socket() as holder:  # a port bound, never listening: the name leads nowhere
            holder.bind(("127.0.0.1", 0))
            nowhere = f"http://127.0.0.1:{holder.getsockname()[1]}"
            section.scan_base.setText(nowhere)
            with qtbot.waitSignal(section.address_checked, timeout=30000) as said:
                section.apply()
            assert "did not answer from this computer" in said.args[0]
            assert "refused" in said.args[0] and "now answers" not in said.args[0]
            assert "now answers" not in section.status.text()
        section.scan_base.setText("")  # this computer's own address: tried, and it answers
        with qtbot.waitSignal(section.address_checked, timeout=30000) as said:
            section.apply()
        assert said.args[0] == (
            f"The service now answers at {context.public_url} (tried from this computer)."
        )
    finally:
        panel.timer.stop()
        tasks.wait()
        panel.close()
