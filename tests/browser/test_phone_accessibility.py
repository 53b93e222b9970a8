"""axe-core on every phone screen (issue 26 item 9): WCAG 2.0/2.1 A and AA plus best practices,
0 violations, in real Chromium at 390x844 against a real service.

axe-core is vendored under tests/browser/vendor/axe-core (MPL-2.0, unmodified) and injected into
the page; the page's Content-Security-Policy forbids that, so it is bypassed in these tests'
own browser contexts only (`bypass_csp`), never in the other browser tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import OpenPhone, Phone, PhoneService

pytestmark = pytest.mark.slow

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


def violations(phone: Phone) -> list[dict[str, Any]]:
    phone.page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = phone.page.evaluate(
        """async (tags) => {
            const result = await axe.run(document, {runOnly: {type: "tag", values: tags}});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary),
            }));
        }""",
        TAGS,
    )
    return found


def _signed_in(service: PhoneService, phone: Phone, url: str) -> str:
    phone.open(url)
    phone.sign_in(service.verifier["client_id"], service.verifier["client_secret"])
    return phone.verdict()


def _screen(service: PhoneService, phone: Phone, screen: str) -> None:
    badge = service.issue_badge()
    if screen == "signed out":
        phone.open(badge.url)
        phone.page.wait_for_selector("#sign-in:not([hidden])")
    elif screen == "incomplete link":
        phone.open(badge.url.split("#", 1)[0])
        phone.page.wait_for_selector("#incomplete:not([hidden])")
    elif screen == "VERIFIED":
        assert _signed_in(service, phone, badge.url) == "VERIFIED"
    elif screen == "NOT VERIFIED":
        service.revoke(badge.reference)
        assert _signed_in(service, phone, badge.url) == "NOT VERIFIED"
    elif screen == "CANNOT VERIFY":
        phone.open(badge.url)
        service.running.stop()  # the page is loaded; the service is then gone
        phone.sign_in(service.verifier["client_id"], service.verifier["client_secret"])
        assert phone.verdict() == "CANNOT VERIFY"
    else:
        raise AssertionError(screen)


@pytest.mark.parametrize(
    "screen", ["signed out", "incomplete link", "VERIFIED", "NOT VERIFIED", "CANNOT VERIFY"]
)
def test_axe_finds_no_violation(
    phone_service: PhoneService, open_phone: OpenPhone, tmp_path: Path, screen: str
) -> None:
    phone = open_phone(bypass_csp=True)
    _screen(phone_service, phone, screen)
    found = violations(phone)
    assert found == [], "\n".join(f"{v['id']} ({v['impact']}): {v['nodes']}" for v in found)
    assert phone.page.locator("main:visible").count() == 1, "one main landmark"
    if screen != "CANNOT VERIFY":  # there the browser logs the refused connection
        assert not phone.errors, phone.errors
