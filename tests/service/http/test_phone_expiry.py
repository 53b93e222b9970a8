"""A paired phone's client expires (issue 37, point 5): 90 days after pairing unless the admin
chose another number; then the token endpoint refuses it and a token it already holds stops
working, as for a disabled client. Admin's overview says when each client last got a token.
All on a fake clock through the real WSGI app and store: no sleeps."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from service.cli.main import main
from service.composition.instance import domain_for, load_master_key, offline_config, open_store
from service.http.phone import _read
from service.protocol.schemas.access import PHONE_DAYS
from service.storage.port import StoreUnavailable
from testbed.factories import sealed_record
from tests.service.conftest import make_instance
from tests.service.http.test_wsgi_inprocess import InProcess, expect

DAY = 24 * 3600


@pytest.fixture
def office(tmp_path: Path) -> Iterator[InProcess]:
    app = InProcess(tmp_path)
    yield app
    app.close()


def admin_token(office: InProcess) -> str:
    created = office.created
    return office.token(
        {"client_id": created["admin_client_id"], "client_secret": created["admin_client_secret"]}
    )


def pair_phone(office: InProcess, body: Any = None) -> dict[str, Any]:
    """Admin makes a pairing for the desk; a phone redeems it. The phone's credential."""
    path = f"/admin/v1/clients/{office.verifier['client_id']}/pairings"
    offer = office.call("POST", path, body, token=admin_token(office))
    assert offer.status == 201, offer.body
    used = office.call(
        "POST", "/v1/pairings/redeem", {"pairing_code": offer.json()["pairing_code"]}
    )
    assert used.status == 200, used.body
    return dict(used.json())


def client_row(office: InProcess, client_id: str) -> dict[str, Any]:
    overview = office.call("GET", "/admin/v1/overview", token=admin_token(office)).json()
    return next(c for c in overview["clients"] if c["client_id"] == client_id)


def verify(office: InProcess, token: str) -> int:
    sealed = sealed_record(office.issuer["encryption_key"])
    issued = office.call(
        "POST", "/v1/registerNonPII", sealed.body, token=office.token(office.issuer)
    )
    assert issued.status == 201, issued.body
    return office.call(
        "POST", "/v1/verifications/payload", {"barcode": sealed.payload}, token=token
    ).status


def test_a_phone_is_refused_once_its_days_are_over(office: InProcess) -> None:
    phone = pair_phone(office, {"days": 30})
    row = client_row(office, phone["client_id"])
    paired = office.clock.moment
    assert row["expires_at"].startswith((paired + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"))
    assert row.get("last_used_at") is None  # None is left out of the answer

    office.clock.advance(30 * DAY - 60)
    held = office.token(phone)  # a minute before the end: still signs in
    assert verify(office, held) == 200

    office.clock.advance(61)
    refused = office.call(
        "POST",
        "/oauth/token",
        {
            "grant_type": "client_credentials",
            "client_id": phone["client_id"],
            "client_secret": phone["client_secret"],
            "audience": "http://payslip.test",
        },
    )
    assert expect(refused, 401, "UNAUTHORIZED")["error"] == "invalid_client"
    assert verify(office, held) == 401  # the token it got a minute ago stops with it
    assert verify(office, office.token(office.verifier)) == 200  # the desk itself never expires
    assert client_row(office, office.verifier["client_id"]).get("expires_at") is None


def test_a_phone_lasts_90_days_by_default(office: InProcess) -> None:
    phone = pair_phone(office)
    office.clock.advance(PHONE_DAYS * DAY - 1)
    office.token(phone)
    office.clock.advance(1)
    body = {
        "grant_type": "client_credentials",
        "client_id": phone["client_id"],
        "client_secret": phone["client_secret"],
        "audience": "http://payslip.test",
    }
    expect(office.call("POST", "/oauth/token", body), 401, "UNAUTHORIZED")


def test_admin_sees_when_a_client_last_got_a_token(office: InProcess) -> None:
    phone = pair_phone(office)
    office.token(phone)
    first = client_row(office, phone["client_id"])["last_used_at"]
    assert first is not None and first.startswith(office.clock.moment.strftime("%Y-%m-%dT%H:%M"))
    office.clock.advance(600)  # within the hour: not written again
    office.token(phone)
    assert client_row(office, phone["client_id"])["last_used_at"] == first
    office.clock.advance(3600)
    office.token(phone)
    later = client_row(office, phone["client_id"])["last_used_at"]
    assert later > first


@pytest.mark.parametrize("days", [0, 3651, -1, "90", True, 1.5, None])
def test_the_days_asked_for_are_checked(office: InProcess, days: Any) -> None:
    path = f"/admin/v1/clients/{office.verifier['client_id']}/pairings"
    body: Any = {"days": days}
    if days is None:
        body = {"days": 7, "extra": 1}
    reply = office.call("POST", path, body, token=admin_token(office))
    field = expect(reply, 400, "VALIDATION_FAILED")["field_errors"][0]["path"]
    assert field == ("extra" if days is None else "days")


def test_a_store_that_cannot_record_the_use_still_signs_clients_in(
    office: InProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """Recording "last used" is a nicety: a full disk must not stop every sign-in."""
    phone = pair_phone(office)

    def full_disk(client_id: str, at: str) -> None:
        raise StoreUnavailable("no space left on the device")

    office.store.touch_client = full_disk  # type: ignore[attr-defined]
    assert office.token(phone)
    assert "could not record a client's last use" in caplog.text
    assert phone["client_id"] not in caplog.text


def test_the_cli_pairs_a_phone_for_the_days_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "cli"
    _, _, verifier = make_instance(data_dir)
    base = ["admin", "--data-dir", str(data_dir), "pair-verifier"]
    args = [*base, "--client-id", verifier["client_id"], "--public-url", "https://v.example.test"]
    assert main([*args, "--days", "0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and "days" in err
    assert main([*args, "--days", "7"]) == 0
    code = json.loads(capsys.readouterr().out)["pairing_code"]
    store = open_store(data_dir)
    try:
        domain = domain_for(store, offline_config(load_master_key(data_dir)))
        phone = domain.pairings.redeem(code)
        client = store.get_client(phone.client_id)
        assert client is not None and client.expires_at is not None
        lasts = datetime.fromisoformat(client.expires_at.replace("Z", "+00:00")) - datetime.now(UTC)
        assert timedelta(days=6, hours=23) < lasts <= timedelta(days=7)
    finally:
        store.close()


def test_the_pairing_page_does_not_tick_remember_by_default() -> None:
    page = _read("verify.html").decode("utf-8")
    boxes = re.findall(r"<input[^>]*type=\"checkbox\"[^>]*>", page)
    assert boxes and all("checked" not in box for box in boxes), boxes
    assert any('id="pair-remember"' in box for box in boxes)
