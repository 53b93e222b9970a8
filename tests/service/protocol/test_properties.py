"""Property tests (issue 15's standing gate): for any input, the protocol's text formats behave.

- The barcode parser raises nothing but `BarcodeTextError`, whatever text it is given, and
  every form a writer produces reads back to the same reference and ciphertext.
- PII text round-trips for any allowed field values and refuses every forbidden character class.
- The JSON body parser answers any byte string with a value or a VALIDATION_FAILED, never
  another exception.
"""

from __future__ import annotations

import string
import unicodedata

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from service.domain.errors import ServiceError
from service.http.body import parse_json
from service.protocol.barcode_text import (
    BarcodeTextError,
    build_payload_json_v1,
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v1_fragment,
    build_scan_url_v2,
    parse_barcode,
)
from service.protocol.encoding import (
    B64URL_RE,
    EncodingError,
    b64url_decode,
    b64url_encode,
    b64url_tail_is_canonical,
    is_canonical_b64url,
)
from service.protocol.pii_text import FORMATS, PiiTextError, build_pii_text, parse_pii_text

REFERENCES = st.text(string.ascii_letters + string.digits + "_-", min_size=22, max_size=22)
CIPHERTEXTS = st.binary(min_size=1, max_size=400)
HOSTS = st.sampled_from(
    ["https://verify.example", "http://127.0.0.1:8080", "https://h.example/", "http://[::1]:9"]
)
FORBIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
ALLOWED_CHARS = st.characters(
    blacklist_categories=("Cc", "Cf", "Zl", "Zp", "Cs"), blacklist_characters="|"
)
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BARCODE_ALPHABET = st.sampled_from(
    list('12|#./:%vV{}":,[' + string.ascii_letters + string.digits + "_- ")
)


@FAST
@given(st.one_of(st.text(max_size=300), st.text(BARCODE_ALPHABET, max_size=300)))
@example("https://h/v/" + "A" * 22 + "#1.")
@example("%")
@example("https://h/v/%ZZ")
@example('{"v":1,"service_reference":"' + "A" * 22 + '","ciphertext":"QQ"')
@example('{"v":' + "[" * 3000)
def test_the_barcode_parser_raises_only_its_documented_error(text: str) -> None:
    try:
        payload = parse_barcode(text)
    except BarcodeTextError as exc:
        assert text.strip()[:40] not in str(exc) or len(text.strip()) < 8
        return
    assert len(payload.service_reference) == 22 and payload.ciphertext
    assert payload.version in (1, 2)


@FAST
@given(REFERENCES, CIPHERTEXTS, HOSTS)
def test_every_written_form_reads_back(reference: str, ciphertext: bytes, host: str) -> None:
    for text in (
        build_payload_v2(reference, ciphertext),
        build_payload_v1(reference, ciphertext),
        build_scan_url_v2(host, reference, ciphertext),
        build_scan_url_v1_fragment(host, reference, ciphertext),
        f"  {build_scan_url_v2(host, reference, ciphertext)}\n",
        build_payload_json_v1(reference, ciphertext),
    ):
        parsed = parse_barcode(text)
        assert (parsed.service_reference, parsed.ciphertext) == (reference, ciphertext)


@FAST
@given(st.sampled_from(sorted(FORMATS)), st.data())
def test_pii_text_round_trips_for_allowed_text(prefix: str, data: st.DataObject) -> None:
    names = FORMATS[prefix]
    fields = {name: data.draw(st.text(ALLOWED_CHARS, max_size=40), label=name) for name in names}
    try:
        text = build_pii_text(prefix, fields)
    except PiiTextError as exc:
        assert exc.field == "pii"  # only the 1024-byte ceiling may refuse allowed characters
        return
    parsed = parse_pii_text(text.encode("utf-8"))
    assert parsed == {name: value for name, value in fields.items() if value}


@FAST
@given(
    st.sampled_from(sorted(FORMATS)),
    st.data(),
    st.one_of(
        st.just("|"),
        st.characters(whitelist_categories=("Cc", "Cf", "Zl", "Zp")),
    ),
)
def test_pii_text_refuses_every_forbidden_character_class(
    prefix: str, data: st.DataObject, bad: str
) -> None:
    names = FORMATS[prefix]
    target = data.draw(st.sampled_from(names))
    before = data.draw(st.text(ALLOWED_CHARS, max_size=10))
    fields = {name: "x" for name in names}
    fields[target] = before + bad
    try:
        build_pii_text(prefix, fields)
    except PiiTextError as exc:
        assert exc.field == target
        assert bad not in str(exc) or bad == "|"  # the message names the rule, not the value
    else:
        raise AssertionError(f"{unicodedata.category(bad)} accepted in {target}")


def test_lone_surrogates_are_refused() -> None:
    for surrogate in ("\ud800", "\udfff"):
        try:
            build_pii_text("AU2", {"employee_name": f"A{surrogate}"})
        except PiiTextError as exc:
            assert exc.field == "employee_name"
        else:
            raise AssertionError("lone surrogate accepted")


@FAST
@given(st.binary(max_size=400))
@example(b'{"a": 1, "a": 2}')
@example(b"[" * 30 + b"]" * 30)
@example(b'{"a": NaN}')
@example(b'"\\ud800"')
def test_the_body_parser_answers_any_bytes_with_a_value_or_validation_failed(raw: bytes) -> None:
    try:
        parse_json(raw)
    except ServiceError as exc:
        assert exc.code == "VALIDATION_FAILED"
        assert [f.path for f in exc.field_errors] == [""]


@FAST
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_the_body_parser_reads_back_any_json_it_accepts(value: object) -> None:
    import json

    raw = json.dumps(value).encode("utf-8")
    try:
        parsed = parse_json(raw)
    except ServiceError as exc:
        assert exc.code == "VALIDATION_FAILED"
        return
    assert parsed == value


@FAST
@given(st.text(st.sampled_from(list(string.ascii_letters + string.digits + "_-=+/ ")), max_size=30))
@example("w3UjhdmeYGSof6tg6gZrJA")
@example("w3UjhdmeYGSof6tg6gZrJB")
@example("I5dXnk_3b4w6Z3ts")
def test_canonical_base64url_is_what_decodes_and_encodes_back(text: str) -> None:
    """Registration's quick check agrees with the strict decoder: canonical exactly when the
    text decodes and the bytes encode back to the same text."""
    try:
        canonical = b64url_encode(b64url_decode(text)) == text
    except EncodingError:
        canonical = False
    assert is_canonical_b64url(text) == canonical
    if B64URL_RE.match(text) and len(text) % 4 != 1:  # what a validated IV or tag looks like
        assert b64url_tail_is_canonical(text) == canonical
