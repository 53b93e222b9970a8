"""Rotating the token signing key (issue 15: token attacks, plus signing-key rotation).

A planned rotation signs nobody out: tokens signed with the previous key keep working until they
expire, and the JWKS publishes both keys meanwhile. A rotation with `--drop-previous` (the key
may have leaked) refuses the old key's tokens at once. The CLI rotates on the data directory of a
running server, which picks the change up without a restart.
"""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.domain import signing_keys
from testbed.factories import sealed_record
from tests.service.cli.test_cli import cli
from tests.service.conftest import LiveService
from tests.service.http.http_helpers import expect_error

pytestmark = pytest.mark.own_server("the signing keys are the instance's: each test rotates them")


@pytest.fixture(autouse=True)
def _refresh_on_every_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server (in this process) looks at the store whenever it uses the keys, so the
    request after a rotation already sees it: nothing waits out REFRESH_SECONDS."""
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0)


def _kid(token: str) -> str:
    return str(jwt.get_unverified_header(token)["kid"])


def _published(live: LiveService) -> set[str]:
    """The kids published for tokens (receipt keys, `receipt-...`, are published beside them)."""
    return {k["kid"] for k in _keys(live) if not k["kid"].startswith("receipt-")}


def _keys(live: LiveService) -> list[dict[str, str]]:
    return list(live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10).json()["keys"])


def _rotate(live: LiveService, *extra: str) -> dict[str, str]:
    done = cli("admin", "--data-dir", str(live.data_dir), "rotate-signing-key", *extra)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _verify_ok(live: LiveService, token: str) -> int:
    sealed = sealed_record(live.issuer["encryption_key"])
    live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    return live.verify(sealed.payload, token).status_code


def test_a_planned_rotation_keeps_old_tokens_until_they_expire(live: LiveService) -> None:
    before = live.verifier_token()
    old_kid = _kid(before)
    assert _published(live) == {old_kid}

    rotated = _rotate(live)
    assert rotated["previous_kid"] == old_kid and rotated["kid"] != old_kid
    assert rotated["previous_valid_until"]

    after = live.verifier_token()
    assert _kid(after) == rotated["kid"]
    assert _published(live) == {old_kid, rotated["kid"]}
    assert _verify_ok(live, before) == 200  # nobody is signed out by a planned rotation
    assert _verify_ok(live, after) == 200


def test_dropping_the_previous_key_refuses_its_tokens_at_once(live: LiveService) -> None:
    before = live.verifier_token()
    assert _verify_ok(live, before) == 200  # also in the server's verified-token cache now
    rotated = _rotate(live, "--drop-previous")
    assert rotated["previous_valid_until"] is None
    assert _published(live) == {rotated["kid"]}
    assert rotated["previous_kid"] not in {k["kid"] for k in _keys(live)}  # vouches for nothing
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    expect_error(live.verify(sealed.payload, before), 401, "UNAUTHORIZED")
    assert live.verify(sealed.payload, live.verifier_token()).status_code == 200


def test_a_second_rotation_retires_the_first_key(live: LiveService) -> None:
    first = live.verifier_token()
    _rotate(live)
    second = live.verifier_token()
    latest = _rotate(live)
    assert _published(live) == {_kid(second), latest["kid"]}
    assert _kid(first) not in {k["kid"] for k in _keys(live)}  # nor for receipts (PROTOCOL §11)
    expect_error(live.verify("2|x|y", first), 401, "UNAUTHORIZED")
    assert _verify_ok(live, second) == 200


def test_a_token_signed_by_a_stranger_with_a_known_kid_is_refused(live: LiveService) -> None:
    genuine = live.verifier_token()
    claims = jwt.decode(genuine, options={"verify_signature": False})
    forged = jwt.encode(
        claims, Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": _kid(genuine)}
    )
    expect_error(live.verify("2|x|y", forged), 401, "UNAUTHORIZED")
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=").decode()
    payload = genuine.split(".")[1]
    expect_error(live.verify("2|x|y", f"{header}.{payload}."), 401, "UNAUTHORIZED")
