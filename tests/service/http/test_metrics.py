"""/metrics and the JSON access log, under gunicorn workers on PostgreSQL and Redis: figures add up
across workers, labels are route templates and verdicts, and no reference, barcode, token, name
or personal data ever appears in either."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from testbed import web
from testbed.cluster import Instance, Server, new_instance, token
from testbed.factories import MARKER_ACCOUNT, MARKER_NAME, sealed_record

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    with new_instance(tmp_path_factory.mktemp("metrics") / "data") as instance:
        yield instance


def _sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from the exposition text (0 when absent)."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()) and len(found) == len(labels):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_add_up_across_workers_and_hold_no_personal_data(instance: Instance) -> None:
    key = instance.issuer["encryption_key"]
    with Server.start(instance, 2, "--threads", "4") as server:
        itok, vtok = token(server.url, instance.issuer), token(server.url, instance.verifier)
        issuer_auth = {"Authorization": f"Bearer {itok}"}
        verifier_auth = {"Authorization": f"Bearer {vtok}"}
        active, revoked = sealed_record(key), sealed_record(key)
        batch = web.post(
            f"{server.url}/v1/registerNonPIIBatch",
            json={"records": [active.body, revoked.body]},
            headers=issuer_auth,
        )
        assert batch.status_code == 200, batch.text
        revoke = web.post(
            f"{server.url}/v1/records/{revoked.reference}/revoke",
            json={"reason": f"left: {MARKER_NAME}"},
            headers=issuer_auth,
        )
        assert revoke.status_code == 200, revoke.text
        unknown = sealed_record(key)  # never registered
        plan = [(active, 200)] * 12 + [(revoked, 200)] * 3 + [(unknown, 404)] * 2
        for sealed, status in plan:
            with web.client(timeout=10) as client:  # new connections: both workers answer
                reply = client.post(
                    f"{server.url}/v1/verifications/payload",
                    json={"barcode": sealed.payload},
                    headers={**verifier_auth, "Connection": "close"},
                )
            assert reply.status_code == status, reply.text
        text = web.get(f"{server.url}/metrics").text

        assert _sample(text, "payslip_verifications_total", outcome="verified") == 12
        assert _sample(text, "payslip_verifications_total", outcome="revoked") == 3
        assert (
            _sample(text, "payslip_verifications_total", outcome="SERVICE_REFERENCE_NOT_FOUND") == 2
        )
        verify_route = "/v1/verifications/payload"
        requests = "payslip_http_requests_total"
        assert _sample(text, requests, method="POST", route=verify_route, status="200") == 15
        assert _sample(text, requests, method="POST", route=verify_route, status="404") == 2
        revoke_route = "/v1/records/<reference>/revoke"
        assert _sample(text, requests, method="POST", route=revoke_route, status="200") == 1
        assert (
            _sample(text, "payslip_http_request_duration_seconds_count", route=verify_route) == 17
        )
        assert _sample(text, "payslip_batch_records_count") == 1
        assert _sample(text, "payslip_batch_records_sum") == 2

        logged = server.log()
    access = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    verify_lines = [a for a in access if a["route"] == verify_route]
    assert len(verify_lines) == 17
    assert {a["status"] for a in verify_lines} == {200, 404}
    assert all(re.fullmatch(r"[0-9a-f]{24}", a["request_id"]) for a in verify_lines)
    assert any(a["route"] == revoke_route for a in access)

    secrets_and_data = [
        active.reference,
        revoked.reference,
        unknown.reference,
        active.payload[:40],
        itok[:40],
        vtok[:40],
        MARKER_NAME,
        MARKER_ACCOUNT,
        instance.issuer["client_id"],
        instance.verifier["client_id"],
        "Scale Payroll",
    ]
    for value in secrets_and_data:
        assert value not in text, value
        assert value not in logged, value


def test_single_process_server_has_metrics_too(instance: Instance) -> None:
    """One worker (waitress, TinyDB or PostgreSQL) answers /metrics from its own memory."""
    import subprocess
    import sys

    from testbed.cluster import ROOT, read_listening

    log = instance.data_dir / "single.log"
    with log.open("w") as errors:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "service", "serve", "--port", "0"),
                "--data-dir",
                str(instance.data_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=instance.env,
            cwd=ROOT,
        )
    try:
        url = read_listening(proc, log)
        assert web.get(f"{url}/healthz").status_code == 200
        text = web.get(f"{url}/metrics").text
        assert (
            _sample(
                text, "payslip_http_requests_total", method="GET", route="/healthz", status="200"
            )
            == 1
        )
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
