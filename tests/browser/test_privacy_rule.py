"""One privacy rule for every output (issue 26 item 4,
`app.verify.presentation.shows_payslip_data`):
a NOT VERIFIED result shows no payslip figures and no employee data on the GUI card, the kiosk
card, the phone page, `app verify`'s text or its JSON, while a VERIFIED one shows them on each.

All outputs read the same real badge from the same real service on loopback: the phone in real
Chromium, the desk's cards through the app's own API client, the CLI as a subprocess.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from app.shell.context import verifier_client
from app.ui.verify.result_card import ResultCard
from app.verify.flow import verify_payloads
from tests.browser.conftest import DEMO_EMPLOYEE, OpenPhone, PhoneService
from tests.commands import run_module

pytestmark = [pytest.mark.slow, pytest.mark.gui]

EMPLOYEE_VALUES = [v for v in DEMO_EMPLOYEE.values() if v]
NET_PAY = ("3,064.15", "3064.15")


def _phone(service: PhoneService, open_phone: OpenPhone, url: str) -> str:
    phone = open_phone()
    phone.open(url)
    phone.sign_in(service.verifier["client_id"], service.verifier["client_secret"])
    phone.verdict()
    return phone.html()


def _cards(service: PhoneService, url: str) -> dict[str, str]:
    client = verifier_client(
        service.url, service.verifier["client_id"], service.verifier["client_secret"], service.url
    )
    try:
        outcome = verify_payloads(client, [url])
    finally:
        client.close()
    texts = {}
    for name, kiosk in (("GUI card", False), ("kiosk card", True)):
        card = ResultCard(kiosk=kiosk)
        card.show_outcome(outcome)
        texts[name] = "\n".join(card.all_texts())
        card.deleteLater()
    return texts


def _cli(service: PhoneService, url: str, *extra: str) -> str:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = run_module(
        "app",
        "verify",
        url,
        f"--service-url={service.url}",
        f"--client-id={service.verifier['client_id']}",
        f"--client-secret={service.verifier['client_secret']}",
        *extra,
        env=env,
    )
    assert out.returncode in (0, 1), out.stderr
    return str(out.stdout)


def _outputs(service: PhoneService, open_phone: OpenPhone, url: str) -> dict[str, str]:
    outputs = _cards(service, url)
    outputs["phone"] = _phone(service, open_phone, url)
    outputs["text"] = _cli(service, url)
    outputs["JSON"] = _cli(service, url, "--json")
    return outputs


@pytest.mark.parametrize(
    ("state", "shows"),
    [("verified", True), ("revoked", False)],
)
def test_every_output_shows_employee_data_only_when_verified(
    phone_service: PhoneService, open_phone: OpenPhone, qapp: Any, state: str, shows: bool
) -> None:
    badge = phone_service.issue_badge()
    if state == "revoked":
        phone_service.revoke(badge.reference)
    outputs = _outputs(phone_service, open_phone, badge.url)
    assert set(outputs) == {"GUI card", "kiosk card", "phone", "text", "JSON"}
    present: Callable[[str], bool] = lambda text: DEMO_EMPLOYEE["employee_name"] in text  # noqa: E731
    for name, text in outputs.items():
        if shows:
            assert present(text), f"{name} does not show the verified employee"
            continue
        leaked = [v for v in (*EMPLOYEE_VALUES, *NET_PAY) if v in text]
        assert not leaked, f"{name} shows {leaked} for a NOT VERIFIED payslip"
        assert "revoked" in text.lower(), f"{name} does not say why"
    if not shows:
        body = json.loads(outputs["JSON"])
        assert body["verdict"] == "NOT VERIFIED" and body["reason"] == "REVOKED"
        assert "employee" not in body
        assert body["service_reference"] == badge.reference
        assert body["payslip"]["issuer"]["name"]
