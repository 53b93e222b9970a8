"""The badge's link on a phone (issue 10), in a real headless Chromium against a real service.

Every test opens the URL read from a real badge PNG by zxing, as a phone camera would hand it to
the browser. Screenshots go to tmp_path and /tmp/shots10 (never the repo).
"""

from __future__ import annotations

import base64
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from testbed import web
from tests.browser.conftest import DEMO_EMPLOYEE, DESKTOP, OpenPhone, Phone, PhoneService

pytestmark = pytest.mark.slow

RECORD_APIS = ("/v1/", "/oauth/")


def employee_strings() -> list[str]:
    return [v for v in DEMO_EMPLOYEE.values() if v]


def assert_no_url_carried(service: PhoneService, phone: Phone, secret: str) -> None:
    """Neither the server nor the browser's request log saw `secret` in a URL."""
    assert service.seen, "the recorder saw no requests"
    assert not [line for line in service.seen if secret in line]
    assert not [line for line in phone.requests if secret in line]


def test_phone_verifies_a_fresh_badge(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone()

    started = time.monotonic()
    response = phone.open(badge.url)
    headers = response.headers
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "'unsafe-inline'" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"

    # Signed out: what this is and how to verify; nothing about the record was asked.
    text = phone.text()
    assert "This is a payslip verification code for 127.0.0.1" in text
    assert "Sign in as a verifier" in text
    assert "payroll provider named on the payslip" in text  # who can give access
    assert not [r for r in phone.requests if any(api in r for api in RECORD_APIS)]
    for value in employee_strings():
        assert value not in phone.html()
    # The fragment was dropped from the address bar once read.
    assert "#" not in phone.page.url
    phone.shot("phone-signed-out", tmp_path)

    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "VERIFIED"
    elapsed = time.monotonic() - started
    print(f"badge link opened -> VERIFIED in {elapsed:.2f} s")
    facts = phone.page.inner_text("#verdict-facts")
    assert "Alex Demo-Sample" in facts
    assert "$3,064.15 AUD" in facts
    assert "13 Nov 2026" in facts
    assert "Test Payroll" in facts
    assert "Accept this payslip." in phone.text()
    details = phone.page.inner_text("#details")
    assert "•••••678" in details
    assert "12345678" not in phone.html()
    assert "Store Supervisor" in details
    phone.shot("phone-verified", tmp_path)
    phone.shot("phone-verified-full", tmp_path, full_page=True)

    # The token is in this tab's sessionStorage; no secret was kept anywhere.
    storage = phone.page.evaluate(
        "() => [JSON.stringify(sessionStorage), JSON.stringify(localStorage)]"
    )
    assert phone_service.verifier["client_secret"] not in "".join(storage)
    assert "access_token" not in storage[1] and "value" in storage[0]

    verify_posts = [r for r in phone.requests if "/v1/verifications/payload" in r]
    assert verify_posts == [f"POST {phone_service.url}/v1/verifications/payload"]
    assert_no_url_carried(phone_service, phone, badge.ciphertext_text)
    assert not phone.errors, phone.errors

    # Done clears the result: none of the employee's data stays on the screen.
    phone.page.click("#done")
    phone.page.wait_for_selector("#ready:not([hidden])")
    for value in employee_strings():
        assert value not in phone.html()


def test_layout_fits_small_phones_and_desktops(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    """Mobile first: nothing wider than a 360 px screen; the verdict fills the first screen."""
    badge = phone_service.issue_badge()
    for size, name in (({"width": 360, "height": 640}, "small"), (DESKTOP, "desktop")):
        screen = open_phone(size)
        screen.open(badge.url)
        overflow = "() => document.documentElement.scrollWidth - window.innerWidth"
        assert screen.page.evaluate(overflow) <= 0
        screen.shot(f"{name}-signed-out", tmp_path)
        screen.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
        assert screen.verdict() == "VERIFIED"
        assert screen.page.evaluate(overflow) <= 0
        box = screen.page.locator(".verdict-main").bounding_box()
        assert box is not None and box["height"] >= size["height"] * 0.75
        for selector in ("#verdict-title", "#verdict-facts", "#done"):
            assert screen.page.locator(selector).is_visible()
        screen.shot(f"{name}-verified", tmp_path)
        screen.shot(f"{name}-verified-full", tmp_path, full_page=True)
        assert not screen.errors, screen.errors


def test_idle_result_clears_after_60_seconds(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone()
    phone.page.clock.install()
    phone.open(badge.url)
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "VERIFIED"
    phone.page.clock.run_for(50_000)
    assert "Alex Demo-Sample" in phone.text()
    phone.page.mouse.click(5, 5)  # a tap restarts the 60 s
    phone.page.clock.run_for(50_000)
    assert "Alex Demo-Sample" in phone.text()
    phone.page.clock.run_for(11_000)
    phone.page.wait_for_selector("#ready:not([hidden])")
    assert "Cleared" in phone.text()
    for value in employee_strings():
        assert value not in phone.html()
    phone.shot("phone-cleared", tmp_path)


def test_revoked_badge_is_not_verified_and_shows_no_employee_data(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    phone_service.revoke(badge.reference)
    phone = open_phone()
    phone.open(badge.url)
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "NOT VERIFIED"
    assert "Do not accept this payslip." in phone.text()
    assert "revoked" in phone.page.inner_text("#verdict-reason")
    html = phone.html()
    for value in employee_strings():
        assert value not in html
    assert "3,064.15" not in html
    phone.shot("phone-revoked", tmp_path)


def test_tampered_badge_is_not_verified(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    head, tail = badge.url.split("#2.", 1)
    flipped = ("B" if tail[5] != "B" else "C").join((tail[:5], tail[6:]))
    phone = open_phone()
    phone.open(f"{head}#2.{flipped}")
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "NOT VERIFIED"
    assert "altered" in phone.page.inner_text("#verdict-reason")
    for value in employee_strings():
        assert value not in phone.html()
    phone.shot("phone-tampered", tmp_path)


@pytest.mark.parametrize("outage", ["stopped", "hung"])
def test_service_gone_gives_cannot_verify_within_5_seconds(
    outage: str,
    phone_service: PhoneService,
    open_phone: OpenPhone,
    tmp_path: Path,
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone()
    phone.page.clock.install()  # page time: the page's deadline passes without real waiting
    phone.open(badge.url)
    port = int(phone_service.url.rsplit(":", 1)[1])
    phone_service.running.stop()
    hung = None
    if outage == "hung":  # accepts connections, never answers
        hung = socket.socket()
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", port))
        hung.listen(16)
    try:
        phone.page.fill("#client-id", phone_service.verifier["client_id"])
        phone.page.fill("#client-secret", phone_service.verifier["client_secret"])
        # Page time stands still from here: only run_for moves it (and fires the page's timers).
        phone.page.clock.pause_at(phone.page.evaluate("Date.now()") + 1)
        # The sign-in request is on its way (its deadline timer is set) when the click returns.
        with phone.page.expect_request(lambda request: request.method == "POST"):
            phone.page.click("#sign-in-button")
        # A refused connection fails at once; a hung one only when the page's own 4 s deadline
        # passes. Page time goes forward 5 s; the verdict must then show, without a real wait.
        phone.page.clock.run_for(5_000)
        assert phone.verdict() == "CANNOT VERIFY"
        assert "Try again" in phone.page.inner_text("#verdict")
        assert phone.page.is_visible("#retry")
        phone.shot(f"phone-cannot-verify-{outage}", tmp_path)
    finally:
        if hung is not None:
            hung.close()


def test_signed_out_visitor_learns_nothing_about_the_record(
    phone_service: PhoneService, open_phone: OpenPhone
) -> None:
    revoked = phone_service.issue_badge()
    phone_service.revoke(revoked.reference)
    urls = (phone_service.issue_badge().url, revoked.url, revoked.url.replace("#2.", "#2.AB"))
    phone_service.seen.clear()
    for url in urls:
        phone = open_phone()
        phone.open(url)  # waits until the network is idle: nothing more is asked for
        phone.page.wait_for_selector("#sign-in:not([hidden])")
        text = phone.text()
        assert "This is a payslip verification code for" in text
        assert "VERIFIED" not in text
        assert phone.page.is_hidden("#verdict")
        for value in employee_strings():
            assert value not in phone.html()
        assert not [r for r in phone.requests if any(api in r for api in RECORD_APIS)]
        assert not phone.errors, phone.errors
    # The server saw page and asset GETs only: no token request, no verification.
    served = [line.split("?")[0] for line in phone_service.seen]
    assert served, "the recorder saw no requests"
    assert all(line.startswith(("GET /v/", "GET /assets/")) for line in served), served


def test_pairing_link_signs_a_second_phone_in_until_disabled(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    offer = phone_service.admin(
        "POST", f"/admin/v1/clients/{phone_service.verifier['client_id']}/pairings"
    )
    assert offer["pair_url"].startswith(f"{phone_service.url}/v/pair#")
    secret = offer["pairing_code"].split(".", 1)[1]
    badge = phone_service.issue_badge()

    # A desk browser is signed in the ordinary way; the phone is a second, separate context.
    desk = open_phone(DESKTOP)
    desk.open(badge.url)
    desk.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert desk.verdict() == "VERIFIED"

    phone = open_phone()
    started = time.monotonic()
    phone.open(offer["pair_url"])
    assert "#" not in phone.page.url  # the pairing secret left the address bar at once
    assert "Pair this phone" in phone.text()
    phone.shot("phone-pairing", tmp_path)
    phone.page.click("#pair-button")
    phone.page.wait_for_selector("#ready:not([hidden])")
    assert "This phone is paired" in phone.text()
    assert phone.page.text_content("#ready-eyebrow") == "Signed in as Test Desk"
    assert phone.page.inner_text("#who-name") == "Test Desk"
    phone.shot("phone-paired", tmp_path)
    phone.open(badge.url)  # the next badge link: no sign-in needed
    assert phone.verdict() == "VERIFIED"
    print(f"pairing link opened -> paired -> VERIFIED in {time.monotonic() - started:.2f} s")
    assert "Alex Demo-Sample" in phone.page.inner_text("#verdict-facts")
    assert not phone.errors, phone.errors

    # The phone has its own credential, distinct from the desk's.
    clients = phone_service.admin("GET", "/admin/v1/overview")["clients"]
    phone_clients = [c for c in clients if "phone paired" in c["name"]]
    assert len(phone_clients) == 1
    assert phone_clients[0]["client_id"] != phone_service.verifier["client_id"]

    # Single use: a third browser holding the same link gets nothing.
    thief = open_phone()
    thief.open(offer["pair_url"])
    thief.page.click("#pair-button")
    thief.page.wait_for_selector("#pair-message:not([hidden])")
    assert "already been used" in thief.text()

    # Disabling the phone's credential in Admin stops that phone at once, not the desk.
    phone_service.admin("POST", f"/admin/v1/clients/{phone_clients[0]['client_id']}/disable")
    phone.open(phone_service.issue_badge().url)
    phone.page.wait_for_selector("#sign-in:not([hidden])")
    assert "switched off" in phone.page.inner_text("#sign-in-message")
    assert phone.page.is_hidden("#verdict")
    phone.shot("phone-disabled", tmp_path)
    desk.open(phone_service.issue_badge().url)
    assert desk.verdict() == "VERIFIED"

    assert_no_url_carried(phone_service, phone, secret)
    assert_no_url_carried(phone_service, phone, badge.ciphertext_text)


def test_every_scan_url_form_verifies(phone_service: PhoneService, open_phone: OpenPhone) -> None:
    """PROTOCOL §3: the payload in the fragment, the percent-encoded payload in the path (the
    older form, whose path the service keeps out of its log) and the `#1.` base64url fragment."""
    badge = phone_service.issue_badge()
    padded = badge.ciphertext_text + "=" * (-len(badge.ciphertext_text) % 8)
    ciphertext = base64.b32decode(padded)
    payload = f"2|{badge.reference}|{badge.ciphertext_text}"
    b64 = base64.urlsafe_b64encode(ciphertext).decode("ascii").rstrip("=")
    base = phone_service.url
    phone = open_phone()
    phone.open(f"{base}/v")
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    phone.page.wait_for_selector("#ready:not([hidden])")
    for url in (
        f"{base}/v#{payload}",
        f"{base}/v/{quote(payload, safe='')}",
        f"{base}/v/{badge.reference}#1.{b64}",
    ):
        phone.open(url)
        assert phone.verdict() == "VERIFIED", url
        assert "Alex Demo-Sample" in phone.page.inner_text("#verdict-facts")
        assert phone.page.url == f"{base}/v"  # the code left the address bar
    # A reload cannot re-check (the code is gone) and shows nothing of the last result.
    phone.page.reload(wait_until="networkidle")
    phone.page.wait_for_selector("#ready:not([hidden])")
    assert "Alex Demo-Sample" not in phone.html()
    assert not phone.errors, phone.errors


def test_the_secret_is_kept_only_when_remember_is_ticked(
    phone_service: PhoneService, open_phone: OpenPhone
) -> None:
    client_id = phone_service.verifier["client_id"]
    secret = phone_service.verifier["client_secret"]

    def stored(page: Any) -> str:
        return str(
            page.evaluate("() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage)")
        )

    # Not ticked: the token lives in this tab only; a new tab must sign in again.
    phone = open_phone()
    phone.open(phone_service.issue_badge().url)
    phone.sign_in(client_id, secret)
    assert phone.verdict() == "VERIFIED"
    assert secret not in stored(phone.page)
    second_tab = phone.context.new_page()
    second_tab.goto(phone_service.issue_badge().url, wait_until="networkidle")
    assert second_tab.is_visible("#sign-in")
    assert secret not in stored(second_tab)

    # Ticked: the credential is in localStorage, so a new tab verifies straight away...
    kept = open_phone()
    kept.open(phone_service.issue_badge().url)
    kept.sign_in(client_id, secret, remember=True)
    assert kept.verdict() == "VERIFIED"
    assert secret in stored(kept.page)
    tab = kept.context.new_page()
    tab.goto(phone_service.issue_badge().url, wait_until="networkidle")
    tab.wait_for_selector("#verdict:not([hidden])")
    assert tab.inner_text("#verdict-title") == "VERIFIED"
    # ...until "Sign out", which forgets it.
    tab.click("#done")
    tab.click("#sign-out")
    tab.wait_for_selector("#sign-in:not([hidden])")
    assert secret not in stored(tab)
    assert tab.evaluate("() => localStorage.length") == 0


def test_save_record_downloads_a_genuine_receipt(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    """Issue 23: after a verdict, "Save record" downloads the service's signed receipt."""
    import jwt

    badge = phone_service.issue_badge()
    phone = open_phone()
    phone.open(badge.url)
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "VERIFIED"
    with phone.page.expect_download() as download_info:
        phone.page.click("#save-record")
    download = download_info.value
    saved = tmp_path / download.suggested_filename
    download.save_as(str(saved))
    assert saved.name.startswith("verification-record-") and saved.suffix == ".jws"
    receipt = saved.read_text().strip()
    keys = web.get(f"{phone_service.url}/.well-known/jwks.json", timeout=10).json()
    header = jwt.get_unverified_header(receipt)
    assert header["typ"] == "payslip-receipt+jwt"
    claims = jwt.decode(receipt, jwt.PyJWKSet.from_dict(keys)[header["kid"]], algorithms=["EdDSA"])
    assert claims["sub"] == badge.reference and claims["verified"] is True
    assert claims["employee_name"] == DEMO_EMPLOYEE["employee_name"]
    phone.page.wait_for_selector("#save-record:text('Record saved')")
    phone.shot("phone-record-saved", tmp_path)
    assert phone.errors == []

    phone.page.click("#done")
    phone_service.revoke(badge.reference)
    phone.open(badge.url)
    assert phone.verdict() == "NOT VERIFIED"
    assert phone.page.is_visible("#save-record")  # a refusal is worth a record too
