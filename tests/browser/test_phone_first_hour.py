"""The phone page as a landlord meets it first (issue 26 items 2, 3, 5), in real Chromium at
390x844 against a real service: a link that lost its code part, the signed-out page, JavaScript
off, and the employer's ABN and times written as the desk app writes them."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.verify.presentation import format_abn, timestamp
from tests.browser.conftest import DEMO_EMPLOYEE, OpenPhone, Phone, PhoneService

pytestmark = pytest.mark.slow

INCOMPLETE = "This link is incomplete: scan the QR code on the payslip again"
RECORD_APIS = ("/v1/", "/oauth/")


def _without_code(url: str) -> str:
    return url.split("#", 1)[0]


def _panel_colour(phone: Phone, selector: str) -> tuple[int, int, int]:
    colour = phone.page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")
    r, g, b = (int(x) for x in re.findall(r"\d+", colour)[:3])
    return r, g, b


@pytest.mark.parametrize("signed_in", [False, True])
def test_a_link_without_its_code_part_is_incomplete_not_a_verdict(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path, signed_in: bool
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone()
    if signed_in:  # a phone that is signed in would otherwise check at once
        phone.open(badge.url)
        phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
        assert phone.verdict() == "VERIFIED"
        phone.page.click("#done")
    for url in (
        _without_code(badge.url),
        _without_code(badge.url) + "#",
        badge.url[: -len(badge.ciphertext_text)],
    ):
        phone.requests.clear()
        phone.open(url)
        phone.page.wait_for_selector("#incomplete:not([hidden])")
        text = phone.text()
        assert INCOMPLETE in text, url
        assert phone.page.is_hidden("#verdict")
        assert "VERIFIED" not in text and "Do not accept" not in text
        assert not [r for r in phone.requests if any(api in r for api in RECORD_APIS)]
        red, green, blue = _panel_colour(phone, "#incomplete")
        assert red >= green >= blue and red - blue > 20, "amber or neutral, never red"
        assert not (red > 150 and green < 100), "red"
        assert not phone.errors, phone.errors
    phone.shot(f"phone-incomplete-{'in' if signed_in else 'out'}", tmp_path)


def test_signed_out_page_says_not_checked_yet_and_who_can_check(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone()
    phone.open(badge.url)
    phone.page.wait_for_selector("#sign-in:not([hidden])")
    # The first heading a person reads, and nothing badge-like before it.
    first_heading = phone.page.inner_text("h1:visible >> nth=0")
    assert first_heading == "Not checked yet"
    assert phone.page.locator("img:visible, svg:visible").count() == 0
    text = phone.text()
    assert text.index("Not checked yet") < text.index("Sign in as a verifier")
    sentence = phone.page.inner_text("#intro-text")
    assert "verifier account of this service" in sentence
    assert "phone paired by its administrator" in sentence
    assert "payroll provider named on the payslip" in sentence
    assert sentence.count(". ") == 0, "one sentence"
    assert "genuine" not in text, "nothing before a check may read like a pass"
    phone.shot("phone-signed-out", tmp_path)


def test_with_javascript_off_a_plain_sentence_says_it_is_needed(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path
) -> None:
    badge = phone_service.issue_badge()
    phone = open_phone(java_script_enabled=False)
    phone.open(badge.url)
    text = phone.text()
    assert "This page needs JavaScript to check a payslip" in text
    assert "Not checked yet" in text
    assert "below" not in text.lower(), "nothing points at a form that is not there"
    phone.shot("phone-no-javascript", tmp_path)


@pytest.fixture
def sydney() -> Iterator[None]:
    """This process's local zone for app.verify.presentation, the same as the phone's."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Australia/Sydney"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_employer_abn_and_times_read_as_on_the_desk(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path, sydney: None
) -> None:
    badge = phone_service.issue_badge({**DEMO_EMPLOYEE, "employer_identity": "51824753556"})
    phone = open_phone(timezone_id="Australia/Sydney")
    phone.open(badge.url)
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    assert phone.verdict() == "VERIFIED"
    details = phone.page.inner_text("#details-list")
    assert "Employer ABN\n51 824 753 556" in details
    assert "51824753556" not in phone.text()
    registered = phone.page.inner_text("#details-list dt:text-is('Registered') + dd")
    checked = phone.page.inner_text("#details-list dt:text-is('Checked') + dd")
    record = phone_service.running.store.get_record(badge.reference)
    assert record is not None
    assert registered == timestamp(record.registered_at)
    for shown in (registered, checked):
        assert re.fullmatch(r"\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}", shown), shown
    phone.shot("phone-abn-local-time", tmp_path)


CASES_ABN = ["51824753556", "51 824 753 556", "5182475355", "ABN 51824753556", "Sample Pty Ltd"]
CASES_TIME = [
    "2026-11-13T09:00:01.000Z",
    "2026-11-13T09:00:59Z",
    "2026-06-30T14:30:00Z",
    "2026-11-13T09:00:00",
    "2026-11-13T09:00:00+10:00",
    "not a time",
    "",
]


@pytest.mark.parametrize("zone", ["Australia/Sydney", "Pacific/Auckland", "UTC"])
def test_one_table_of_abns_and_times_through_the_phone_and_the_desk(
    phone_service: PhoneService, open_phone: OpenPhone, zone: str
) -> None:
    """app/verify/presentation.py and phone_page/format.js give the same text for every case."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        desk = {
            "abn": [format_abn(v) for v in CASES_ABN],
            "time": [timestamp(v) for v in CASES_TIME],
        }
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()
    phone = open_phone(timezone_id=zone)
    phone.open(f"{phone_service.url}/v")
    shown = phone.page.evaluate(
        """async ([abns, times]) => {
            const f = await import("/assets/format.js");
            return {abn: abns.map(f.formatAbn), time: times.map(f.timestamp)};
        }""",
        [CASES_ABN, CASES_TIME],
    )
    assert shown == desk
    assert desk["abn"][0] == "51 824 753 556"
