"""A verification record checked on an office network (issue 37's self-signed HTTPS): the keys
that check a receipt are fetched with the trust the desk gives the service for everything
else, the office certificate pinned by its fingerprint. With the public authorities' trust
they could not be fetched at all ("the service's keys could not be fetched"), on the office
computer itself and on every desk pinned to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.api.fail_fast import issuer_client
from app.commands.receipt import main as receipt_main
from app.receipts.check import JWKS_PATH, ReceiptError, check_receipt, load_jwks
from app.settings.desk import Settings
from app.shell.context import desk_options
from app.shell.office_tls import certificate_fingerprint
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.tasks import TaskRunner
from service.protocol.pii_text import build_pii_text
from testbed.factories import AU_V1, PII_FIELDS, sealed_payslip
from tests.app.ui.office_network import office_on_network

pytestmark = pytest.mark.gui


def test_a_record_is_checked_against_the_pinned_office_keys(
    qtbot: Any,
    tmp_path: Path,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_leaks: None,
) -> None:
    office = office_on_network(tmp_path, config_dir)
    tasks = TaskRunner()
    try:
        assert office.admin is not None
        made = office.admin.admin_create_issuer("Harbour Payroll")
        own = office.own_options()
        with issuer_client(office.service_url, made.client_id, made.client_secret, **own) as iss:
            pii = build_pii_text("AU2", PII_FIELDS["AU2"])
            sealed = sealed_payslip(made.encryption_key, AU_V1, pii)
            iss.register_non_pii(sealed.body)
        keys_url = office.service_url + JWKS_PATH
        with pytest.raises(ReceiptError):  # what every check met before: nothing fetched
            load_jwks(keys_url)
        receipt = office.verifier.receipt(sealed.payload).receipt
        assert check_receipt(receipt, load_jwks(keys_url, own["verify"])).state == "genuine"

        # The office computer's Verify screen: a saved record dropped back is checked.
        screen = VerifyScreen(office, tasks)
        qtbot.addWidget(screen)
        screen.show()
        with qtbot.waitSignal(screen.result_shown, timeout=20000):
            screen.code_field.setText(sealed.payload)
            screen.submit_text()
        with qtbot.waitSignal(screen.records.saved, timeout=20000):
            screen.records.save(str(tmp_path / "record.pdf"))
        screen.clear_result()
        with qtbot.waitSignal(screen.records.record_checked, timeout=20000) as checked:
            screen.open_path(tmp_path / "record.pdf")
        assert checked.args == ["genuine"], screen.notice.text()
        screen.shutdown()

        # A desk pinned to the office: `app receipt check` fetches the keys the same way.
        desk = Settings(
            mode="remote",
            verifier_url=office.service_url,
            tls_fingerprint=certificate_fingerprint(office.settings.tls_cert),
        )
        assert desk_options(desk)["verify"] is not None
        desk_dir = tmp_path / "desk"
        desk.save(desk_dir)
        monkeypatch.setenv("PAYSLIP_CONFIG_DIR", str(desk_dir))
        (tmp_path / "receipt.txt").write_text(receipt)
        assert receipt_main(["check", str(tmp_path / "receipt.txt")]) == 0
        out, err = capsys.readouterr()
        assert err == "" and out.strip(), (out, err)
    finally:
        tasks.wait()
        office.close()
