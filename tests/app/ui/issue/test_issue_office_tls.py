"""A payroll computer issuing to an office service over its self-signed HTTPS: Admin hands the
new payroll provider the address and the certificate's fingerprint with its credentials, the
Issue screen on another computer takes all of them and issues a badge that verifies, remembers
the fingerprint (not a secret) in settings.json, and sends nothing to a service whose
certificate is another. `issue-run --tls-fingerprint` does the same from the terminal."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from app.api.pinning import fingerprint_words
from app.commands.issue_run import main as issue_run
from app.inputs.reading import read_input
from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext
from app.shell.office_tls import certificate_fingerprint
from app.ui.issue.screen import IssueScreen
from app.ui.widgets.tasks import TaskRunner
from service.composition.demo import sample_records
from tests.app.shots import shoot
from tests.app.ui.admin.adding import add_client, admin_screen
from tests.app.ui.issue.test_issue_screen import NZ_PII
from tests.app.ui.office_network import office_on_network

RESOURCES = Path(__file__).resolve().parents[4] / "resources"


def payroll_computer(office: AppContext, folder: Path) -> AppContext:
    """Another computer: no service of its own, its own settings and secret store."""
    return dataclasses.replace(
        office,
        settings=Settings(),
        secrets=SecretStore(folder, use_keyring=False),
        service=None,
        admin=None,
        issuer=None,
        issuer_info=None,
    )


def test_a_payroll_computer_pins_the_office_certificate(
    qtbot: QtBot,
    tmp_path: Path,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
    no_leaks: None,
) -> None:
    office = office_on_network(tmp_path, config_dir)
    tasks = TaskRunner()
    try:
        url = office.service_url
        assert url.startswith("https://") and office.admin is not None
        fingerprint = certificate_fingerprint(office.settings.tls_cert)
        words = fingerprint_words(fingerprint)

        admin, _ = admin_screen(qtbot, office, tasks)
        given = add_client(qtbot, admin, "Harbour Payroll", "issuer")
        handed = {name: edit.text() for name, edit in given.fields.items()}
        assert handed["service_url"] == url
        assert handed["certificate_fingerprint"] == words
        shoot(given, screenshot_dir, "admin-new-payroll-provider-office", ((760, 560),))
        given.confirm_saved()

        payroll_dir = tmp_path / "payroll"
        monkeypatch.setenv("PAYSLIP_CONFIG_DIR", str(payroll_dir))  # the other computer's
        payroll = payroll_computer(office, payroll_dir)
        screen = IssueScreen(payroll, tasks)
        qtbot.addWidget(screen)
        panel = screen.issuer_panel
        assert "No payroll provider is set up" in panel.summary.text()
        typed = {
            "url": handed["service_url"],
            "client_id": handed["client_id"],
            "client_secret": handed["client_secret"],
            "encryption_key": handed["encryption_key"],
            "key_version": handed["key_version"],
        }

        def fill(fingerprint_text: str) -> None:
            for name, value in {**typed, "fingerprint": fingerprint_text}.items():
                panel.fields[name].setText(value)
            _, record, _ = sample_records()[1]
            screen.single.set_schema("nz.payslip.v2")
            screen.single.fill_example(record["payslip_non_pii"], NZ_PII)

        # Another certificate's fingerprint (the office's with one digit changed): refused in
        # the handshake, nothing registered.
        before = office.admin.admin_list().record_count
        fill(words[:-1] + ("0" if words[-1] != "0" else "1"))
        with qtbot.waitSignal(screen.single.failed, timeout=20000) as failed:
            screen.single.issue_button.click()
        assert "certificate other than the one" in failed.args[0]
        assert office.admin.admin_list().record_count == before

        # Not a fingerprint at all: said plainly, before anything is sent.
        fill("3F2A 9C41")
        with qtbot.waitSignal(screen.single.failed, timeout=20000) as failed:
            screen.single.issue_button.click()
        assert "not a SHA-256 fingerprint" in failed.args[0]

        fill(words)
        panel.remember.setChecked(True)
        shoot(screen, screenshot_dir, "issue-payroll-computer", ((1366, 768), (1024, 600)))
        with qtbot.waitSignal(screen.single.issued, timeout=20000) as issued:
            screen.single.issue_button.click()
        assert office.verifier.verify_payload(issued.args[0].payload).verified is True
        assert office.admin.admin_list().record_count == before + 1
        saved = json.loads((payroll_dir / "settings.json").read_text())
        assert saved["extra"]["issuer"]["fingerprint"] == fingerprint
        assert handed["client_secret"] not in json.dumps(saved)

        panel.reload()  # as at the next start: the fingerprint is shown again, in words
        assert panel.fields["fingerprint"].text() == words
        assert handed["client_id"] in panel.summary.text()  # named (no name typed here)
        screen.shutdown()
    finally:
        tasks.wait()
        office.close()


def test_issue_run_pins_the_office_certificate(
    tmp_path: Path,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The terminal's pay run on the payroll computer: `--tls-fingerprint` as Admin shows it
    (words, any case); a run against another certificate stops before registering anything."""
    office = office_on_network(tmp_path, config_dir)
    try:
        assert office.admin is not None
        made = office.admin.admin_create_issuer("Harbour Payroll")
        words = fingerprint_words(certificate_fingerprint(office.settings.tls_cert))
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("PAYSLIP_CLIENT_SECRET", made.client_secret)
        monkeypatch.setenv("PAYSLIP_ENCRYPTION_KEY", made.encryption_key)
        (tmp_path / "run.csv").write_bytes((RESOURCES / "sample_payrun.csv").read_bytes())
        common = ["run.csv", "--service-url", office.service_url, "--client-id", made.client_id]
        common += ["--quiet"]
        before = office.admin.admin_list().record_count

        other = words[:-1] + ("0" if words[-1] != "0" else "1")
        assert issue_run([*common, "--out", "refused", "--tls-fingerprint", other]) == 3
        _, err = capsys.readouterr()
        assert "certificate other than the one" in err
        assert office.admin.admin_list().record_count == before

        assert issue_run([*common, "--out", "out", "--tls-fingerprint", words.lower()]) == 0
        out, _ = capsys.readouterr()
        registered = office.admin.admin_list().record_count - before
        assert registered > 0 and str(registered) in out
        badge = sorted((tmp_path / "out" / "badges").glob("*.png"))[0]
        payloads = read_input(str(badge)).payloads  # the printed badge, read by the decoder
        assert payloads and office.verifier.verify_payload(payloads[0]).verified is True
    finally:
        office.close()
