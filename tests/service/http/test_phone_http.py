"""The phone page's HTTP side (issue 10): every scan URL form gets the page, its headers, the
asset whitelist, browser-aware 404s, pairing over HTTP and the CLI, and the pairing rules."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from service.cli.main import main
from service.domain.clients import ClientRegistry
from service.domain.errors import ServiceError
from service.domain.pairing import PAIRING_TTL_SECONDS, Pairings
from service.hosting.server import start
from service.protocol.barcode_text import build_payload_v2
from service.storage.tinydb_store import TinyDBStore
from testbed import web
from testbed.factories import sealed_record
from tests.service.conftest import BOTH_STORES, LiveService, make_instance
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES
REF = "AAAAAAAAAAAAAAAAAAAAAA"


def scan_forms(live: LiveService) -> list[str]:
    sealed = sealed_record(live.issuer["encryption_key"])
    payload = build_payload_v2(sealed.reference, sealed.ciphertext)
    return [
        "/v",
        "/v/",
        f"/v/{sealed.reference}",
        f"/v/{quote(payload, safe='')}",
        "/v/pair",
    ]


def test_every_scan_url_form_gets_the_page_with_strict_headers(live: LiveService) -> None:
    for path in scan_forms(live):
        reply = live.http.get(f"{live.url}{path}", timeout=10)
        assert reply.status_code == 200, path
        assert reply.headers["content-type"] == "text/html; charset=utf-8"
        csp = reply.headers["content-security-policy"]
        for rule in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"):
            assert rule in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["referrer-policy"] == "no-referrer"
        assert reply.headers["cache-control"] == "no-store"
        assert reply.headers["x-request-id"]
        page = reply.text
        assert '<script type="module" src="/assets/verify.js"></script>' in page
        assert "<script>" not in page and " style=" not in page  # nothing inline for the CSP
        assert "http://" not in page.replace(live.url, "")  # no third-party asset
        assert f'data-audience="{live.url}"' in page


def test_assets_come_from_a_fixed_list(live: LiveService) -> None:
    for name, kind in (
        ("verify.js", "text/javascript"),
        ("verify.css", "text/css"),
        ("icon.svg", "image/svg+xml"),
    ):
        reply = live.http.get(f"{live.url}/assets/{name}", timeout=10)
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith(kind)
        assert reply.headers["x-content-type-options"] == "nosniff"
    (live.data_dir / "verify.js").write_text("stolen")
    for path in ("/assets/master.key", "/assets/..%2fmaster.key", "/assets/%2e%2e/db", "/v/../db"):
        reply = live.http.get(f"{live.url}{path}", timeout=10)
        assert reply.status_code in (200, 404), path
        assert "stolen" not in reply.text and "master" not in reply.text.lower()


def test_unknown_paths_are_html_for_browsers_and_json_for_api_clients(live: LiveService) -> None:
    browser = live.http.get(
        f"{live.url}/nothing-here",
        headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"},
        timeout=10,
    )
    assert browser.status_code == 404
    assert browser.headers["content-type"].startswith("text/html")
    assert "There is no page at this address." in browser.text
    assert "content-security-policy" in browser.headers
    for accept in (None, "application/json", "*/*", "application/json, text/html"):
        headers = {"Accept": accept} if accept else {}
        reply = live.http.get(f"{live.url}/nothing-here", headers=headers, timeout=10)
        expect_error(reply, 404, "NOT_FOUND")
    # API responses carry the same two protective headers.
    health = live.http.get(f"{live.url}/healthz", timeout=10)
    assert health.headers["x-content-type-options"] == "nosniff"
    assert health.headers["referrer-policy"] == "no-referrer"


@pytest.mark.tinydb_only  # reads the log records of the in-process server through caplog
def test_the_older_path_form_is_not_logged(
    live: LiveService, caplog: pytest.LogCaptureFixture
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    payload = build_payload_v2(sealed.reference, sealed.ciphertext)
    caplog.set_level(logging.DEBUG, logger="service.http")
    reply = live.http.get(f"{live.url}/v/{quote(payload, safe='')}", timeout=10)
    assert reply.status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "service.http"]
    assert any("GET /v/<rest:path>" in line for line in lines), lines
    assert not [line for line in lines if sealed.reference in line or "%7C" in line]


def pair(live: LiveService, client_id: str, token: str | None = None) -> httpx.Response:
    return live.post(f"/admin/v1/clients/{client_id}/pairings", None, token or live.admin_token())


def redeem(live: LiveService, body: object) -> httpx.Response:
    return live.http.post(f"{live.url}/v1/pairings/redeem", json=body, timeout=10)


def test_pairing_over_http_gives_the_phone_its_own_revocable_client(live: LiveService) -> None:
    made = pair(live, live.verifier["client_id"])
    assert made.status_code == 201, made.text
    assert made.headers["cache-control"] == "no-store"
    offer = made.json()
    code = offer["pairing_code"]
    assert offer["pair_url"] == f"{live.url}/v/pair#{code}"
    assert offer["expires_in"] == PAIRING_TTL_SECONDS
    assert offer["verifier_name"] == "Test Desk"

    # A wrong secret neither works nor uses the pairing up.
    pairing_id = code.split(".")[0]
    wrong = f"{pairing_id}.{'A' * 43}"
    expect_error(redeem(live, {"pairing_code": wrong}), 401, "UNAUTHORIZED")

    used = redeem(live, {"pairing_code": code, "device_name": "Front desk phone"})
    assert used.status_code == 200, used.text
    assert used.headers["cache-control"] == "no-store"
    phone = used.json()
    assert phone["client_id"] != live.verifier["client_id"]
    assert "Front desk phone paired" in phone["name"]
    expect_error(redeem(live, {"pairing_code": code}), 401, "UNAUTHORIZED")  # single use

    phone_token = live.token(phone["client_id"], phone["client_secret"])
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    assert live.verify(sealed.payload, phone_token).status_code == 200

    live.post(f"/admin/v1/clients/{phone['client_id']}/disable", None, live.admin_token())
    expect_error(live.verify(sealed.payload, phone_token), 401, "UNAUTHORIZED")
    assert live.verify(sealed.payload).status_code == 200  # the desk's own client still works


def test_pairing_requests_are_checked(live: LiveService) -> None:
    expect_error(pair(live, "ver_unknown"), 404, "SERVICE_REFERENCE_NOT_FOUND")
    body = expect_error(pair(live, live.issuer["client_id"]), 400, "VALIDATION_FAILED")
    assert body["field_errors"][0]["path"] == "client_id"
    expect_error(pair(live, live.verifier["client_id"], live.verifier_token()), 403, "FORBIDDEN")
    expect_error(
        live.http.post(f"{live.url}/admin/v1/clients/x/pairings", timeout=10), 401, "UNAUTHORIZED"
    )
    for bad, path in (
        ([], ""),
        ({}, "pairing_code"),
        ({"pairing_code": 5}, "pairing_code"),
        ({"pairing_code": "not-a-code"}, "pairing_code"),
        ({"pairing_code": "x", "extra": 1}, "extra"),
    ):
        body = expect_error(redeem(live, bad), 400, "VALIDATION_FAILED")
        assert body["field_errors"][0]["path"] == path


def test_a_disabled_desk_cannot_hand_out_phones(live: LiveService) -> None:
    code = pair(live, live.verifier["client_id"]).json()["pairing_code"]
    live.post(f"/admin/v1/clients/{live.verifier['client_id']}/disable", None, live.admin_token())
    expect_error(redeem(live, {"pairing_code": code}), 401, "UNAUTHORIZED")
    expect_error(pair(live, live.verifier["client_id"]), 404, "SERVICE_REFERENCE_NOT_FOUND")


def test_redeeming_is_rate_limited_like_the_token_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSLIP_RATE_LIMIT_TOKEN_IP", "3/minute")
    data_dir = tmp_path / "data"
    make_instance(data_dir)
    running = start(data_dir)
    try:
        statuses = [
            web.post(
                f"{running.url}/v1/pairings/redeem", json={"pairing_code": "x"}, timeout=10
            ).status_code
            for _ in range(4)
        ]
        assert statuses == [400, 400, 400, 429]
    finally:
        running.stop()


class MovableClock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment


def test_a_pairing_expires_and_is_purged(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "store")
    clock = MovableClock()
    try:
        clients = ClientRegistry(store, b"k" * 32, clock)
        desk, _ = clients.create("verifier", "ver-1", "Desk")
        pairings = Pairings(store, clients, b"p" * 32, clock, "https://verify.example.test")
        first = pairings.create(desk)
        assert first.pair_url.startswith("https://verify.example.test/v/pair#")
        clock.moment += timedelta(seconds=PAIRING_TTL_SECONDS)
        with pytest.raises(ServiceError) as raised:
            pairings.redeem(first.pairing_code)
        assert raised.value.code == "UNAUTHORIZED"
        second = pairings.create(desk, "https://phones.example.test/")
        assert second.pair_url.startswith("https://phones.example.test/v/pair#")
        clock.moment += timedelta(seconds=PAIRING_TTL_SECONDS - 1)
        assert pairings.redeem(second.pairing_code).client_id
        assert store.purge_pairings("9999-01-01T00:00:00.000Z") == 0  # nothing left behind
        with pytest.raises(ServiceError):
            pairings.create(desk, "ftp://nope")
    finally:
        store.close()


def test_cli_pair_verifier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / "data"
    _, _, verifier = make_instance(data_dir)
    code = main(
        [
            "admin",
            "--data-dir",
            str(data_dir),
            "pair-verifier",
            "--client-id",
            verifier["client_id"],
            "--public-url",
            "https://verify.example.test",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    offer = json.loads(out)
    assert offer["pair_url"] == f"https://verify.example.test/v/pair#{offer['pairing_code']}"
    assert offer["client_id"] == verifier["client_id"]

    code = main(["admin", "--data-dir", str(data_dir), "pair-verifier", "--client-id", "nope"])
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
