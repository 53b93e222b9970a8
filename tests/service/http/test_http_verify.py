"""verifyPayload over HTTP: every barcode form of PROTOCOL §3, the result of spec.md and
PROTOCOL §4/§6, and each way a barcode can fail."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from service.protocol.barcode_text import (
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v1_fragment,
)
from service.protocol.encoding import b64url_encode, base32_encode
from testbed.factories import AU_V1, NZ_V1, PII_FIELDS, Sealed, sealed_payslip, sealed_record
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def register(live: LiveService, sealed: Sealed, token: str | None = None) -> None:
    reply = live.post("/v1/registerNonPII", sealed.body, token or live.issuer_token())
    assert reply.status_code == 201, reply.text


def forms(sealed: Sealed, base: str) -> dict[str, str]:
    ref, ct = sealed.reference, sealed.ciphertext
    v1 = build_payload_v1(ref, ct)
    v2 = build_payload_v2(ref, ct)
    return {
        "payload v2": v2,
        "payload v1": v1,
        "scan URL v2": sealed.scan_url(base),
        "scan URL v2, other host": sealed.scan_url("https://verify.example.test"),
        "scan URL v2, ipv6 host": sealed.scan_url("http://[::1]:9"),
        "scan URL v2, trailing slash base": sealed.scan_url("https://h.example/"),
        "scan URL v2, fragment escaped": f"https://h.example/v/{ref}#%32.{base32_encode(ct)}",
        "scan URL v2, path escaped": f"HTTPS://H.EXAMPLE/v/%{ord(ref[0]):02X}{ref[1:]}#2."
        + base32_encode(ct),
        "scan URL v1 path, v1 payload": f"https://h.example/v/{quote(v1, safe='')}",
        "scan URL v1 path, v2 payload": f"{base}/v/{quote(v2, safe='')}",
        "scan URL v1 fragment, v1 payload": f"https://h.example/v#{v1}",
        "scan URL v1 fragment, v2 payload": f"http://127.0.0.1:1/v#{v2}",
        "scan URL v1 fragment, escaped": f"https://h.example/v#{quote(v2, safe='')}",
        "scan URL with #1. fragment": build_scan_url_v1_fragment(base, ref, ct),
        "scan URL with #1. fragment, other host": build_scan_url_v1_fragment(
            "https://payslips.example.org", ref, ct
        ),
        "scan URL with #1. fragment, escaped": f"https://h.example/v/{ref}#%31.{b64url_encode(ct)}",
        "whitespace around payload": f" \t\r\n{v2}\n ",
        "whitespace around scan URL": f"\n{sealed.scan_url(base)}  ",
    }


def test_every_barcode_form_verifies_to_the_same_result(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], "au.payslip.v1", "AU2")
    register(live, sealed)
    token = live.verifier_token()
    results = {}
    for name, text in forms(sealed, live.url).items():
        reply = live.verify(text, token)
        assert reply.status_code == 200, (name, reply.text)
        result = reply.json()
        assert result["verified"] is True, name
        result.pop("decrypted_at")
        results[name] = result
    first = next(iter(results.values()))
    assert all(result == first for result in results.values())


def test_the_verification_result(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], "nz.payslip.v1", "NZ2")
    register(live, sealed)
    reply = live.verify(sealed.scan_url(live.url))
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    result = reply.json()
    assert set(result) == {"verified", "service_reference", "payslip", "employee", "decrypted_at"}
    assert result["verified"] is True
    assert result["service_reference"] == sealed.reference
    payslip = result["payslip"]
    assert payslip["schema"] == "nz.payslip.v1"
    assert payslip["issued_at"] == NZ_V1["issued_at"] == "2026-11-13T09:00:00.250Z"
    assert payslip["payslip_non_pii"] == NZ_V1["payslip_non_pii"]
    assert payslip["status"] == "active"
    assert payslip["issuer"] == {"issuer_id": live.issuer["issuer_id"], "name": "Test Payroll"}
    assert TS_RE.match(payslip["registered_at"])
    assert TS_RE.match(result["decrypted_at"])
    assert payslip["registered_at"] <= result["decrypted_at"]
    assert result["employee"] == PII_FIELDS["NZ2"]


@pytest.mark.parametrize(
    "issued_at",
    ["2026-11-13T09:00:00Z", "2026-11-13T09:00:00.1Z", "2026-11-13T09:00:00.123456789Z"],
)
def test_issued_at_comes_back_as_the_exact_string(live: LiveService, issued_at: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    sealed.body["issued_at"] = issued_at
    register(live, sealed)
    assert live.verify(sealed.payload).json()["payslip"]["issued_at"] == issued_at


@pytest.mark.parametrize("pii_format", ["P1", "P2", "AU2", "NZ2"])
def test_employee_keys_per_pii_format_with_empty_fields_omitted(
    live: LiveService, pii_format: str
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], pii_format=pii_format)
    register(live, sealed)
    employee = live.verify(sealed.payload).json()["employee"]
    assert employee == {k: v for k, v in PII_FIELDS[pii_format].items() if v}
    if pii_format == "P2":
        assert "department" not in employee


@pytest.mark.parametrize(
    ("plaintext", "employee"),
    [
        (b"P9|Someone|Somewhere", {"raw": "P9|Someone|Somewhere"}),
        (b"P1|too|few|fields", {"raw": "P1|too|few|fields"}),
        (b"AU2|" + b"|" * 8, {"raw": "AU2" + "|" * 9}),
        (b"no separators at all", {"raw": "no separators at all"}),
        (b"\xffP1|a|b|c|d|e|f|g", {"raw": "\ufffdP1|a|b|c|d|e|f|g"}),
        (b"P9|\xc3(|\xed\xa0\x80", {"raw": "P9|\ufffd(|\ufffd\ufffd\ufffd"}),
        (b"NZ2||||||||", {}),
    ],
)
def test_other_plaintexts_verify_as_raw_text(
    live: LiveService, plaintext: bytes, employee: dict[str, str]
) -> None:
    sealed = sealed_payslip(live.issuer["encryption_key"], AU_V1, plaintext)
    register(live, sealed)
    result = live.verify(sealed.payload)
    assert result.status_code == 200, result.text
    assert result.json()["employee"] == employee
    assert result.json()["verified"] is True


def test_the_same_payload_gives_the_same_result(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    token = live.verifier_token()
    first, second = (live.verify(sealed.payload, token).json() for _ in range(2))
    first.pop("decrypted_at")
    second.pop("decrypted_at")
    assert first == second


@pytest.mark.parametrize(
    "make",
    [
        lambda ref, ct: "   \n\t ",
        lambda ref, ct: "hello",
        lambda ref, ct: f"3|{ref}|{base32_encode(ct)}",
        lambda ref, ct: f"2|{ref[:21]}|{base32_encode(ct)}",
        lambda ref, ct: f"2|{ref}!|{base32_encode(ct)}",
        lambda ref, ct: f"2|{ref}|",
        lambda ref, ct: f"2|{ref}|{base32_encode(ct).lower()}",
        lambda ref, ct: f"2|{ref}|{base32_encode(ct)}====",
        lambda ref, ct: f"1|{ref}|{b64url_encode(ct)}=",
        lambda ref, ct: f"1|{ref}|{base32_encode(ct)}+/",
        lambda ref, ct: f"2|{ref}|{base32_encode(ct)}|extra",
        lambda ref, ct: f"2| {ref}|{base32_encode(ct)}",
        lambda ref, ct: f"https://h.example/x/{ref}#2.{base32_encode(ct)}",
        lambda ref, ct: f"https://h.example/v/{ref}#1.{base32_encode(ct)}=",
        lambda ref, ct: f"https://h.example/v/{ref}#1.{b64url_encode(ct)}==",
        lambda ref, ct: f"https://h.example/v/{ref}#1.",
        lambda ref, ct: f"https://h.example/v/{ref}#1{b64url_encode(ct)}",
        lambda ref, ct: f"https://h.example/v/{ref}#3.{base32_encode(ct)}",
        lambda ref, ct: f"https://h.example/v/{ref}#2.{b64url_encode(ct)}",
        lambda ref, ct: f"https://h.example/v/{ref}",
        lambda ref, ct: f"https://h.example/v/{ref}#",
        lambda ref, ct: "https://h.example/v#",
        lambda ref, ct: "https://h.example/",
        lambda ref, ct: f"https://h.example/app/v/{ref}#2.{base32_encode(ct)}",
        lambda ref, ct: f"https://h.example/v#{quote(quote(f'2|{ref}|{base32_encode(ct)}'))}",
    ],
)
def test_garbage_barcodes_fail_at_barcode(live: LiveService, make: Any) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    text = make(sealed.reference, sealed.ciphertext)
    body = expect_error(live.verify(text), 400, "VALIDATION_FAILED")
    assert [e["path"] for e in body["field_errors"]] == ["barcode"]
    assert base32_encode(sealed.ciphertext) not in repr(body)  # errors never echo the barcode


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"barcode": ""}, "barcode"),
        ({"barcode": 123}, "barcode"),
        ({"barcode": None}, "barcode"),
        ({"barcode": ["2|x|y"]}, "barcode"),
        ({}, "barcode"),
        ({"barcode": "2|x|y", "extra": 1}, "extra"),
        ([], ""),
        ("2|x|y", ""),
    ],
)
def test_malformed_verify_bodies(live: LiveService, body: Any, path: str) -> None:
    reply = live.post("/v1/verifications/payload", body, live.verifier_token())
    found = expect_error(reply, 400, "VALIDATION_FAILED")
    assert [e["path"] for e in found["field_errors"]] == [path]


def test_barcode_length_limit_counts_the_text_as_sent(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    token = live.verifier_token()
    padded = sealed.payload + " " * (13000 - len(sealed.payload))
    assert len(padded) == 13000
    assert live.verify(padded, token).status_code == 200
    too_long = expect_error(live.verify(padded + " ", token), 400, "VALIDATION_FAILED")
    assert [e["path"] for e in too_long["field_errors"]] == ["barcode"]
    huge = expect_error(live.verify("2|" + "A" * 13001, token), 400, "VALIDATION_FAILED")
    assert [e["path"] for e in huge["field_errors"]] == ["barcode"]


def test_a_tampered_ciphertext_is_decryption_failed(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    ref, ct = sealed.reference, sealed.ciphertext
    token = live.verifier_token()
    for index in (0, len(ct) // 2, len(ct) - 1):
        flipped = bytearray(ct)
        flipped[index] ^= 0x01
        for text in (build_payload_v2(ref, bytes(flipped)), build_payload_v1(ref, bytes(flipped))):
            expect_error(live.verify(text, token), 400, "DECRYPTION_FAILED")
    for shorter in (ct[:-1], ct + b"\x00", b"\x00"):
        expect_error(live.verify(build_payload_v2(ref, shorter), token), 400, "DECRYPTION_FAILED")
    other = sealed_record(live.issuer["encryption_key"])
    expect_error(
        live.verify(build_payload_v2(ref, other.ciphertext), token), 400, "DECRYPTION_FAILED"
    )
    assert live.verify(sealed.payload, token).status_code == 200


def test_an_unknown_reference_is_404(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    expect_error(live.verify(sealed.payload), 404, "SERVICE_REFERENCE_NOT_FOUND")
    expect_error(live.verify(sealed.scan_url()), 404, "SERVICE_REFERENCE_NOT_FOUND")


def test_a_revoked_record_verifies_false_with_the_employee(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], pii_format="P1")
    register(live, sealed)
    revoked = live.post(f"/v1/records/{sealed.reference}/revoke", None, live.issuer_token())
    assert revoked.status_code == 200, revoked.text
    result = live.verify(sealed.scan_url(live.url)).json()
    assert result["verified"] is False
    assert result["payslip"]["status"] == "revoked"
    assert result["employee"] == PII_FIELDS["P1"]
    flipped = bytearray(sealed.ciphertext)
    flipped[0] ^= 0x80
    tampered = build_payload_v2(sealed.reference, bytes(flipped))
    expect_error(live.verify(tampered), 400, "DECRYPTION_FAILED")


def test_records_of_other_issuers_verify_with_their_names(live: LiveService) -> None:
    created = live.post("/admin/v1/issuers", {"name": "Kiwi Payroll Ltd"}, live.admin_token())
    assert created.status_code == 201, created.text
    other = created.json()
    token = live.token(other["client_id"], other["client_secret"])
    sealed = sealed_record(other["encryption_key"], "nz.payslip.v2", "NZ2")
    register(live, sealed, token)
    result = live.verify(sealed.payload).json()
    assert result["payslip"]["issuer"] == {
        "issuer_id": other["issuer_id"],
        "name": "Kiwi Payroll Ltd",
    }
