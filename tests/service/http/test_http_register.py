"""The issuer API over HTTP: registerNonPII, registerNonPIIBatch, registerAndBuildBarcode and
record revocation, with every rule of spec.md and PROTOCOL §2, §3, §6 a client can observe."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

import cv2
import httpx
import numpy as np
import pytest
import zxingcpp

from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.encoding import b64url_decode, b64url_encode, new_reference
from testbed.factories import (
    AU_V1,
    Sealed,
    build_body,
    sealed_payslip,
    sealed_record,
    sealed_with_iv,
)
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES

REF_RE = re.compile(r"^[A-Za-z0-9_-]{22}$")
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


# --- helpers -------------------------------------------------------------------------------


def paths(reply: httpx.Response) -> list[str]:
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    return [e["path"] for e in body["field_errors"]]


def other_issuer(live: LiveService, name: str = "Other Payroll") -> tuple[dict[str, Any], str]:
    reply = live.post("/admin/v1/issuers", {"name": name}, live.admin_token())
    assert reply.status_code == 201, reply.text
    issuer = reply.json()
    return issuer, live.token(issuer["client_id"], issuer["client_secret"])


def with_iv(key_b64: str, iv: bytes, text: bytes = b"P1|A|B|C|D|E|F|G") -> dict[str, Any]:
    """A registerNonPII body whose ciphertext was made with a chosen IV (for IV rule tests)."""
    return sealed_with_iv(key_b64, iv, text).body


def decode_badge(data: str) -> str:
    png = base64.b64decode(data, validate=True)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    assert image is not None
    assert 720 in image.shape[:2]
    found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)
    assert len(found) == 1
    return str(found[0].text)


def batch(live: LiveService, records: Any, token: str | None = None) -> httpx.Response:
    return live.post("/v1/registerNonPIIBatch", {"records": records}, token or live.issuer_token())


def item(sealed: Sealed, external_id: str | None = None) -> dict[str, Any]:
    record = copy.deepcopy(sealed.body)
    if external_id is not None:
        record["external_id"] = external_id
    return record


# --- registerNonPII ------------------------------------------------------------------------


def test_register_201_then_identical_resend_200(live: LiveService) -> None:
    token = live.issuer_token()
    sealed = sealed_record(live.issuer["encryption_key"])
    first = live.post("/v1/registerNonPII", sealed.body, token)
    assert first.status_code == 201, first.text
    assert first.json() == {"service_reference": sealed.reference}
    assert first.headers["x-request-id"]
    again = live.post("/v1/registerNonPII", sealed.body, token)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    # Key order and the spelling of JSON numbers are not content.
    reordered = dict(reversed(list(copy.deepcopy(sealed.body).items())))
    reordered["payslip_non_pii"]["gross_cents"] = float(reordered["payslip_non_pii"]["gross_cents"])
    assert live.post("/v1/registerNonPII", reordered, token).status_code == 200
    assert live.records_by_issuer() == {live.issuer["issuer_id"]: 1}
    assert live.verify(sealed.payload).json()["verified"] is True


def test_register_without_a_reference_mints_one(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    body = {k: v for k, v in sealed.body.items() if k != "service_reference"}
    reply = live.post("/v1/registerNonPII", body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    reference = reply.json()["service_reference"]
    assert REF_RE.match(reference)
    assert reference != sealed.reference
    verified = live.verify(build_payload_v2(reference, sealed.ciphertext))
    assert verified.status_code == 200, verified.text


@pytest.mark.parametrize(
    "schema", ["au.payslip.v1", "nz.payslip.v1", "au.payslip.v2", "nz.payslip.v2"]
)
def test_every_schema_registers_and_verifies_as_sent(live: LiveService, schema: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], schema)
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    result = live.verify(sealed.payload).json()
    assert result["payslip"]["schema"] == schema
    assert result["payslip"]["payslip_non_pii"] == sealed.body["payslip_non_pii"]
    assert result["payslip"]["issued_at"] == sealed.body["issued_at"]


def test_same_reference_other_content_is_409_and_the_first_record_is_kept(
    live: LiveService,
) -> None:
    token = live.issuer_token()
    key = live.issuer["encryption_key"]
    first = sealed_record(key)
    assert live.post("/v1/registerNonPII", first.body, token).status_code == 201
    changed = copy.deepcopy(first.body)
    changed["payslip_non_pii"]["net_cents"] += 1
    reencrypted = sealed_record(key, reference=first.reference)  # fresh IV and tag
    pinned = copy.deepcopy(first.body)
    pinned["encryption_metadata"]["key_version"] = live.issuer["key_version"]
    reissued = copy.deepcopy(first.body)
    reissued["issued_at"] = "2026-11-13T09:00:00.000Z"
    for body in (changed, reencrypted.body, pinned, reissued):
        body_ = expect_error(live.post("/v1/registerNonPII", body, token), 409, "CONFLICT")
        assert "field_errors" not in body_
    result = live.verify(first.payload).json()
    assert result["payslip"]["payslip_non_pii"] == first.body["payslip_non_pii"]
    assert result["payslip"]["issued_at"] == first.body["issued_at"]
    expect_error(live.verify(reencrypted.payload), 400, "DECRYPTION_FAILED")


def test_iv_reuse_is_409_per_issuer_only(live: LiveService) -> None:
    token = live.issuer_token()
    key = live.issuer["encryption_key"]
    first = sealed_record(key)
    assert live.post("/v1/registerNonPII", first.body, token).status_code == 201
    reuse = copy.deepcopy(first.body)
    reuse["service_reference"] = new_reference()
    reuse["payslip_non_pii"]["gross_cents"] = 1
    expect_error(live.post("/v1/registerNonPII", reuse, token), 409, "IV_REUSED")
    minted = {k: v for k, v in reuse.items() if k != "service_reference"}
    expect_error(live.post("/v1/registerNonPII", minted, token), 409, "IV_REUSED")
    assert live.store.get_record(reuse["service_reference"]) is None
    # The refused reference stays free.
    fresh = sealed_record(key, reference=reuse["service_reference"])
    assert live.post("/v1/registerNonPII", fresh.body, token).status_code == 201
    # Another issuer may use the same IV.
    other, other_token = other_issuer(live)
    iv = b64url_decode(first.body["encryption_metadata"]["iv"])
    theirs = with_iv(other["encryption_key"], iv)
    assert live.post("/v1/registerNonPII", theirs, other_token).status_code == 201


def test_a_foreign_issuers_reference_is_a_conflict_that_reveals_nothing(
    live: LiveService,
) -> None:
    mine = sealed_record(live.issuer["encryption_key"])
    token = live.issuer_token()
    assert live.post("/v1/registerNonPII", mine.body, token).status_code == 201
    own_conflict = copy.deepcopy(mine.body)
    own_conflict["payslip_non_pii"]["gross_cents"] += 5
    own = expect_error(live.post("/v1/registerNonPII", own_conflict, token), 409, "CONFLICT")
    other, other_token = other_issuer(live, "Nosy Payroll")
    identical = expect_error(
        live.post("/v1/registerNonPII", mine.body, other_token), 409, "CONFLICT"
    )
    theirs = sealed_record(other["encryption_key"], reference=mine.reference)
    different = expect_error(
        live.post("/v1/registerNonPII", theirs.body, other_token), 409, "CONFLICT"
    )
    assert identical == different == own
    text = str(identical)
    for secret in (live.issuer["issuer_id"], "Test Payroll", mine.body["issued_at"]):
        assert secret not in text
    result = live.verify(mine.payload).json()
    assert result["payslip"]["issuer"]["issuer_id"] == live.issuer["issuer_id"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"bogus": 1}, ["bogus"]),
        (
            {"payslip_non_pii.ytd": {"taxable_cents": 1, "bogus_cents": 2}},
            ["payslip_non_pii.ytd.bogus_cents"],
        ),
        ({"encryption_metadata.extra": "x"}, ["encryption_metadata.extra"]),
        ({"payslip_non_pii.period_start": "2026-02-30"}, ["payslip_non_pii.period_start"]),
        ({"payslip_non_pii.payment_date": "2025-02-29"}, ["payslip_non_pii.payment_date"]),
        ({"payslip_non_pii.gross_cents": 100.5}, ["payslip_non_pii.gross_cents"]),
        ({"payslip_non_pii.gross_cents": "100"}, ["payslip_non_pii.gross_cents"]),
        ({"payslip_non_pii.gross_cents": True}, ["payslip_non_pii.gross_cents"]),
        ({"payslip_non_pii.gross_cents": 9007199254740992}, ["payslip_non_pii.gross_cents"]),
        (
            {"payslip_non_pii.earnings": [{"type": "ordinary", "units": 1}]},
            ["payslip_non_pii.earnings.0.amount_cents"],
        ),
        (
            {"payslip_non_pii.earnings": [{"type": "ordinary", "amount_cents": 1, "x": 1}]},
            ["payslip_non_pii.earnings.0.x"],
        ),
        ({"issued_at": "2026-11-13T09:00:00+00:00"}, ["issued_at"]),
        ({"schema": "uk.payslip.v1"}, ["schema"]),
        ({"encryption_metadata.iv": "short"}, ["encryption_metadata.iv"]),
        ({"encryption_metadata.tag": "A" * 21 + "="}, ["encryption_metadata.tag"]),
        ({"encryption_metadata.key_version": "not-a-version"}, ["encryption_metadata.key_version"]),
        ({"service_reference": "too-short"}, ["service_reference"]),
        ({"encrypted_pii": "AAAA"}, ["encrypted_pii"]),
        ({"external_id": "x"}, ["external_id"]),
        ({"payslip_non_pii.currency": None}, ["payslip_non_pii.currency"]),
        ({"payslip_non_pii.period_end": "2026-10-01"}, ["payslip_non_pii.period_end"]),
    ],
)
def test_strict_validation_names_the_field(
    live: LiveService, change: dict[str, Any], expected: list[str]
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    body = copy.deepcopy(sealed.body)
    for dotted, value in change.items():
        *parents, last = dotted.split(".")
        target = body
        for part in parents:
            target = target[part]
        target[last] = value
    reply = live.post("/v1/registerNonPII", body, live.issuer_token())
    assert paths(reply) == expected
    assert reply.json()["detail"].startswith(expected[0])
    assert live.store.get_record(sealed.reference) is None
    # Nothing was reserved: the valid record with the same reference and IV registers.
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201


@pytest.mark.parametrize("body", [[], "text", 12, None, [{"schema": "au.payslip.v1"}]])
def test_a_body_that_is_not_an_object_fails_at_the_root(live: LiveService, body: Any) -> None:
    reply = live.post(
        "/v1/registerNonPII",
        None,
        live.issuer_token(),
        content=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert paths(reply) == [""]


def test_missing_fields_are_each_named(live: LiveService) -> None:
    reply = live.post("/v1/registerNonPII", {}, live.issuer_token())
    assert sorted(paths(reply)) == sorted(
        ["schema", "issued_at", "payslip_non_pii", "encryption_metadata"]
    )


def test_a_zero_fraction_float_is_stored_as_the_integer(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    body = copy.deepcopy(sealed.body)
    body["payslip_non_pii"]["gross_cents"] = 384615.0
    assert live.post("/v1/registerNonPII", body, live.issuer_token()).status_code == 201
    stored = live.verify(sealed.payload).json()["payslip"]["payslip_non_pii"]["gross_cents"]
    assert stored == 384615 and isinstance(stored, int)


# --- registerNonPIIBatch -------------------------------------------------------------------


def test_batch_results_in_order_with_external_ids_echoed_and_never_stored(
    live: LiveService,
) -> None:
    key = live.issuer["encryption_key"]
    sealed = [sealed_record(key, schema) for schema in ("au.payslip.v1", "nz.payslip.v2")]
    sealed += [sealed_record(key) for _ in range(3)]
    markers = [f"EXTID-{i}-q7Zr" for i in range(len(sealed))]
    records = [item(s, m) for s, m in zip(sealed, markers, strict=True)]
    records[2].pop("external_id")
    reply = batch(live, records)
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["service_reference"] for r in results] == [s.reference for s in sealed]
    assert [r["status"] for r in results] == ["created"] * len(sealed)
    assert [r.get("external_id") for r in results] == [
        m if i != 2 else None for i, m in enumerate(markers)
    ]
    assert all(set(r) <= {"status", "service_reference", "external_id"} for r in results)
    again = batch(live, records).json()["results"]
    assert [r["status"] for r in again] == ["duplicate"] * len(sealed)
    assert [r.get("external_id") for r in again] == [r.get("external_id") for r in results]
    for s in sealed:
        assert live.verify(s.payload).json()["verified"] is True
    assert live.places_holding([sealed[0].reference.encode()])  # the search sees stored records
    for marker in markers:
        assert live.places_holding([marker.encode()]) == []


def test_batch_record_errors_name_the_field_and_keep_the_others(live: LiveService) -> None:
    key = live.issuer["encryption_key"]
    good = [sealed_record(key) for _ in range(3)]
    bad_amount = sealed_record(key)
    bad_amount.body["payslip_non_pii"]["gross_cents"] = 1.5
    bad_nested = sealed_record(key)
    bad_nested.body["payslip_non_pii"]["ytd"] = {"surprise": 1}
    no_reference = sealed_record(key)
    no_reference_item = item(no_reference, "no-ref")
    del no_reference_item["service_reference"]
    bad_external = item(sealed_record(key), "\u00e9t\u00e9")
    records = [
        item(good[0], "g0"),
        item(bad_amount, "bad-amount"),
        item(good[1], "g1"),
        item(bad_nested, "bad-nested"),
        no_reference_item,
        bad_external,
        item(good[2], "g2"),
    ]
    reply = batch(live, records)
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["status"] for r in results] == [
        "created",
        "error",
        "created",
        "error",
        "error",
        "error",
        "created",
    ]
    expected_paths = {
        1: "payslip_non_pii.gross_cents",
        3: "payslip_non_pii.ytd.surprise",
        4: "service_reference",
        5: "external_id",
    }
    for index, path in expected_paths.items():
        result = results[index]
        assert result["code"] == "VALIDATION_FAILED", result
        assert result["detail"].startswith(path), result
    assert results[1]["service_reference"] == bad_amount.reference
    assert results[1]["external_id"] == "bad-amount"
    assert results[4]["external_id"] == "no-ref" and "service_reference" not in results[4]
    for rejected in (bad_amount, bad_nested):
        assert live.store.get_record(rejected.reference) is None
        # The same reference and IV are free: a corrected record registers.
        corrected = copy.deepcopy(rejected.body)
        corrected["payslip_non_pii"] = copy.deepcopy(AU_V1["payslip_non_pii"])
        assert live.post("/v1/registerNonPII", corrected, live.issuer_token()).status_code == 201


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "records"),
        ({"records": []}, "records"),
        ({"records": {}}, "records"),
        ({"records": "x"}, "records"),
        ({"records": None}, "records"),
        ({"records": [{}, 5]}, "records.1"),
        ({"records": [[]]}, "records.0"),
        ({"records": [{}], "extra": True}, "extra"),
        ([], ""),
    ],
)
def test_batch_envelope_errors_fail_the_whole_request(
    live: LiveService, body: Any, path: str
) -> None:
    reply = live.post("/v1/registerNonPIIBatch", body, live.issuer_token())
    assert path in paths(reply)


def test_batch_over_1000_records_fails_and_stores_nothing(live: LiveService) -> None:
    key = live.issuer["encryption_key"]
    records = [item(sealed_record(key)) for _ in range(1001)]
    reply = batch(live, records)
    assert paths(reply) == ["records"]
    assert live.records_by_issuer() == {}
    exactly = batch(live, records[:1000])
    assert exactly.status_code == 200, exactly.text
    assert {r["status"] for r in exactly.json()["results"]} == {"created"}


def test_in_batch_duplicate_conflict_and_iv_rules(live: LiveService) -> None:
    key = live.issuer["encryption_key"]
    a, b, c = (sealed_record(key) for _ in range(3))
    a_conflict = copy.deepcopy(a.body)
    a_conflict["payslip_non_pii"]["net_cents"] = 1
    c_iv_reuse = copy.deepcopy(c.body)
    c_iv_reuse["service_reference"] = new_reference()
    records = [
        item(a, "a"),
        item(a, "a-again"),
        {**a_conflict, "external_id": "a-conflict"},
        item(b, "b"),
        item(c, "c"),
        {**c_iv_reuse, "external_id": "c-iv"},
    ]
    results = batch(live, records).json()["results"]
    assert [(r["status"], r.get("code")) for r in results] == [
        ("created", None),
        ("duplicate", None),
        ("error", "CONFLICT"),
        ("created", None),
        ("created", None),
        ("error", "IV_REUSED"),
    ]
    assert [r["external_id"] for r in results] == [
        "a",
        "a-again",
        "a-conflict",
        "b",
        "c",
        "c-iv",
    ]
    # The IV_REUSED record's reference stays free, and the conflicting record reserved nothing.
    free = sealed_record(key, reference=c_iv_reuse["service_reference"])
    assert live.post("/v1/registerNonPII", free.body, live.issuer_token()).status_code == 201


def test_a_rejected_record_reserves_nothing_within_its_batch(live: LiveService) -> None:
    key = live.issuer["encryption_key"]
    a = sealed_record(key)
    invalid_first = copy.deepcopy(a.body)
    invalid_first["payslip_non_pii"]["gross_cents"] = "lots"
    results = batch(live, [invalid_first, item(a)]).json()["results"]
    assert [r["status"] for r in results] == ["error", "created"]


def test_batch_against_stored_records_and_foreign_references(live: LiveService) -> None:
    key = live.issuer["encryption_key"]
    stored = sealed_record(key)
    assert live.post("/v1/registerNonPII", stored.body, live.issuer_token()).status_code == 201
    other, other_token = other_issuer(live)
    conflicting = copy.deepcopy(stored.body)
    conflicting["payslip_non_pii"]["gross_cents"] = 2
    reuse_iv = copy.deepcopy(stored.body)
    reuse_iv["service_reference"] = new_reference()
    mine = batch(live, [item(stored), conflicting, reuse_iv]).json()["results"]
    assert [(r["status"], r.get("code")) for r in mine] == [
        ("duplicate", None),
        ("error", "CONFLICT"),
        ("error", "IV_REUSED"),
    ]
    theirs = batch(live, [item(stored)], other_token).json()["results"]
    assert theirs == [
        {
            "status": "error",
            "service_reference": stored.reference,
            "code": "CONFLICT",
            "detail": mine[1]["detail"],
        }
    ]
    assert other["issuer_id"] not in str(theirs)


# --- registerAndBuildBarcode ---------------------------------------------------------------


def test_build_returns_a_png_whose_qr_is_the_scan_url(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], "nz.payslip.v1", "NZ2")
    reply = live.post("/v1/registerAndBuildBarcode", build_body(sealed), live.issuer_token())
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert set(body) == {"service_reference", "barcode", "scan_url", "payload"}
    reference = body["service_reference"]
    assert REF_RE.match(reference)
    assert body["barcode"]["format"] == "png"
    text = decode_badge(body["barcode"]["data"])
    assert text == build_scan_url_v2(live.url, reference, sealed.ciphertext)
    # The badge's text beside it (issue 36): the QR's scan URL and the PDF metadata's payload.
    assert body["scan_url"] == text
    assert body["payload"] == build_payload_v2(reference, sealed.ciphertext)
    assert live.verify(body["payload"]).json()["verified"] is True
    assert re.fullmatch(re.escape(live.url) + r"/v/[A-Za-z0-9_-]{22}#2\.[A-Z2-7]+", text)
    result = live.verify(text)
    assert result.status_code == 200, result.text
    verified = result.json()
    assert verified["verified"] is True
    assert verified["service_reference"] == reference
    assert verified["employee"]["ird_number"] == "123-456-789"
    # The service chose and pinned the authenticating key.
    record = live.store.get_record(reference)
    assert record is not None and record.key_version == live.issuer["key_version"]


def test_build_with_a_ciphertext_that_does_not_authenticate_stores_nothing(
    live: LiveService,
) -> None:
    token = live.issuer_token()
    sealed = sealed_record(live.issuer["encryption_key"])
    flipped = bytearray(sealed.ciphertext)
    flipped[0] ^= 1
    tampered = {**build_body(sealed), "encrypted_pii": b64url_encode(bytes(flipped))}
    other, _ = other_issuer(live)
    foreign = build_body(sealed_record(other["encryption_key"]))
    wrong_tag = build_body(sealed)
    wrong_tag["encryption_metadata"] = {
        **wrong_tag["encryption_metadata"],
        "tag": b64url_encode(bytes(16)),
    }
    for body in (tampered, foreign, wrong_tag):
        reply = live.post("/v1/registerAndBuildBarcode", body, token)
        assert paths(reply) == ["encrypted_pii"]
    assert live.records_by_issuer() == {}
    # The IV was not reserved.
    assert live.post("/v1/registerAndBuildBarcode", build_body(sealed), token).status_code == 201


def test_build_refuses_a_reference_and_bad_ciphertexts(live: LiveService) -> None:
    token = live.issuer_token()
    sealed = sealed_record(live.issuer["encryption_key"])
    with_reference = {**build_body(sealed), "service_reference": sealed.reference}
    assert paths(live.post("/v1/registerAndBuildBarcode", with_reference, token)) == [
        "service_reference"
    ]
    for bad in ("A" * 2887, "", "abc=", "a+b/", "A"):
        body = {**build_body(sealed), "encrypted_pii": bad}
        assert paths(live.post("/v1/registerAndBuildBarcode", body, token)) == ["encrypted_pii"]
    missing = {k: v for k, v in build_body(sealed).items() if k != "encrypted_pii"}
    assert paths(live.post("/v1/registerAndBuildBarcode", missing, token)) == ["encrypted_pii"]
    assert live.records_by_issuer() == {}


def test_build_a_second_time_is_iv_reused(live: LiveService) -> None:
    token = live.issuer_token()
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerAndBuildBarcode", build_body(sealed), token).status_code == 201
    again = live.post("/v1/registerAndBuildBarcode", build_body(sealed), token)
    expect_error(again, 409, "IV_REUSED")
    expect_error(live.post("/v1/registerNonPII", sealed.body, token), 409, "IV_REUSED")
    assert live.records_by_issuer() == {live.issuer["issuer_id"]: 1}


def test_build_accepts_the_largest_ciphertext(live: LiveService) -> None:
    sealed = sealed_payslip(live.issuer["encryption_key"], AU_V1, "X" * 2164)
    body = build_body(sealed)
    assert len(body["encrypted_pii"]) == 2886
    reply = live.post("/v1/registerAndBuildBarcode", body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    reference = reply.json()["service_reference"]
    text = decode_badge(reply.json()["barcode"]["data"])
    assert text == build_scan_url_v2(live.url, reference, sealed.ciphertext)
    assert live.verify(text).json()["employee"] == {"raw": "X" * 2164}


# --- revocation ----------------------------------------------------------------------------


def test_revocation_of_an_own_record(live: LiveService) -> None:
    token = live.issuer_token()
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, token).status_code == 201
    path = f"/v1/records/{sealed.reference}/revoke"
    first = live.post(path, {"reason": "issued in error"}, token)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["service_reference"] == sealed.reference
    assert body["status"] == "revoked"
    assert TS_RE.match(body["revoked_at"])
    again = live.http.post(
        f"{live.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert again.status_code == 200, again.text
    assert again.json() == body
    result = live.verify(sealed.payload)
    assert result.status_code == 200
    verified = result.json()
    assert verified["verified"] is False
    assert verified["payslip"]["status"] == "revoked"
    assert verified["employee"]["employee_name"]
    # A resend of the registration is still a duplicate, and does not revive the record.
    assert live.post("/v1/registerNonPII", sealed.body, token).status_code == 200
    assert live.verify(sealed.payload).json()["verified"] is False


def test_revoking_another_issuers_or_an_unknown_record_is_404(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    _, other_token = other_issuer(live)
    for reference, token in (
        (sealed.reference, other_token),
        (new_reference(), live.issuer_token()),
        ("short", live.issuer_token()),
        ("%2E%2E", live.issuer_token()),
    ):
        reply = live.post(f"/v1/records/{reference}/revoke", None, token)
        expect_error(reply, 404, "SERVICE_REFERENCE_NOT_FOUND")
    assert live.verify(sealed.payload).json()["verified"] is True


@pytest.mark.parametrize(
    ("body", "path"), [({"why": "x"}, "why"), ({"reason": 5}, "reason"), ([], "")]
)
def test_revocation_body_is_validated(live: LiveService, body: Any, path: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    reply = live.post(f"/v1/records/{sealed.reference}/revoke", body, live.issuer_token())
    assert paths(reply) == [path]
    assert live.verify(sealed.payload).json()["verified"] is True


def test_nul_in_free_text_is_a_field_error_on_every_store(live: LiveService) -> None:
    """U+0000 is valid JSON but no PostgreSQL text holds it: refused as the field's error on
    both stores alike (it was a 503 + Retry-After on PostgreSQL, which a batch client retries
    for ever), in a single registration, a batch record and a revocation reason."""
    key = live.issuer["encryption_key"]
    token = live.issuer_token()
    sealed = sealed_record(key, schema="au.payslip.v2")
    sealed.body["payslip_non_pii"]["award"] = "Clerks\u0000Award"
    body = expect_error(
        live.post("/v1/registerNonPII", sealed.body, token), 400, "VALIDATION_FAILED"
    )
    assert [error["path"] for error in body["field_errors"]] == ["payslip_non_pii.award"]
    good = sealed_record(key)
    reply = batch(live, [item(sealed, "nul"), item(good, "ok")])
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["status"] for r in results] == ["error", "created"]
    assert results[0]["code"] == "VALIDATION_FAILED"
    assert results[0]["detail"].startswith("payslip_non_pii.award")
    revoke = f"/v1/records/{good.reference}/revoke"
    body = expect_error(
        live.post(revoke, {"reason": "left\u0000"}, token), 400, "VALIDATION_FAILED"
    )
    assert [error["path"] for error in body["field_errors"]] == ["reason"]
    assert live.post(revoke, {"reason": "left"}, token).status_code == 200
