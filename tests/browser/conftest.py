"""Browser fixtures: a real service on loopback and Debian's Chromium driven by Playwright.

Playwright's own browser download does not work on these machines, so the tests launch the
system's `chromium` (scripts/bootstrap installs it). Without it the tests skip locally and fail
in CI, where a skipped browser test would hide a broken phone page.

The service is started exactly as in tests/service/conftest.py, with one observer added: every
request line the server receives is recorded, so tests can show what never reached it.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import zxingcpp

from service.hosting import server as server_module
from service.hosting.server import Running, start
from service.protocol.pii_text import build_pii_text
from testbed import web
from testbed.factories import AU_V2, build_body, sealed_record
from testbed.oauth import fetch_token
from tests.service.conftest import make_instance

CHROMIUM = os.environ.get("PAYSLIP_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("PAYSLIP_SHOTS_DIR", "/tmp/shots10"))
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}

DEMO_EMPLOYEE = {
    "employee_name": "Alex Demo-Sample",
    "position": "Store Supervisor",
    "department": "Retail",
    "employer_identity": "Sample Retail Pty Ltd",
    "bsb": "062-000",
    "account_number": "12345678",
    "account_name": "A Demo-Sample",
    "address": "1 Example St, Sampleton NSW 2000",
}
"""Synthetic demo data only; every value is searched for where it must not appear."""

DEMO_PAYSLIP: dict[str, Any] = copy.deepcopy(AU_V2)
DEMO_PAYSLIP["payslip_non_pii"] = {
    "period_start": "2026-10-30",
    "period_end": "2026-11-12",
    "payment_date": "2026-11-13",
    "currency": "AUD",
    "gross": "3846.15",
    "paygw": "782.00",
    "net": "3064.15",
}


@dataclass
class Badge:
    url: str
    reference: str
    ciphertext_text: str
    """The Base32 ciphertext as it appears in the scan URL (after `#2.`)."""


@dataclass
class PhoneService:
    running: Running
    admin_id: str
    admin_secret: str
    issuer: dict[str, Any]
    verifier: dict[str, Any]
    seen: list[str] = field(default_factory=list)
    """`METHOD target` of every request the server received, in order."""

    @property
    def url(self) -> str:
        return self.running.url

    def token(self, client_id: str, secret: str) -> str:
        return fetch_token(self.url, client_id, secret, timeout=10)

    def call(self, method: str, path: str, token: str, body: Any = None) -> dict[str, Any]:
        reply = web.request(
            method,
            f"{self.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert reply.status_code < 300, reply.text
        result: dict[str, Any] = reply.json()
        return result

    def admin(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        return self.call(method, path, self.token(self.admin_id, self.admin_secret), body)

    def issue_badge(self, employee: dict[str, str] | None = None) -> Badge:
        """Register a payslip with registerAndBuildBarcode and read its QR like a phone would."""
        sealed = sealed_record(
            self.issuer["encryption_key"],
            "au.payslip.v2",
            pii_text=build_pii_text("AU2", employee or DEMO_EMPLOYEE),
        )
        body = build_body(sealed)
        body["payslip_non_pii"] = copy.deepcopy(DEMO_PAYSLIP["payslip_non_pii"])
        token = self.token(self.issuer["client_id"], self.issuer["client_secret"])
        made = self.call("POST", "/v1/registerAndBuildBarcode", token, body)
        url = decode_badge(made["barcode"]["data"])
        assert "#2." in url
        return Badge(url, made["service_reference"], url.split("#2.", 1)[1])

    def revoke(self, reference: str) -> None:
        token = self.token(self.issuer["client_id"], self.issuer["client_secret"])
        self.call("POST", f"/v1/records/{reference}/revoke", token, {"reason": "reissued"})


def decode_badge(data: str) -> str:
    png = base64.b64decode(data, validate=True)
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)
    assert len(found) == 1
    return str(found[0].text)


@pytest.fixture
def phone_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PhoneService]:
    data_dir = tmp_path / "data"
    created, issuer, verifier = make_instance(data_dir)
    seen: list[str] = []
    real_build_app = server_module.build_app

    def recording_app(*args: Any, **kwargs: Any) -> Any:
        served = real_build_app(*args, **kwargs)
        app = served.wsgi

        def observed(environ: dict[str, Any], start_response: Any) -> Any:
            target = environ.get("REQUEST_URI") or (
                environ.get("PATH_INFO", "") + "?" + environ.get("QUERY_STRING", "")
            )
            seen.append(f"{environ.get('REQUEST_METHOD')} {target}")
            return app(environ, start_response)

        return dataclasses.replace(served, wsgi=observed)

    monkeypatch.setattr(server_module, "build_app", recording_app)
    running = start(data_dir)
    service = PhoneService(
        running,
        created["admin_client_id"],
        created["admin_client_secret"],
        issuer,
        verifier,
        seen,
    )
    try:
        yield service
    finally:
        running.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: scripts/bootstrap installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()


class Phone:
    """One browser context (one phone) with its console errors and the requests it made."""

    def __init__(self, browser: Any, viewport: dict[str, int] = PHONE, **options: Any) -> None:
        """`options`: more of Playwright's context options (`timezone_id`, `bypass_csp`, ...)."""
        self.context = browser.new_context(
            viewport=viewport,
            device_scale_factor=2 if viewport is PHONE else 1,
            is_mobile=False,
            **options,
        )
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(f"{r.method} {r.url}"))

    def open(self, url: str) -> Any:
        return self.page.goto(url, wait_until="networkidle")

    def sign_in(self, client_id: str, secret: str, remember: bool = False) -> None:
        self.page.fill("#client-id", client_id)
        self.page.fill("#client-secret", secret)
        if remember:
            self.page.check("#remember")
        self.page.click("#sign-in-button")

    def verdict(self, timeout: float = 10_000) -> str:
        self.page.wait_for_selector("#verdict:not([hidden])", timeout=timeout)
        return str(self.page.inner_text("#verdict-title"))

    def text(self) -> str:
        return str(self.page.inner_text("body"))

    def html(self) -> str:
        return str(self.page.content())

    def shot(self, name: str, tmp_path: Path, full_page: bool = False) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=full_page)
        target = SHOTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=full_page)
        return target

    def close(self) -> None:
        self.context.close()


OpenPhone = Callable[..., Phone]
"""`open_phone(viewport=PHONE, **context_options)`: a new phone (browser context), closed after
the test."""


@pytest.fixture
def open_phone(browser: Any) -> Iterator[OpenPhone]:
    opened: list[Phone] = []

    def open_one(viewport: dict[str, int] = PHONE, **options: Any) -> Phone:
        phone = Phone(browser, viewport, **options)
        opened.append(phone)
        return phone

    yield open_one
    for phone in opened:
        phone.close()
