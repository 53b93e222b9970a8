"""The admin API (PROTOCOL §8) and key life cycle (§2) over HTTP: onboarding, rotation, retirement
and what the overview and the data directory must never hold."""

from __future__ import annotations

import base64
import copy
from typing import Any

import httpx
import pytest

from service.protocol.barcode_text import build_payload_v2
from service.protocol.encoding import b64url_decode, b64url_encode
from testbed.factories import Sealed, build_body, sealed_record
from testbed.oauth import token_body
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error, expect_new_issuer

LIVE_STORES = BOTH_STORES


def field_paths(reply: httpx.Response) -> list[str]:
    return [e["path"] for e in expect_error(reply, 400, "VALIDATION_FAILED")["field_errors"]]


def admin_post(live: LiveService, path: str, body: Any = None) -> httpx.Response:
    return live.post(path, body, live.admin_token())


def register(live: LiveService, sealed: Sealed, token: str | None = None) -> None:
    reply = live.post("/v1/registerNonPII", sealed.body, token or live.issuer_token())
    assert reply.status_code == 201, reply.text


def rotate(live: LiveService, issuer_id: str) -> dict[str, Any]:
    reply = admin_post(live, f"/admin/v1/issuers/{issuer_id}/keys")
    assert reply.status_code == 201, reply.text
    assert reply.headers["cache-control"] == "no-store"
    return dict(reply.json())


def retire(live: LiveService, key_version: str) -> httpx.Response:
    return admin_post(live, f"/admin/v1/keys/{key_version}/retire")


def encodings(secret: str) -> list[bytes]:
    """A base64url secret as text and as raw bytes in the usual encodings."""
    raw = b64url_decode(secret)
    return [
        secret.encode(),
        raw,
        base64.b64encode(raw),
        base64.b64encode(raw).rstrip(b"="),
        raw.hex().encode(),
        raw.hex().upper().encode(),
    ]


# --- onboarding ----------------------------------------------------------------------------


def test_create_issuer_and_verifier_over_http(live: LiveService) -> None:
    reply = admin_post(live, "/admin/v1/issuers", {"name": "  Acme Payroll  "})
    assert reply.status_code == 201, reply.text
    assert reply.headers["cache-control"] == "no-store"
    issuer = reply.json()
    expect_new_issuer(issuer)
    assert len(b64url_decode(issuer["client_secret"])) == 32
    token = live.token(issuer["client_id"], issuer["client_secret"])
    sealed = sealed_record(issuer["encryption_key"], key_version=issuer["key_version"])
    register(live, sealed, token)
    result = live.verify(sealed.payload).json()
    assert result["payslip"]["issuer"] == {"issuer_id": issuer["issuer_id"], "name": "Acme Payroll"}

    reply = admin_post(live, "/admin/v1/verifiers", {"name": "Front Desk 2"})
    assert reply.status_code == 201, reply.text
    verifier = reply.json()
    assert set(verifier) == {"verifier_id", "client_id", "client_secret"}
    other_token = live.token(verifier["client_id"], verifier["client_secret"])
    assert live.verify(sealed.payload, other_token).json()["verified"] is True


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": 5}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "bad\nname"}, "name"),
        ({"name": "ok", "secret": "x"}, "secret"),
        ([], ""),
    ],
)
@pytest.mark.parametrize("route", ["/admin/v1/issuers", "/admin/v1/verifiers"])
def test_onboarding_validation(live: LiveService, route: str, body: Any, path: str) -> None:
    assert field_paths(admin_post(live, route, body)) == [path]


def test_unknown_issuer_key_version_or_client_is_404(live: LiveService) -> None:
    unknown = "abcdef00-0000-4000-8000-00000000000f"
    expect_error(
        admin_post(live, f"/admin/v1/issuers/{unknown}/keys"), 404, "SERVICE_REFERENCE_NOT_FOUND"
    )
    expect_error(retire(live, f"{unknown}.1"), 404, "SERVICE_REFERENCE_NOT_FOUND")
    expect_error(
        admin_post(live, "/admin/v1/clients/nobody/disable"), 404, "SERVICE_REFERENCE_NOT_FOUND"
    )
    for bad in ("not-a-version", f"{unknown}.0", f"{unknown}.01", f"{unknown.upper()}.1"):
        assert field_paths(retire(live, bad)) == ["key_version"]


# --- rotation and retirement ---------------------------------------------------------------


def test_rotation_keeps_old_records_verifying_and_pins_unpinned_ones(live: LiveService) -> None:
    issuer = live.issuer
    key1, kv1 = issuer["encryption_key"], issuer["key_version"]
    pinned_old = sealed_record(key1, key_version=kv1)
    unpinned_old = sealed_record(key1)
    register(live, pinned_old)
    register(live, unpinned_old)

    rotated = rotate(live, issuer["issuer_id"])
    kv2, key2 = rotated["key_version"], rotated["encryption_key"]
    assert kv2 == f"{issuer['issuer_id']}.2"
    assert key2 != key1
    pinned_new = sealed_record(key2, key_version=kv2)
    unpinned_new = sealed_record(key2)
    still_key1 = sealed_record(key1, key_version=kv1)  # a live (not active) key may still be used
    for sealed in (pinned_new, unpinned_new, still_key1):
        register(live, sealed)

    token = live.verifier_token()
    store = live.store
    for sealed in (pinned_old, unpinned_old, pinned_new, unpinned_new, still_key1):
        reply = live.verify(sealed.payload, token)
        assert reply.status_code == 200, reply.text
        assert reply.json()["verified"] is True
    pins = {
        s.reference: getattr(store.get_record(s.reference), "key_version", None)
        for s in (unpinned_old, unpinned_new)
    }
    assert pins == {unpinned_old.reference: kv1, unpinned_new.reference: kv2}

    keys = live.http.get(
        f"{live.url}/admin/v1/overview",
        headers={"Authorization": f"Bearer {live.admin_token()}"},
        timeout=10,
    ).json()["keys"]
    states = {k["key_version"]: k["state"] for k in keys if k["issuer_id"] == issuer["issuer_id"]}
    assert states == {kv1: "live", kv2: "active"}


def test_retirement_makes_its_records_key_version_unavailable(live: LiveService) -> None:
    issuer = live.issuer
    key1, kv1 = issuer["encryption_key"], issuer["key_version"]
    pinned = sealed_record(key1, key_version=kv1)
    unpinned_unverified = sealed_record(key1)
    unpinned_verified = sealed_record(key1)
    for sealed in (pinned, unpinned_unverified, unpinned_verified):
        register(live, sealed)
    assert live.verify(unpinned_verified.payload).status_code == 200  # pins it to kv1

    rotated = rotate(live, issuer["issuer_id"])
    on_key2 = sealed_record(rotated["encryption_key"], key_version=rotated["key_version"])
    unpinned_key2 = sealed_record(rotated["encryption_key"])
    register(live, on_key2)
    register(live, unpinned_key2)

    reply = retire(live, kv1)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"key_version": kv1, "status": "retired"}
    assert retire(live, kv1).status_code == 200  # a repeat is harmless

    token = live.verifier_token()
    for sealed in (pinned, unpinned_unverified, unpinned_verified):
        expect_error(live.verify(sealed.payload, token), 410, "KEY_VERSION_UNAVAILABLE")
    for sealed in (on_key2, unpinned_key2):
        assert live.verify(sealed.payload, token).json()["verified"] is True
    # A tampered barcode of a key-2 record is still a decryption failure, not a retired key.
    flipped = bytearray(on_key2.ciphertext)
    flipped[0] ^= 1
    tampered = build_payload_v2(on_key2.reference, bytes(flipped))
    expect_error(live.verify(tampered, token), 400, "DECRYPTION_FAILED")


def test_retiring_every_key_leaves_nothing_to_decrypt(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    assert retire(live, live.issuer["key_version"]).status_code == 200
    expect_error(live.verify(sealed.payload), 410, "KEY_VERSION_UNAVAILABLE")
    # The issuer cannot build barcodes any more either: nothing authenticates.
    fresh = sealed_record(live.issuer["encryption_key"])
    reply = live.post("/v1/registerAndBuildBarcode", build_body(fresh), live.issuer_token())
    assert field_paths(reply) == ["encrypted_pii"]


def test_registering_with_a_retired_foreign_or_unknown_key_version(live: LiveService) -> None:
    issuer = live.issuer
    kv1 = issuer["key_version"]
    rotated = rotate(live, issuer["issuer_id"])
    assert retire(live, kv1).status_code == 200
    other = admin_post(live, "/admin/v1/issuers", {"name": "Other Payroll"}).json()
    unknown = f"{issuer['issuer_id']}.99"
    token = live.issuer_token()
    for key_version in (kv1, other["key_version"], unknown):
        sealed = sealed_record(rotated["encryption_key"], key_version=key_version)
        reply = live.post("/v1/registerNonPII", sealed.body, token)
        assert field_paths(reply) == ["encryption_metadata.key_version"]
        built = live.post("/v1/registerAndBuildBarcode", build_body(sealed), token)
        assert field_paths(built) == ["encryption_metadata.key_version"]
        results = live.post("/v1/registerNonPIIBatch", {"records": [sealed.body]}, token).json()[
            "results"
        ]
        assert results[0]["status"] == "error"
        assert results[0]["code"] == "VALIDATION_FAILED"
        assert results[0]["detail"].startswith("encryption_metadata.key_version")
        assert live.store.get_record(sealed.reference) is None
    ok = sealed_record(rotated["encryption_key"], key_version=rotated["key_version"])
    register(live, ok, token)
    built = live.post(
        "/v1/registerAndBuildBarcode",
        build_body(sealed_record(rotated["encryption_key"], key_version=rotated["key_version"])),
        token,
    )
    assert built.status_code == 201, built.text


def test_build_without_key_version_finds_a_live_key_and_pins_it(live: LiveService) -> None:
    key1, kv1 = live.issuer["encryption_key"], live.issuer["key_version"]
    rotate(live, live.issuer["issuer_id"])
    sealed = sealed_record(key1)  # encrypted under the older, still live key
    reply = live.post("/v1/registerAndBuildBarcode", build_body(sealed), live.issuer_token())
    assert reply.status_code == 201, reply.text
    record = live.store.get_record(reply.json()["service_reference"])
    assert record is not None and record.key_version == kv1


def test_retiring_destroys_the_wrapped_key_material_on_disk(live: LiveService) -> None:
    """TinyDB: gone from the files. PostgreSQL: gone from every row (an old row version stays in
    the table file until VACUUM reclaims it; that is the database's storage, not ours)."""
    kv1 = live.issuer["key_version"]
    wrapped = live.store.get_key(kv1)
    assert wrapped is not None and wrapped.wrapped
    assert live.places_holding([wrapped.wrapped.encode()])  # stored wrapped ...
    assert retire(live, kv1).status_code == 200
    assert live.places_holding([wrapped.wrapped.encode()]) == []  # ... and gone


# --- what must never be shown or stored ----------------------------------------------------


def test_overview_and_data_dir_never_hold_secrets_or_keys(live: LiveService) -> None:
    created_issuer = admin_post(live, "/admin/v1/issuers", {"name": "Discreet Payroll"}).json()
    created_verifier = admin_post(live, "/admin/v1/verifiers", {"name": "Quiet Desk"}).json()
    rotated = rotate(live, live.issuer["issuer_id"])
    sealed = sealed_record(live.issuer["encryption_key"])
    register(live, sealed)
    revoked = sealed_record(live.issuer["encryption_key"])
    register(live, revoked)
    assert (
        live.post(f"/v1/records/{revoked.reference}/revoke", None, live.issuer_token()).status_code
        == 200
    )
    reply = live.http.get(
        f"{live.url}/admin/v1/overview",
        headers={"Authorization": f"Bearer {live.admin_token()}"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    overview = reply.json()
    secrets = [
        live.admin_secret,
        live.issuer["client_secret"],
        live.verifier["client_secret"],
        created_issuer["client_secret"],
        created_verifier["client_secret"],
    ]
    keys = [
        live.issuer["encryption_key"],
        created_issuer["encryption_key"],
        rotated["encryption_key"],
    ]
    text = reply.text
    for value in secrets + keys:
        assert value not in text
    for forbidden in ("secret", "wrapped", "hmac", "encryption_key"):
        assert forbidden not in text.lower()
    needles = [needle for value in secrets + keys for needle in encodings(value)]
    assert live.places_holding(needles) == []

    issuers = {i["issuer_id"]: i for i in overview["issuers"]}
    mine = issuers[live.issuer["issuer_id"]]
    assert (mine["name"], mine["records"], mine["revoked"]) == ("Test Payroll", 2, 1)
    assert issuers[created_issuer["issuer_id"]]["records"] == 0
    assert overview["record_count"] == live.earlier_records + 2
    assert {v["verifier_id"] for v in overview["verifiers"]} - live.earlier_verifiers == {
        live.verifier["verifier_id"],
        created_verifier["verifier_id"],
    }
    roles = {c["client_id"]: c["role"] for c in overview["clients"]}
    assert roles[live.admin_id] == "admin"
    assert roles[created_verifier["client_id"]] == "verifier"
    assert all(set(c) >= {"client_id", "role", "disabled"} for c in overview["clients"])
    states = {k["key_version"]: k["state"] for k in overview["keys"]}
    assert states[live.issuer["key_version"]] == "live"
    assert states[rotated["key_version"]] == "active"


def test_admin_body_over_8_kib_is_413(live: LiveService) -> None:
    reply = admin_post(live, "/admin/v1/issuers", {"name": "x" * (9 * 1024)})
    expect_error(reply, 413, "PAYLOAD_TOO_LARGE")


def test_an_issuer_key_is_usable_only_by_its_issuer(live: LiveService) -> None:
    """Another issuer registering a record under my key version is refused; with its own key
    version it is fine, and its record is pinned to its own key."""
    other = admin_post(live, "/admin/v1/issuers", {"name": "Other"}).json()
    token = live.token(other["client_id"], other["client_secret"])
    mine = sealed_record(live.issuer["encryption_key"], key_version=live.issuer["key_version"])
    body = copy.deepcopy(mine.body)
    assert field_paths(live.post("/v1/registerNonPII", body, token)) == [
        "encryption_metadata.key_version"
    ]
    # My ciphertext under the other issuer's reference cannot be built into a badge either.
    built = live.post(
        "/v1/registerAndBuildBarcode",
        build_body(sealed_record(live.issuer["encryption_key"])),
        token,
    )
    assert field_paths(built) == ["encrypted_pii"]
    theirs = sealed_record(other["encryption_key"], key_version=other["key_version"])
    register(live, theirs, token)
    assert live.verify(theirs.payload).json()["verified"] is True
    assert b64url_encode(b64url_decode(other["encryption_key"])) == other["encryption_key"]


def test_an_id_holding_nul_names_nothing_on_every_store(live: LiveService) -> None:
    """PostgreSQL text cannot hold NUL: an id with one in the URL or the token request is
    simply unknown (404 / 401) on both stores, never a 503 that asks the caller to retry."""
    admin = live.admin_token()
    disabled = live.post("/admin/v1/clients/iss_%00x/disable", None, admin)
    expect_error(disabled, 404, "SERVICE_REFERENCE_NOT_FOUND")
    expect_error(
        live.post("/admin/v1/issuers/i%00/keys", None, admin), 404, "SERVICE_REFERENCE_NOT_FOUND"
    )
    token = live.http.post(
        f"{live.url}/oauth/token",
        json=token_body("iss_\u0000x", "secret\u0000", live.url),
        timeout=30,
    )
    expect_error(token, 401, "UNAUTHORIZED")
