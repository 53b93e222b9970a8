"""Verify reads the record, its issuer, its keys and the caller's client state in one store read
(one PostgreSQL round trip), and the token check leaves the client lookup to that read. What a
client sees must not change: a disabled client is refused with 401 whatever else is wrong with
its request, at once, on every host; nothing about a client or key is cached across requests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed import web
from testbed.cluster import Instance, Server, auth, registered, two_hosts, verify
from testbed.factories import sealed_record
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES


def _registered(live: LiveService) -> str:
    """The barcode text of a freshly registered record of the test's issuer."""
    sealed = sealed_record(live.issuer["encryption_key"])
    created = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert created.status_code == 201, created.text
    return sealed.payload


def _disable(live: LiveService, client_id: str) -> None:
    reply = live.post(f"/admin/v1/clients/{client_id}/disable", None, live.admin_token())
    assert reply.status_code == 200, reply.text


def test_a_disabled_verifier_is_refused_whatever_its_request(live: LiveService) -> None:
    payload = _registered(live)
    verifier_token = live.verifier_token()
    # A new connection each time: every worker of a multi-worker server gets to know the client.
    assert [live.verify(payload, verifier_token).status_code for _ in range(8)] == [200] * 8
    _disable(live, live.verifier["client_id"])
    auth = {"Authorization": f"Bearer {verifier_token}"}
    url = f"{live.url}/v1/verifications/payload"
    for _ in range(8):
        expect_error(live.verify(payload, verifier_token), 401, "UNAUTHORIZED")
    refusals = {
        "an unknown reference": live.verify("2|" + "A" * 22 + "|AAAAAAAA", verifier_token),
        "a malformed barcode": live.verify("not a barcode", verifier_token),
        "a body of the wrong shape": live.post(
            "/v1/verifications/payload", {"barcode": 7, "x": 1}, verifier_token
        ),
        "a body that is not JSON": web.post(
            url, content=b"{", headers={**auth, "Content-Type": "application/json"}, timeout=30
        ),
        "the wrong media type": web.post(
            url, content=b"barcode", headers={**auth, "Content-Type": "text/plain"}, timeout=30
        ),
    }
    for what, reply in refusals.items():
        body = expect_error(reply, 401, "UNAUTHORIZED")
        assert "disabled" in body["detail"], what


def test_a_verifier_never_seen_before_and_disabled_is_refused(live: LiveService) -> None:
    payload = _registered(live)
    verifier_token = live.verifier_token()  # a token, but no verification yet
    _disable(live, live.verifier["client_id"])
    expect_error(live.verify(payload, verifier_token), 401, "UNAUTHORIZED")


def test_an_enabled_verifier_still_gets_every_other_answer(live: LiveService) -> None:
    payload = _registered(live)
    verifier_token = live.verifier_token()
    reply = live.verify(payload, verifier_token)
    assert reply.status_code == 200, reply.text
    assert reply.json()["verified"] is True
    expect_error(
        live.verify("2|" + "A" * 22 + "|AAAAAAAA", verifier_token),
        404,
        "SERVICE_REFERENCE_NOT_FOUND",
    )
    expect_error(live.verify("not a barcode", verifier_token), 400, "VALIDATION_FAILED")
    tampered = payload[:-4] + ("AAAA" if not payload.endswith("AAAA") else "BBBB")
    expect_error(live.verify(tampered, verifier_token), 400, "DECRYPTION_FAILED")
    issuer_token = live.issuer_token()
    expect_error(live.verify(payload, issuer_token), 403, "FORBIDDEN")


# --- two hosts -------------------------------------------------------------------------------

PUBLIC = "https://payslip.example.test"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Instance, Server, Server]]:
    data_dir = tmp_path_factory.mktemp("hosts") / "data"
    with two_hosts(data_dir, PUBLIC, PAYSLIP_RATE_LIMIT_CLIENT="off") as hosts:
        yield hosts


@pytest.mark.postgres
@pytest.mark.slow
def test_a_client_disabled_through_one_host_is_refused_at_once_by_the_other(
    hosts: tuple[Instance, Server, Server],
) -> None:
    instance, a, b = hosts
    sealed = registered(a.url, instance, audience=PUBLIC)
    verifier = instance.cli("create-verifier", "--name", "Disabled desk")
    headers = auth(b.url, verifier, PUBLIC)

    def status() -> int:  # a new connection each time: any worker of b may answer
        return verify(b.url, headers, sealed.payload).status_code

    assert [status() for _ in range(8)] == [200] * 8  # every worker of b has seen the client
    disabled = web.post(
        f"{a.url}/admin/v1/clients/{verifier['client_id']}/disable",
        headers=auth(a.url, instance.admin_client, PUBLIC),
    )
    assert disabled.status_code == 200, disabled.text
    assert [status() for _ in range(8)] == [401] * 8
