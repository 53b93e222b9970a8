"""The legacy JSON barcode form (issue 22): `{"v":1,"service_reference":...,"ciphertext":...}`.

The vendor's verifier read it (2 of its 80 test vectors have this form); no writer produces it,
but badges in the field may carry it. One parser reads it for the service, `app verify` and the
GUI; the phone page only ever sends its own address (a scan URL), so it needs nothing more.
"""

from __future__ import annotations

import json
import os

import pytest

from app.inputs.classify import is_payslip_code
from app.inputs.reading import read_input
from service.protocol.barcode_text import (
    MAX_BARCODE_CHARS,
    BarcodeTextError,
    build_payload_json_v1,
    parse_barcode,
)
from service.protocol.encoding import b64url_encode, base32_encode
from testbed.factories import sealed_record
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES

REF = "AbCdEfGhIjKlMnOpQrSt_-"
CT = os.urandom(37)
B64 = b64url_encode(CT)
B32 = base32_encode(CT)


def _json(**members: object) -> str:
    return json.dumps(members)


READ = {
    "compact, as the vendor vectors": build_payload_json_v1(REF, CT),
    "spaced": _json(v=1, service_reference=REF, ciphertext=B64),
    "members in another order": f'{{"ciphertext":"{B64}","v":1,"service_reference":"{REF}"}}',
    "whitespace around and inside": f' \n{{ "v" : 1 ,\n "service_reference":"{REF}",'
    f'\t"ciphertext" : "{B64}" }}\r\n',
    "escaped characters in the strings": f'{{"v":1,"service_reference":"\\u0041{REF[1:]}",'
    f'"ciphertext":"{B64}"}}'.replace("\\u0041", "\\u00" + format(ord(REF[0]), "02x")),
    "v 2 carries Base32": _json(v=2, service_reference=REF, ciphertext=B32),
}


@pytest.mark.parametrize("text", READ.values(), ids=READ.keys())
def test_the_parser_reads_the_json_form(text: str) -> None:
    payload = parse_barcode(text)
    assert (payload.service_reference, payload.ciphertext) == (REF, CT)
    assert payload.version == json.loads(text)["v"]


REFUSED = {
    "v as text": _json(v="1", service_reference=REF, ciphertext=B64),
    "v true": _json(v=True, service_reference=REF, ciphertext=B64),
    "v 1.0": f'{{"v":1.0,"service_reference":"{REF}","ciphertext":"{B64}"}}',
    "v 3": _json(v=3, service_reference=REF, ciphertext=B64),
    "v 0": _json(v=0, service_reference=REF, ciphertext=B64),
    "v NaN": f'{{"v":NaN,"service_reference":"{REF}","ciphertext":"{B64}"}}',
    "v with 5000 digits": f'{{"v":{"1" * 5000},"service_reference":"{REF}","ciphertext":"{B64}"}}',
    "no v": _json(service_reference=REF, ciphertext=B64),
    "no reference": _json(v=1, ciphertext=B64),
    "no ciphertext": _json(v=1, service_reference=REF),
    "an unknown member": _json(v=1, service_reference=REF, ciphertext=B64, tag="x"),
    "a duplicate member": f'{{"v":1,"service_reference":"{REF}","ciphertext":"{B64}","v":1}}',
    "a nested object": _json(v=1, service_reference={"r": REF}, ciphertext=B64),
    "a nested array": _json(v=1, service_reference=REF, ciphertext=[B64]),
    "deep nesting": '{"v":' + "[" * 6000 + "]" * 6000 + "}",
    "a number as reference": _json(v=1, service_reference=123, ciphertext=B64),
    "a short reference": _json(v=1, service_reference=REF[:21], ciphertext=B64),
    "a reference ending in a newline": _json(v=1, service_reference=REF + "\n", ciphertext=B64),
    "a bad character in the reference": _json(
        v=1, service_reference=REF[:21] + "!", ciphertext=B64
    ),
    "an empty ciphertext": _json(v=1, service_reference=REF, ciphertext=""),
    "v 1 with Base32": _json(v=1, service_reference=REF, ciphertext=B32 + "+"),
    "v 2 with base64url": _json(v=2, service_reference=REF, ciphertext=B64),
    "padded base64url": _json(v=1, service_reference=REF, ciphertext=B64 + "="),
    "standard base64": _json(v=1, service_reference=REF, ciphertext=B64.replace("-", "+") + "/"),
    "a ciphertext ending in a newline": _json(v=1, service_reference=REF, ciphertext=B64 + "\n"),
    "lower-case Base32": _json(v=2, service_reference=REF, ciphertext=B32.lower()),
    "not JSON": "{v:1}",
    "unterminated": build_payload_json_v1(REF, CT)[:-1],
    "trailing text": build_payload_json_v1(REF, CT) + "x",
    "two objects": build_payload_json_v1(REF, CT) * 2,
    "an empty object": "{}",
    "a lone brace": "{",
    "over the text limit": build_payload_json_v1(REF, CT)[:-1] + " " * MAX_BARCODE_CHARS + "}",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_the_parser_refuses_a_malformed_json_form_without_quoting_it(text: str) -> None:
    with pytest.raises(BarcodeTextError) as caught:
        parse_barcode(text)
    assert B64[:12] not in str(caught.value) and REF not in str(caught.value)


def test_the_app_takes_the_json_form_as_barcode_text() -> None:
    """`app verify '<json>'` and the GUI's typed text both decide through the shared parser."""
    text = build_payload_json_v1(REF, CT)
    assert is_payslip_code(text)
    reading = read_input(f"  {text}\n")
    assert (reading.kind, reading.payloads) == ("text", [text])
    assert not is_payslip_code(REFUSED["an unknown member"])


# --- over HTTP, on both stores ---------------------------------------------------------------


def test_the_json_form_verifies_to_the_same_result_as_v2(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"], "au.payslip.v1", "AU2")
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    token = live.verifier_token()
    ref, ct = sealed.reference, sealed.ciphertext
    results = []
    for text in (
        sealed.payload,
        build_payload_json_v1(ref, ct),
        _json(v=1, service_reference=ref, ciphertext=b64url_encode(ct)),
        _json(v=2, service_reference=ref, ciphertext=base32_encode(ct)),
    ):
        answer = live.verify(text, token)
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert result["verified"] is True
        result.pop("decrypted_at")
        results.append(result)
    assert all(result == results[0] for result in results)


def test_a_malformed_json_form_fails_at_barcode(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    token = live.verifier_token()
    ref, b64 = sealed.reference, b64url_encode(sealed.ciphertext)
    for text in (
        _json(v=1, service_reference=ref, ciphertext=b64, extra=1),
        f'{{"v":1,"service_reference":"{ref}","ciphertext":"{b64}","v":2}}',
        _json(v=True, service_reference=ref, ciphertext=b64),
        '{"v":' + "[" * 6000 + "]" * 6000 + "}",
    ):
        body = expect_error(live.verify(text, token), 400, "VALIDATION_FAILED")
        assert [e["path"] for e in body["field_errors"]] == ["barcode"]
        assert b64[:16] not in repr(body)  # errors never echo the barcode


def test_a_tampered_json_form_is_decryption_failed(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    flipped = bytes([sealed.ciphertext[0] ^ 1]) + sealed.ciphertext[1:]
    text = build_payload_json_v1(sealed.reference, flipped)
    expect_error(live.verify(text), 400, "DECRYPTION_FAILED")
