"""Two hosts: two `serve` instances (separate processes, different ports, 2 workers each) behind
one public URL, sharing one PostgreSQL and one Redis. What one host does, the other sees at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from testbed import web
from testbed.cluster import Instance, Server, auth, registered, two_hosts, verify
from testbed.factories import sealed_record

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PUBLIC = "https://payslip.example.test"
"""Both hosts sit behind one balancer address: tokens and scan URLs name it, not a host."""
LIMIT = 10


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Instance, Server, Server]]:
    data_dir = tmp_path_factory.mktemp("hosts") / "data"
    with two_hosts(data_dir, PUBLIC, PAYSLIP_RATE_LIMIT_CLIENT=f"{LIMIT}/minute") as (i, a, b):
        assert a.url != b.url
        yield i, a, b


def _auth(url: str, client: dict[str, str]) -> dict[str, str]:
    return auth(url, client, PUBLIC)


def test_a_record_registered_through_one_verifies_through_the_other(
    hosts: tuple[Instance, Server, Server],
) -> None:
    instance, a, b = hosts
    sealed = registered(a.url, instance, audience=PUBLIC)
    # A fresh verifier client, so the rate-limit test's windows are its own.
    verifier = instance.cli("create-verifier", "--name", "Second desk")
    reply = verify(b.url, _auth(b.url, verifier), sealed.payload)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["verified"] is True
    assert body["service_reference"] == sealed.reference


def test_a_client_rate_limit_holds_across_both_hosts(
    hosts: tuple[Instance, Server, Server],
) -> None:
    instance, a, b = hosts
    verifier = instance.cli("create-verifier", "--name", "Limited desk")
    auth = _auth(a.url, verifier)  # the same token works on both hosts
    statuses = []
    for i in range(2 * LIMIT):
        with web.client(timeout=10) as client:
            reply = client.post(
                f"{(a, b)[i % 2].url}/v1/verifications/payload",
                json={"barcode": "not a barcode"},
                headers={**auth, "Connection": "close"},
            )
        statuses.append(reply.status_code)
    # Requests under the limit are processed (and refused as malformed); the rest are 429.
    assert statuses.count(429) == LIMIT, statuses
    assert statuses[:LIMIT].count(429) == 0, statuses


def test_a_key_retired_through_one_is_refused_at_once_by_the_other(
    hosts: tuple[Instance, Server, Server],
) -> None:
    instance, a, b = hosts
    issuer = instance.cli("create-issuer", "--name", "Retiring Payroll")
    key, version = issuer["encryption_key"], issuer["key_version"]
    sealed = sealed_record(key, key_version=version)
    issuer_auth_b = _auth(b.url, issuer)
    created = web.post(f"{b.url}/v1/registerNonPII", json=sealed.body, headers=issuer_auth_b)
    assert created.status_code == 201, created.text
    verifier = instance.cli("create-verifier", "--name", "Key desk")
    verifier_auth_b = _auth(b.url, verifier)
    assert verify(b.url, verifier_auth_b, sealed.payload).status_code == 200  # b has it warm
    rotated = web.post(
        f"{a.url}/admin/v1/issuers/{issuer['issuer_id']}/keys",
        headers=_auth(a.url, instance.admin_client),
    )
    assert rotated.status_code in (200, 201), rotated.text
    retired = web.post(
        f"{a.url}/admin/v1/keys/{version}/retire", headers=_auth(a.url, instance.admin_client)
    )
    assert retired.status_code == 200, retired.text

    refused = verify(b.url, verifier_auth_b, sealed.payload)
    assert refused.status_code == 410, refused.text
    assert refused.json()["code"] == "KEY_VERSION_UNAVAILABLE"
    again = sealed_record(key, key_version=version)
    register = web.post(f"{b.url}/v1/registerNonPII", json=again.body, headers=issuer_auth_b)
    assert register.status_code == 400, register.text
    assert register.json()["field_errors"][0]["path"] == "encryption_metadata.key_version"


def test_colliding_concurrent_batches_on_both_hosts_have_exactly_one_winner_each(
    hosts: tuple[Instance, Server, Server],
) -> None:
    instance, a, b = hosts
    issuer = instance.cli("create-issuer", "--name", "Racing Payroll")
    key = issuer["encryption_key"]
    same = [sealed_record(key).body for _ in range(300)]  # the same batch sent to both hosts
    # Same IVs, different references: only one of each pair may be stored.
    iv_a = [sealed_record(key).body for _ in range(300)]
    iv_b = [
        {**body, "service_reference": sealed_record(key).body["service_reference"]} for body in iv_a
    ]
    jobs: list[tuple[Server, list[dict[str, Any]]]] = [
        (a, same),
        (b, same),
        (a, iv_a),
        (b, iv_b),
    ]
    auths = {a.url: _auth(a.url, issuer), b.url: _auth(b.url, issuer)}

    def send(job: tuple[Server, list[dict[str, Any]]]) -> list[str]:
        server, records = job
        reply = web.post(
            f"{server.url}/v1/registerNonPIIBatch",
            content=json.dumps({"records": records}),
            headers={**auths[server.url], "Content-Type": "application/json"},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        return [f"{r['status']}:{r.get('code', '')}" for r in reply.json()["results"]]

    with ThreadPoolExecutor(4) as pool:
        same_a, same_b, ivs_a, ivs_b = pool.map(send, jobs)
    for pair in zip(same_a, same_b, strict=True):
        assert sorted(pair) == ["created:", "duplicate:"], pair
    for pair in zip(ivs_a, ivs_b, strict=True):
        assert sorted(pair) == ["created:", "error:IV_REUSED"], pair
    overview = web.get(
        f"{b.url}/admin/v1/overview", headers=_auth(b.url, instance.admin_client)
    ).json()
    stored = next(i for i in overview["issuers"] if i["issuer_id"] == issuer["issuer_id"])
    assert stored["records"] == 600
