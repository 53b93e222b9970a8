"""The phone page over many verdicts in one tab (issue 27): no growing DOM, no growing listeners.

A front desk's phone stays on the page all day: each badge link opened in the same tab changes
only the fragment (no reload), so anything the page adds per verdict and never removes would
pile up. Real Chromium against a real service; event listeners are counted by wrapping
``addEventListener``/``removeEventListener`` before the page's own script runs.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import OpenPhone, PhoneService

pytestmark = pytest.mark.slow

COUNT_LISTENERS = """
(() => {
  window.__listeners = 0;
  const add = EventTarget.prototype.addEventListener;
  const remove = EventTarget.prototype.removeEventListener;
  EventTarget.prototype.addEventListener = function (...args) {
    window.__listeners += 1;
    return add.apply(this, args);
  };
  EventTarget.prototype.removeEventListener = function (...args) {
    window.__listeners -= 1;
    return remove.apply(this, args);
  };
})();
"""
SIZE = "() => [document.getElementsByTagName('*').length, window.__listeners]"


def test_many_verdicts_in_one_tab_leave_nothing_behind(
    phone_service: PhoneService, open_phone: OpenPhone
) -> None:
    badges = [phone_service.issue_badge() for _ in range(2)]
    phone_service.revoke(badges[1].reference)  # a NOT VERIFIED card too
    base = phone_service.url
    phone = open_phone()
    phone.page.add_init_script(COUNT_LISTENERS)
    phone.open(f"{base}/v")
    phone.sign_in(phone_service.verifier["client_id"], phone_service.verifier["client_secret"])
    phone.page.wait_for_selector("#ready:not([hidden])")
    sizes = []
    for index in range(30):
        badge = badges[index % 2]
        # The same document: only the fragment changes, as when a second link opens in the tab.
        payload = f"2|{badge.reference}|{badge.ciphertext_text}"  # the /v#<payload> form
        phone.page.evaluate("h => { location.hash = h; }", payload)
        expected = "VERIFIED" if index % 2 == 0 else "NOT VERIFIED"
        phone.page.wait_for_function(
            "t => document.getElementById('verdict-title').textContent === t "
            "&& !document.getElementById('verdict').hidden",
            arg=expected,
        )
        sizes.append(phone.page.evaluate(SIZE))
        phone.page.click("#done")
        phone.page.wait_for_selector("#ready:not([hidden])")
    assert phone.page.evaluate("() => performance.getEntriesByType('navigation').length") == 1
    assert sizes[-1] == sizes[1] and sizes[-2] == sizes[0], sizes  # per kind of verdict
    assert not phone.errors, phone.errors
