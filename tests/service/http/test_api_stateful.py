"""Stateful run against a live server (issue 15's gate): register -> verify -> revoke, with real
barcodes.

The API never returns a barcode's ciphertext (the issuer seals it), so schemathesis cannot chain
register -> verify from responses alone; this hypothesis state machine plays the issuer, seals
real payslips, and then drives the documented operations in any order hypothesis chooses:
register one or a batch, verify a registered (possibly tampered) barcode, revoke, verify again.
Every response must have the status the state says and conform to the served OpenAPI document
(schemathesis checks status, headers and body against it); a 5xx fails the run.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, rule
from schemathesis.openapi import from_dict

from service.protocol.barcode_text import build_payload_v2
from testbed import web
from testbed.factories import SCHEMAS, Sealed, sealed_record
from tests.service.conftest import LiveService


def run_machine(live: LiveService) -> None:
    document = web.get(f"{live.url}/openapi.json", timeout=10).json()
    schema = from_dict(document)
    operations = {
        path: schema[path]["POST"]
        for path in (
            "/v1/registerNonPII",
            "/v1/registerNonPIIBatch",
            "/v1/verifications/payload",
            "/v1/records/{reference}/revoke",
        )
    }
    issuer_token, verifier_token = live.issuer_token(), live.verifier_token()
    key = live.issuer["encryption_key"]
    client = web.client(timeout=30)

    def call(template: str, path: str, body: object, token: str, expected: int) -> httpx.Response:
        reply = client.post(
            f"{live.url}{path}", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert reply.status_code == expected, (path, reply.status_code, reply.text[:300])
        operations[template].validate_response(reply)
        return reply

    class Payslips(RuleBasedStateMachine):
        registered = Bundle("registered")

        @initialize()
        def start(self) -> None:
            self.revoked: set[str] = set()

        @rule(target=registered, schema=st.sampled_from(sorted(SCHEMAS)))
        def register_one(self, schema: str) -> Sealed:
            sealed = sealed_record(key, schema, "NZ2" if schema.startswith("nz") else "AU2")
            path = "/v1/registerNonPII"
            call(path, path, sealed.body, issuer_token, 201)
            call(path, path, sealed.body, issuer_token, 200)  # an identical resend
            return sealed

        @rule(target=registered, size=st.integers(1, 5))
        def register_batch(self, size: int) -> Sealed:
            batch = [sealed_record(key) for _ in range(size)]
            path = "/v1/registerNonPIIBatch"
            reply = call(path, path, {"records": [s.body for s in batch]}, issuer_token, 200)
            assert [r["status"] for r in reply.json()["results"]] == ["created"] * size
            return batch[0]

        @rule(sealed=registered)
        def verify(self, sealed: Sealed) -> None:
            path = "/v1/verifications/payload"
            reply = call(path, path, {"barcode": sealed.payload}, verifier_token, 200)
            assert reply.json()["verified"] is (sealed.reference not in self.revoked)

        @rule(sealed=registered, byte=st.integers(0, 10))
        def verify_tampered(self, sealed: Sealed, byte: int) -> None:
            flipped = bytearray(sealed.ciphertext)
            flipped[byte % len(flipped)] ^= 0x01
            path = "/v1/verifications/payload"
            body = {"barcode": build_payload_v2(sealed.reference, bytes(flipped))}
            assert call(path, path, body, verifier_token, 400).json()["code"] == (
                "DECRYPTION_FAILED"
            )

        @rule(sealed=registered)
        def revoke(self, sealed: Sealed) -> None:
            path = f"/v1/records/{sealed.reference}/revoke"
            reply = call("/v1/records/{reference}/revoke", path, {}, issuer_token, 200)
            assert reply.json()["status"] == "revoked"
            self.revoked.add(sealed.reference)

    Payslips.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=12,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        Payslips.TestCase().runTest()
    finally:
        client.close()


@pytest.mark.slow
def test_register_verify_revoke_in_any_order_conforms_to_the_document(live: LiveService) -> None:
    run_machine(live)
