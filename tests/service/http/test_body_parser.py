"""The request-body parser: orjson reads ordinary bodies, the checked stdlib parser everything it
cannot vouch for, and a client can never tell which one answered (same value, same error)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from service.domain.errors import ServiceError
from service.http import body
from service.http.body import parse_json
from service.protocol.encoding import b64url_encode
from testbed.factories import sealed_record

KEYS = st.sampled_from(['"a"', '"b"', '"a:b"', '"a\\u003ab"', '":"', '"\\u003a"', '"\\u00e9"'])
"""Raw key texts: few, so objects repeat keys often, and two of them spell one key two ways."""
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from(list('ab:"\\é\U0001f600 ')), max_size=5)
).map(json.dumps)
SPACE = st.sampled_from(["", " ", "\n", "\t "])


def _object(members: list[tuple[str, str, str]]) -> str:
    return "{" + ",".join(f"{key}{gap}:{gap}{value}" for key, gap, value in members) + "}"


JSON_TEXTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
        | st.lists(st.tuples(KEYS, SPACE, inner), max_size=5).map(_object)
    ),
    max_leaves=25,
)


def _outcome(parse: object, raw: bytes) -> tuple[str, str]:
    """What a client would see: the value (repr, so 1 and 1.0 differ) or the error detail."""
    try:
        return ("value", repr(parse(raw)))  # type: ignore[operator]
    except ServiceError as exc:
        return ("error", f"{exc.code}: {exc.detail}")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_TEXTS)
@example('{"a":1,"a":2}')
@example('{"a:b":1,"a\\u003ab":2}')
@example('{"x":"\\u003a","k":1,"k":2}')
@example('{"n":123456789012345678901234567890}')
@example('[{"a":{"a":{}},"a":1}]')
@example("[18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809]")
@example("[9.3e18, -9.3e18, 1e300, 9.2e18]")
def test_a_body_gets_what_the_checked_parser_gives(text: str) -> None:
    raw = text.encode("utf-8")
    assert _outcome(parse_json, raw) == _outcome(body._parse_checked, raw)


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        (b'{"a": 1, "a": 2}', 'an object repeats the key "a"'),
        (b'[{"k": {"k": 1}}, {"k": 2, "k": 3}]', 'an object repeats the key "k"'),
        # A colon written as an escape cannot hide a repeated key.
        (b'{"x": "\\u003a", "k": 1, "k": 2}', 'an object repeats the key "k"'),
        (b'{"a:b": 1, "a\\u003ab": 2}', 'an object repeats the key "a:b"'),
    ],
)
def test_repeated_keys_are_refused(raw: bytes, detail: str) -> None:
    with pytest.raises(ServiceError) as caught:
        parse_json(raw)
    assert caught.value.detail == f"body: {detail}"


def test_integers_beyond_64_bits_stay_integers() -> None:
    parsed = parse_json(b'{"n": 123456789012345678901234567890, "m": -9223372036854775809}')
    assert parsed == {"n": 123456789012345678901234567890, "m": -9223372036854775809}
    assert isinstance(parsed, dict) and all(type(v) is int for v in parsed.values())


def test_limits_hold_on_the_fast_path() -> None:
    wide = json.dumps({f"k{i}": i for i in range(body.MAX_OBJECT_KEYS + 1)}).encode()
    with pytest.raises(ServiceError, match="more than 256 keys"):
        parse_json(wide)
    deep = b"[" * (body.MAX_DEPTH + 1) + b"]" * (body.MAX_DEPTH + 1)
    with pytest.raises(ServiceError, match="nests deeper than 24 levels"):
        parse_json(deep)
    assert parse_json(b"[" * body.MAX_DEPTH + b"]" * body.MAX_DEPTH) is not None


def test_a_pay_run_batch_is_read_by_the_fast_parser() -> None:
    """The reason the fast path exists: an ordinary 1000-record batch never needs the other."""
    key = b64url_encode(os.urandom(32))
    records = [sealed_record(key).body for _ in range(1000)]
    raw = json.dumps({"records": records}, indent=1).encode()
    assert body._parse_fast(raw) == {"records": records}
