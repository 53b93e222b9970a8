"""Signed verification receipts (issue 23, PROTOCOL §11), against a real server on both stores.

Receipts are checked the way a lender's auditor would, years later: with PyJWT and the keys the
service publishes at /.well-known/jwks.json, not with the service's own code.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import secrets
import time
from pathlib import Path
from typing import Any

import jwt
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import sql

from service.domain import signing_keys
from service.domain.clock import SystemClock
from service.domain.receipt_keys import ReceiptKeys
from service.domain.signing_keys import SigningKeys
from service.protocol.encoding import b64url_encode, base32_encode
from service.protocol.schemas import RECEIPT_TYPE
from testbed import web
from testbed.cluster import ADMIN_DATABASE_URL, Instance, throwaway_database
from testbed.factories import MARKER_ACCOUNT, MARKER_NAME, PII_FIELDS, sealed_record
from testbed.workers import wait_for_every_acceptor
from tests.commands import run_module
from tests.service.cli.test_cli import cli
from tests.service.conftest import BOTH_STORES, LiveService, start_live
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES
RECEIPT = "/v1/verifications/receipt"
CLAIMS = {"iss", "iat", "jti", "sub", "verified", "status", "verifier", "issuer", "env"}


@pytest.fixture(autouse=True)
def _quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0.2)


def _receipt(live: LiveService, barcode: str, token: str | None = None) -> dict[str, Any]:
    reply = live.post(RECEIPT, {"barcode": barcode}, token or live.verifier_token())
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    body = reply.json()
    assert set(body) == {"receipt", "verified"}
    return dict(body)


def _jwks(live: LiveService) -> jwt.PyJWKSet:
    reply = live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10)
    assert reply.status_code == 200
    return jwt.PyJWKSet.from_dict(reply.json())


def _check(live: LiveService, receipt: str) -> dict[str, Any]:
    """What any JOSE library does with the published keys: PyJWT, the key named by `kid`."""
    header = jwt.get_unverified_header(receipt)
    assert header == {"alg": "EdDSA", "kid": header["kid"], "typ": RECEIPT_TYPE}
    key = _jwks(live)[header["kid"]]
    claims: dict[str, Any] = jwt.decode(
        receipt, key, algorithms=["EdDSA"], options={"require": ["iat", "jti", "iss"]}
    )
    return claims


def _registered(live: LiveService, schema: str = "au.payslip.v1", fmt: str = "AU2") -> Any:
    sealed = sealed_record(live.issuer["encryption_key"], schema, fmt)
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert reply.status_code == 201, reply.text
    return sealed


def _forbidden_in_receipt(sealed: Any, fmt: str) -> list[bytes]:
    """Every personal field but the name, and the sealing, in every encoding."""
    values = [v for k, v in PII_FIELDS[fmt].items() if k != "employee_name" and v]
    ct = sealed.ciphertext
    iv, tag = sealed.body["encryption_metadata"]["iv"], sealed.body["encryption_metadata"]["tag"]
    return [
        *(v.encode() for v in values),
        b64url_encode(ct).encode(),
        base32_encode(ct).encode(),
        base64.b64encode(ct),
        iv.encode(),
        tag.encode(),
    ]


def _payload_bytes(receipt: str) -> bytes:
    part = receipt.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@pytest.mark.parametrize(("schema", "fmt"), [("au.payslip.v1", "AU2"), ("nz.payslip.v2", "NZ2")])
def test_a_verified_code_gets_a_receipt_that_checks_with_the_published_keys(
    live: LiveService, schema: str, fmt: str
) -> None:
    sealed = _registered(live, schema, fmt)
    body = _receipt(live, sealed.payload)
    assert body["verified"] is True
    claims = _check(live, body["receipt"])
    assert set(claims) == CLAIMS | {"payslip", "employee_name"}
    assert claims["verified"] is True and claims["status"] == "active"
    assert claims["sub"] == sealed.reference
    assert claims["verifier"] == live.verifier["client_id"]
    assert claims["issuer"] == {"id": live.issuer["issuer_id"], "name": "Test Payroll"}
    assert claims["env"] == "production"
    assert claims["iss"].rstrip("/") == live.url.rstrip("/")
    assert abs(claims["iat"] - time.time()) < 120
    assert claims["employee_name"] == MARKER_NAME
    non_pii = sealed.body["payslip_non_pii"]
    figures = claims["payslip"]
    assert figures["schema"] == schema
    for name in ("period_end", "payment_date", "currency"):
        assert figures[name] == non_pii[name]
    if schema.endswith("v1"):  # integer cents stay integers, decimals stay strings
        assert figures["gross"] == non_pii["gross_cents"] and isinstance(figures["gross"], int)
        assert figures["net"] == non_pii["net_cents"]
    else:
        assert figures["gross"] == non_pii["gross"] and isinstance(figures["gross"], str)
        assert figures["net"] == non_pii["net"]
    raw = _payload_bytes(body["receipt"])
    assert [n for n in _forbidden_in_receipt(sealed, fmt) if n in raw] == []
    assert MARKER_ACCOUNT.encode() not in raw


def test_revoked_unknown_and_altered_codes_get_receipts_of_the_refusal(live: LiveService) -> None:
    revoked = _registered(live)
    assert live.post(f"/v1/records/{revoked.reference}/revoke", None, live.issuer_token())
    body = _receipt(live, revoked.payload)
    claims = _check(live, body["receipt"])
    assert body["verified"] is False and claims["verified"] is False
    assert claims["status"] == "revoked"
    assert claims["employee_name"] == MARKER_NAME and claims["payslip"]["gross"]

    unknown = sealed_record(live.issuer["encryption_key"])  # never registered
    claims = _check(live, _receipt(live, unknown.payload)["receipt"])
    assert claims["status"] == "SERVICE_REFERENCE_NOT_FOUND" and claims["verified"] is False
    assert claims["sub"] == unknown.reference
    assert set(claims) == CLAIMS - {"issuer"}  # nothing known of an issuer or a payslip

    genuine = _registered(live)
    flipped = bytes([genuine.ciphertext[0] ^ 1]) + genuine.ciphertext[1:]
    altered = f"2|{genuine.reference}|{base32_encode(flipped)}"
    claims = _check(live, _receipt(live, altered)["receipt"])
    assert claims["status"] == "DECRYPTION_FAILED" and claims["verified"] is False
    assert set(claims) == CLAIMS - {"issuer"}  # issue 37 #4: no issuer without its ciphertext
    assert "payslip" not in claims and "employee_name" not in claims
    assert MARKER_NAME.encode() not in _payload_bytes(_receipt(live, altered)["receipt"])

    withdrawn = _registered(live)  # last: this retires the issuer's only key
    retired = live.post(
        f"/admin/v1/keys/{live.issuer['key_version']}/retire", None, live.admin_token()
    )
    assert retired.status_code == 200, retired.text
    claims = _check(live, _receipt(live, withdrawn.payload)["receipt"])
    assert claims["status"] == "KEY_VERSION_UNAVAILABLE" and "employee_name" not in claims
    assert "issuer" not in claims


def test_a_made_up_ciphertext_for_a_known_reference_names_no_issuer(live: LiveService) -> None:
    """Issue 37 #4: a reference alone (read off a payslip's printout) and random bytes must not
    tell who issued it: verifyPayload answers DECRYPTION_FAILED without an issuer, and so does
    the receipt."""
    genuine = _registered(live)
    made_up = f"2|{genuine.reference}|{base32_encode(secrets.token_bytes(len(genuine.ciphertext)))}"
    claims = _check(live, _receipt(live, made_up)["receipt"])
    assert claims["status"] == "DECRYPTION_FAILED"
    assert "issuer" not in claims
    raw = _payload_bytes(_receipt(live, made_up)["receipt"])
    assert live.issuer["issuer_id"].encode() not in raw and b"Test Payroll" not in raw
    refused = live.verify(made_up)
    expect_error(refused, 400, "DECRYPTION_FAILED")
    assert live.issuer["issuer_id"] not in refused.text


def test_altered_claims_or_signature_are_refused(live: LiveService) -> None:
    sealed = _registered(live)
    receipt = _receipt(live, sealed.payload)["receipt"]
    header, payload, signature = receipt.split(".")
    claims = json.loads(_payload_bytes(receipt))
    claims["payslip"]["net"] += 100_000
    forged = b64url_encode(json.dumps(claims).encode())
    key = _jwks(live)[jwt.get_unverified_header(receipt)["kid"]]
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(f"{header}.{forged}.{signature}", key, algorithms=["EdDSA"])
    bad = bytearray(base64.urlsafe_b64decode(signature + "=="))
    bad[5] ^= 0x01
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(f"{header}.{payload}.{b64url_encode(bytes(bad))}", key, algorithms=["EdDSA"])


def test_a_dropped_token_key_never_touches_receipts(live: LiveService) -> None:
    """Receipts are signed with a receipt key of their own (PROTOCOL §11): dropping a token key
    (it may have leaked) refuses its tokens at once, while receipts keep their key, and the
    dropped key is gone from the JWKS, so it vouches for no receipt of any date."""
    sealed = _registered(live)
    token = live.verifier_token()
    receipt = _receipt(live, sealed.payload, token)["receipt"]
    receipt_kid = jwt.get_unverified_header(receipt)["kid"]
    token_kid = jwt.get_unverified_header(token)["kid"]
    assert receipt_kid.startswith("receipt-") and receipt_kid != token_kid
    done = cli(
        "admin",
        "--data-dir",
        str(live.data_dir),
        "rotate-signing-key",
        "--drop-previous",
        env=live.cli_env(),
    )
    assert done.returncode == 0, done.stderr
    # Every server process looks at the store again within REFRESH_SECONDS: 2 s in the workers
    # of the PostgreSQL variant (processes of their own, unpatched). Each process is asked
    # (polling, with a deadline) until it has refused the dropped key's token itself; from then
    # on every one answers as the rotation says, and so do the checks below, whichever answers.

    def refuses_the_old_token(conn: http.client.HTTPConnection) -> bool:
        body = json.dumps({"barcode": sealed.payload})
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request("POST", "/v1/verifications/payload", body, headers)
        reply = conn.getresponse()
        reply.read()
        return reply.status == 401

    wait_for_every_acceptor(live.url, refuses_the_old_token, "the old token refused")
    expect_error(live.verify(sealed.payload, token), 401, "UNAUTHORIZED")
    assert _check(live, receipt)["sub"] == sealed.reference  # still proves what it said
    keys = live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10).json()["keys"]
    assert token_kid not in {k["kid"] for k in keys}
    kept = next(k for k in keys if k["kid"] == receipt_kid)
    assert kept["use"] == "sig" and kept["key_ops"] == ["verify"] and "d" not in kept
    assert "revoked_at" not in kept
    fresh = _receipt(live, sealed.payload)["receipt"]
    assert jwt.get_unverified_header(fresh)["kid"] == receipt_kid  # untouched by the rotation
    assert _check(live, fresh)["verified"] is True


def _admin_cli(live: LiveService, *args: str) -> dict[str, Any]:
    done = cli("admin", "--data-dir", str(live.data_dir), *args, env=live.cli_env())
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _leaked_receipt_key(live: LiveService) -> tuple[str, Ed25519PrivateKey]:
    """What an attacker who copied the instance's current receipt key holds."""
    return ReceiptKeys(live.store, live.config.master_key, SystemClock()).signer()


def _check_with_app(tmp_path: Path, receipt: str, jwks_url: str) -> tuple[int, str, str]:
    """`python -m app receipt check FILE --jwks URL`, as a lender's auditor runs it."""
    file = tmp_path / f"receipt-{secrets.token_hex(4)}.jws"
    file.write_text(receipt)
    done = run_module("app", "receipt", "check", str(file), "--jwks", jwks_url, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_a_retired_receipt_key_still_checks_its_receipts(live: LiveService, tmp_path: Path) -> None:
    sealed = _registered(live)
    old = _receipt(live, sealed.payload)["receipt"]
    old_kid = jwt.get_unverified_header(old)["kid"]
    rotated = _admin_cli(live, "rotate-receipt-key")
    assert rotated["retired_kids"] == [old_kid] and rotated["kid"] != old_kid
    assert rotated["kid"].startswith("receipt-")
    fresh = _receipt(live, sealed.payload)["receipt"]
    assert jwt.get_unverified_header(fresh)["kid"] == rotated["kid"]
    for receipt in (old, fresh):
        code, out, err = _check_with_app(tmp_path, receipt, live.url)
        assert code == 0, err
        assert out.startswith("GENUINE:")
    listed = {k["kid"]: k["status"] for k in _admin_cli(live, "list-receipt-keys")["receipt_keys"]}
    assert listed[old_kid] == "retired" and listed[rotated["kid"]] == "current"


def test_a_forged_receipt_under_a_revoked_receipt_key_is_refused(
    live: LiveService, tmp_path: Path
) -> None:
    """Issue 37 #1: a copy of a receipt key signs a receipt for a payslip that never existed,
    dated after the leak. Once the key is revoked, `app receipt check` refuses it, and the
    genuine receipts from before the leak too (they cannot be told apart), in words."""
    sealed = _registered(live)
    genuine = _receipt(live, sealed.payload)["receipt"]
    kid, leaked = _leaked_receipt_key(live)
    assert jwt.get_unverified_header(genuine)["kid"] == kid
    claims = json.loads(_payload_bytes(genuine))
    claims.update(
        jti=b64url_encode(secrets.token_bytes(16)),
        iat=int(time.time()) + 3600,
        employee_name="Mallory Forged",
        sub="PV-FORGED-0001",
    )
    claims["payslip"]["net"] = 88_888_888
    forged = jwt.encode(
        claims, leaked, algorithm="EdDSA", headers={"kid": kid, "typ": RECEIPT_TYPE}
    )
    code, out, _ = _check_with_app(tmp_path, forged, live.url)
    assert code == 0 and "Mallory Forged" in out  # what a leaked key does, until revoked

    revoked = _admin_cli(live, "revoke-receipt-key", "--kid", kid)
    assert revoked["kid"] == kid and revoked["status"] == "revoked"
    assert abs(revoked["revoked_at"] - time.time()) < 120
    assert revoked["current_kid"] != kid and revoked["current_kid"].startswith("receipt-")
    again = _admin_cli(live, "revoke-receipt-key", "--kid", kid)
    assert again["revoked_at"] == revoked["revoked_at"]  # a repeat keeps the first time
    keys = live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10).json()["keys"]
    entry = next(k for k in keys if k["kid"] == kid)
    assert entry["revoked_at"] == revoked["revoked_at"]

    for receipt in (forged, genuine):
        code, out, err = _check_with_app(tmp_path, receipt, live.url)
        assert code == 2 and out == "", err
        assert err.startswith("CANNOT_CHECK: The key that signed this receipt was revoked")
        assert "cannot be told from a forgery" in err and "verify the payslip again" in err
    fresh = _receipt(live, sealed.payload)["receipt"]  # the new key signs from now on
    assert jwt.get_unverified_header(fresh)["kid"] == revoked["current_kid"]
    assert _check_with_app(tmp_path, fresh, live.url)[0] == 0


def test_a_receipt_signed_by_a_token_key_is_not_genuine(live: LiveService, tmp_path: Path) -> None:
    """The JWKS lists the token keys as well: one of them (a leaked one) must not make a
    receipt genuine."""
    sealed = _registered(live)
    claims = json.loads(_payload_bytes(_receipt(live, sealed.payload)["receipt"]))
    signing = SigningKeys(live.store, live.config.master_key, SystemClock(), 900)
    token_kid, token_key = signing.current()
    forged = jwt.encode(
        claims, token_key, algorithm="EdDSA", headers={"kid": token_kid, "typ": RECEIPT_TYPE}
    )
    published = live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10).json()["keys"]
    assert token_kid in {k["kid"] for k in published}
    code, _, err = _check_with_app(tmp_path, forged, live.url)
    assert code == 2 and err.startswith("CANNOT_CHECK:"), err


def test_revoking_an_unknown_receipt_key_is_one_plain_line(live: LiveService) -> None:
    done = cli(
        "admin",
        "--data-dir",
        str(live.data_dir),
        "revoke-receipt-key",
        "--kid",
        "receipt-nope",
        env=live.cli_env(),
    )
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: no receipt key has this kid; `admin list-receipt-keys` shows them"
    ]


def test_no_receipt_without_a_valid_token_or_for_bad_input(live: LiveService) -> None:
    sealed = _registered(live)
    expect_error(live.post(RECEIPT, {"barcode": sealed.payload}, None), 401, "UNAUTHORIZED")
    expect_error(
        live.post(RECEIPT, {"barcode": sealed.payload}, live.issuer_token()), 403, "FORBIDDEN"
    )
    reply = live.post(RECEIPT, {"barcode": "2|not-a-code"}, live.verifier_token())
    expect_error(reply, 400, "VALIDATION_FAILED")
    reply = live.post(RECEIPT, {"barcode": sealed.payload, "extra": 1}, live.verifier_token())
    assert reply.json()["field_errors"][0]["path"] == "extra"
    receipt = _receipt(live, sealed.payload)["receipt"]  # a receipt is no token
    expect_error(live.verify(sealed.payload, receipt), 401, "UNAUTHORIZED")
    big = live.post(RECEIPT, {"barcode": "x" * 40_000}, live.verifier_token())
    expect_error(big, 413, "PAYLOAD_TOO_LARGE")
    for reply in (big,):
        assert "receipt" not in reply.json()


def test_nothing_of_a_receipt_is_stored_or_logged(
    live: LiveService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    jtis = []
    for _ in range(3):
        sealed = _registered(live)
        claims = _check(live, _receipt(live, sealed.payload)["receipt"])
        jtis.append(claims["jti"].encode())
    revoked = _registered(live)
    live.post(f"/v1/records/{revoked.reference}/revoke", None, live.issuer_token())
    jtis.append(_check(live, _receipt(live, revoked.payload)["receipt"])["jti"].encode())
    needles = [MARKER_NAME.encode(), *jtis]
    assert live.places_holding(needles) == []
    logged = "\n".join(r.getMessage() for r in caplog.records).encode()
    assert [n for n in needles if n in logged] == []


@pytest.mark.tinydb_only  # a fresh server with its own low limit
def test_a_rate_limited_request_makes_no_receipt(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSLIP_RATE_LIMIT_CLIENT", "2/minute")
    live = start_live(tmp_path / "limited")
    try:
        sealed = _registered(live)
        token = live.verifier_token()
        replies = [live.post(RECEIPT, {"barcode": sealed.payload}, token) for _ in range(3)]
        assert [r.status_code for r in replies] == [200, 200, 429]
        expect_error(replies[2], 429, "RATE_LIMITED")
        assert "receipt" not in replies[2].json()
    finally:
        assert live.running is not None
        live.running.stop()


@pytest.mark.postgres
@pytest.mark.slow  # waits out the pool's wait for a connection
@pytest.mark.tinydb_only  # its own server on its own database, which the test takes away
def test_a_store_that_does_not_answer_makes_no_receipt(tmp_path: Any) -> None:
    from service.hosting.server import start

    with throwaway_database("pv_receipt") as database_url:
        instance = Instance.create(tmp_path / "data", database_url)
        verifier = instance.verifier
        running = start(instance.data_dir, store_kind="postgres", database_url=database_url)
        try:
            token = web.post(
                f"{running.url}/oauth/token",
                json={
                    "grant_type": "client_credentials",
                    "client_id": verifier["client_id"],
                    "client_secret": verifier["client_secret"],
                    "audience": running.url,
                },
                timeout=10,
            ).json()["access_token"]
            name = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
            with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(
                        sql.Identifier(str(name))
                    )
                )
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
            sealed = sealed_record(b64url_encode(b"\0" * 32))
            # The head's check reads no store (test_preflight_store): the answer is the 503.
            reply = web.post(
                f"{running.url}{RECEIPT}",
                json={"barcode": sealed.payload},
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )
            expect_error(reply, 503, "SERVICE_UNAVAILABLE")
            assert "receipt" not in reply.json()
        finally:
            running.stop()
