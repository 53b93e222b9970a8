"""The office network's HTTPS as an office sees it (issue 37): the Service screen shows the
certificate's fingerprint in words, Admin hands it to a new front desk with the address and
sign-in, the desk connects with it through the welcome, and refuses the service once its
certificate changed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pytestqt.qtbot import QtBot

from app.api.errors import ServiceUnreachable
from app.api.pinning import fingerprint_words
from app.settings.desk import SecretStore, Settings
from app.shell.context import start_remote_context
from app.shell.office_tls import certificate_fingerprint
from app.ui.admin.pair_dialog import PairDialog
from app.ui.service.panel import ServicePanel, restart_embedded
from app.ui.welcome import WelcomeDialog
from app.ui.widgets.tasks import TaskRunner
from tests.app.ui.admin.adding import add_client, admin_screen
from tests.app.ui.office_network import office_on_network


def connect(
    qtbot: QtBot, folder: Path, url: str, client_id: str, secret: str, fingerprint: str
) -> WelcomeDialog:
    """A new desk's welcome: Connect, the four values typed, Connect pressed."""
    dialog = WelcomeDialog(Settings(), SecretStore(folder, use_keyring=False))
    qtbot.addWidget(dialog)
    dialog.buttons["connect"].click()
    dialog.url_edit.setText(url)
    dialog.client_edit.setText(client_id)
    dialog.secret_edit.setText(secret)
    dialog.fingerprint_edit.setText(fingerprint)
    dialog.connect_button.click()
    return dialog


def test_a_desk_is_given_the_office_fingerprint_and_refuses_a_changed_certificate(
    qtbot: QtBot, tmp_path: Path, config_dir: Path, no_leaks: None
) -> None:
    office = office_on_network(tmp_path, config_dir)
    tasks = TaskRunner()
    try:
        url = office.service_url
        assert url.startswith("https://")
        fingerprint = certificate_fingerprint(office.settings.tls_cert)
        words = fingerprint_words(fingerprint)

        panel = ServicePanel(office, tasks)
        qtbot.addWidget(panel)
        panel.timer.stop()
        assert panel.fingerprint_label.text() == words

        admin, _ = admin_screen(qtbot, office, tasks)
        given = add_client(qtbot, admin, "Front desk 2", "verifier")
        assert given.fields["service_url"].text() == url
        assert given.fields["certificate_fingerprint"].text() == words
        desk_id = given.fields["client_id"].text()
        desk_secret = given.fields["client_secret"].text()
        given.confirm_saved()

        # The new desk types (or pastes) all four and is connected.
        desk_dir = tmp_path / "desk"
        dialog = connect(qtbot, desk_dir, url, desk_id, desk_secret, words)
        qtbot.waitUntil(lambda: dialog.choice == "connect", timeout=10000)
        desk = dialog.settings
        assert desk.tls_fingerprint == fingerprint and desk.verifier_url == url
        desk_secrets = SecretStore(desk_dir, use_keyring=False)
        assert desk_secrets.get(f"remote:{desk_id}") == desk_secret
        remote = start_remote_context(desk, desk_secrets)
        try:
            remote.verifier.check_sign_in()

            # The office's certificate changes (a new one made): the pinned desk sends nothing.
            office.settings.tls_cert = office.settings.tls_key = ""
            restart_embedded(office)
            assert certificate_fingerprint(office.settings.tls_cert) != fingerprint
            moved = start_remote_context(desk, desk_secrets)
            try:
                with pytest.raises(ServiceUnreachable) as refused:
                    moved.verifier.check_sign_in()
                assert refused.value.reason == "certificate"
            finally:
                moved.close()
        finally:
            remote.close()
        again = connect(qtbot, desk_dir, url, desk_id, desk_secret, words)
        qtbot.waitUntil(lambda: "other than the one" in again.connect_status.text(), timeout=10000)
        assert again.choice is None

        # A phone pairs over the office address on this service's port: the dialog tells the
        # person what the browser's warning must show (a phone cannot pin).
        port = urlsplit(office.service_url).port
        office.settings.scan_base = f"https://192.0.2.10:{port}"
        restart_embedded(office)
        now = fingerprint_words(certificate_fingerprint(office.settings.tls_cert))
        with qtbot.waitSignal(admin.refreshed, timeout=10000):
            admin.refresh()
        admin.tabs.setCurrentIndex(1)
        admin.verifiers.selectRow(0)
        admin.pair_button.click()
        pairing = admin.findChildren(PairDialog)[0]
        pairing.make_button.click()
        qtbot.waitUntil(lambda: pairing.offer is not None, timeout=10000)
        assert pairing.offer is not None
        assert pairing.offer.pair_url.startswith(f"https://192.0.2.10:{port}/v/pair#")
        assert now in pairing.status.text() and "fingerprint" in pairing.status.text()
        pairing.reject()
    finally:
        tasks.wait()
        office.close()
