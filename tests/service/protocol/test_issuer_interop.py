"""What issuer libraries in the field send and print (issue 8; PROTOCOL §2, §3, §5).

Badges are not only made by this project: other issuer libraries for the same API write the
`#1.<base64url>` scan URL fragment, send the nz.payslip.v2 adjustment fields, and leave records
unpinned after a key rotation. Each case goes through the real HTTP API of a live server.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from app.issuer.records import IssuerKey, prepare_self_managed
from service.protocol.barcode_text import (
    BarcodeTextError,
    build_scan_url_v1_fragment,
    parse_barcode,
)
from service.protocol.encoding import b64url_encode, new_reference
from service.protocol.pii_text import build_pii_text
from testbed.factories import NZ_V2, PII_FIELDS, build_body, sealed_record
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES

NZ_FIELDS_FROM_THE_FIELD = {
    "prior_period_gross_adjustment": "-120.50",
    "prior_period_paye_adjustment": "-30.10",
    "payroll_donation_tax_credit": "1.67",
    "slcir": "40.00",
    "slbor": "25",
}


def _admin(live: LiveService, path: str) -> httpx.Response:
    return live.post(path, None, live.admin_token())


# --- 1. the `#1.` scan URL fragment ----------------------------------------------------------


def test_a_v1_fragment_scan_url_from_the_issuer_library_verifies(live: LiveService) -> None:
    """The issuer library seals and registers as usual; the badge text is then written the way
    other libraries' v1 option writes it. The verifier reads it to the same result as v2."""
    key = IssuerKey.from_info(live.issuer)
    pii = build_pii_text("AU2", PII_FIELDS["AU2"])
    prepared = prepare_self_managed(
        key,
        live.url,
        "au.payslip.v1",
        sealed_record(live.issuer["encryption_key"]).body["payslip_non_pii"],
        pii,
    )
    reply = live.post("/v1/registerNonPII", prepared.record, live.issuer_token())
    assert reply.status_code == 201, reply.text

    v1_url = build_scan_url_v1_fragment(live.url, prepared.reference, prepared.sealed.ciphertext)
    assert f"/v/{prepared.reference}#1." in v1_url
    token = live.verifier_token()
    from_v1 = live.verify(v1_url, token)
    assert from_v1.status_code == 200, from_v1.text
    from_v2 = live.verify(prepared.scan_url, token)
    assert from_v2.status_code == 200, from_v2.text
    first, second = from_v1.json(), from_v2.json()
    assert first["verified"] is True
    assert first["employee"]["employee_name"] == PII_FIELDS["AU2"]["employee_name"]
    first.pop("decrypted_at")
    second.pop("decrypted_at")
    assert first == second


def test_a_tampered_v1_fragment_is_a_decryption_failure(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    flipped = bytearray(sealed.ciphertext)
    flipped[-1] ^= 0x01
    url = build_scan_url_v1_fragment(live.url, sealed.reference, bytes(flipped))
    expect_error(live.verify(url), 400, "DECRYPTION_FAILED")


def test_the_parser_reads_the_v1_fragment_and_never_writes_it() -> None:
    reference, ciphertext = new_reference(), b"\x00\xff sealed bytes \x10"
    url = build_scan_url_v1_fragment("https://payroll.example", reference, ciphertext)
    parsed = parse_barcode(url)
    assert (parsed.version, parsed.service_reference, parsed.ciphertext) == (
        1,
        reference,
        ciphertext,
    )
    escaped = f"https://x.example/v/{reference}#%31.{b64url_encode(ciphertext)}"
    assert parse_barcode(escaped).ciphertext == ciphertext
    for bad in ("#1.", "#1", "#1x", "#0." + b64url_encode(ciphertext), "#v1." + "AAAA"):
        with pytest.raises(BarcodeTextError) as caught:
            parse_barcode(f"https://x.example/v/{reference}{bad}")
        assert reference not in str(caught.value)


# --- 2. nz.payslip.v2 fields issuer libraries send ------------------------------------------


def _nz_v2_with_adjustments() -> dict[str, Any]:
    payslip = copy.deepcopy(NZ_V2["payslip_non_pii"])
    payslip.update(NZ_FIELDS_FROM_THE_FIELD)
    return payslip


def test_nz_v2_adjustment_fields_register_on_every_operation_and_verify_as_sent(
    live: LiveService,
) -> None:
    key = live.issuer["encryption_key"]
    token = live.issuer_token()
    single = sealed_record(key, "nz.payslip.v2", "NZ2")
    single.body["payslip_non_pii"] = _nz_v2_with_adjustments()
    assert live.post("/v1/registerNonPII", single.body, token).status_code == 201

    batched = sealed_record(key, "nz.payslip.v2", "NZ2")
    batched.body["payslip_non_pii"] = _nz_v2_with_adjustments()
    results = live.post("/v1/registerNonPIIBatch", {"records": [batched.body]}, token).json()
    assert results["results"][0]["status"] == "created", results

    built = sealed_record(key, "nz.payslip.v2", "NZ2")
    built.body["payslip_non_pii"] = _nz_v2_with_adjustments()
    reply = live.post("/v1/registerAndBuildBarcode", build_body(built), token)
    assert reply.status_code == 201, reply.text

    for sealed in (single, batched):
        result = live.verify(sealed.payload).json()
        assert result["payslip"]["payslip_non_pii"] == _nz_v2_with_adjustments()


@pytest.mark.parametrize("field", sorted(NZ_FIELDS_FROM_THE_FIELD))
def test_nz_v2_adjustment_fields_are_decimal_strings(live: LiveService, field: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], "nz.payslip.v2", "NZ2")
    sealed.body["payslip_non_pii"][field] = 40.0
    body = expect_error(
        live.post("/v1/registerNonPII", sealed.body, live.issuer_token()), 400, "VALIDATION_FAILED"
    )
    assert [e["path"] for e in body["field_errors"]] == [f"payslip_non_pii.{field}"]


def test_the_openapi_document_lists_the_nz_v2_adjustment_fields(live: LiveService) -> None:
    document = live.http.get(f"{live.url}/openapi.json", timeout=10).json()
    schemas = document["components"]["schemas"]
    nz_v2 = next(
        schema
        for name, schema in schemas.items()
        if "slcir" in schema.get("properties", {}) or name.lower().startswith("nzpayslipv2")
    )
    assert set(NZ_FIELDS_FROM_THE_FIELD) <= set(nz_v2["properties"])
    assert not set(NZ_FIELDS_FROM_THE_FIELD) & set(nz_v2.get("required", []))


# --- 3. which retired keys make a failure KEY_VERSION_UNAVAILABLE ----------------------------


def test_a_key_retired_before_registration_cannot_explain_a_failed_decryption(
    live: LiveService,
) -> None:
    """PROTOCOL §2: only a retired key that was live when the record was registered makes an
    unpinned record's failure `KEY_VERSION_UNAVAILABLE`."""
    issuer = live.issuer
    old_key, old_version = issuer["encryption_key"], issuer["key_version"]
    registered_while_live = sealed_record(old_key)  # unpinned, sealed under key 1
    assert (
        live.post("/v1/registerNonPII", registered_while_live.body, live.issuer_token())
    ).status_code == 201

    rotated = _admin(live, f"/admin/v1/issuers/{issuer['issuer_id']}/keys").json()
    assert _admin(live, f"/admin/v1/keys/{old_version}/retire").status_code == 200

    # An issuer system still holding the destroyed key seals a new, unpinned record with it.
    registered_after_retirement = sealed_record(old_key)
    on_new_key = sealed_record(rotated["encryption_key"])
    for sealed in (registered_after_retirement, on_new_key):
        reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
        assert reply.status_code == 201, reply.text

    token = live.verifier_token()
    expect_error(live.verify(registered_while_live.payload, token), 410, "KEY_VERSION_UNAVAILABLE")
    expect_error(live.verify(registered_after_retirement.payload, token), 400, "DECRYPTION_FAILED")
    assert live.verify(on_new_key.payload, token).json()["verified"] is True
