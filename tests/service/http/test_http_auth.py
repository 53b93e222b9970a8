"""The token endpoint and bearer checks (PROTOCOL §7) against a real server on loopback."""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.composition.instance import domain_for, load_master_key, make_config, open_store
from testbed import web
from testbed.factories import sealed_record
from tests.commands import run_module
from tests.service.conftest import BOTH_STORES, LiveService, make_instance, start_live
from tests.service.http.http_helpers import expect_error

ISSUER, VERIFIER, ADMIN = "service:issuer", "service:verifier", "service:admin"
LIVE_STORES = BOTH_STORES


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def grant(live: LiveService, **params: Any) -> httpx.Response:
    return live.http.post(f"{live.url}/oauth/token", json=params, timeout=10)


def creds(client: dict[str, Any], audience: str, **extra: Any) -> dict[str, Any]:
    return {
        "grant_type": "client_credentials",
        "client_id": client["client_id"],
        "client_secret": client["client_secret"],
        "audience": audience,
        **extra,
    }


def jwks_key(url: str) -> tuple[Any, str]:
    reply = web.get(f"{url}/.well-known/jwks.json", timeout=10)
    assert reply.status_code == 200
    (key,) = reply.json()["keys"]
    return jwt.PyJWK(key).key, key["kid"]


def unverified_claims(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def register(live: LiveService, token: str) -> httpx.Response:
    sealed = sealed_record(live.issuer["encryption_key"])
    return live.post("/v1/registerNonPII", sealed.body, token)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_module("service", *args, env=env, timeout=60)


# --- the token endpoint --------------------------------------------------------------------


def test_json_grant_returns_a_bearer_token_not_to_be_cached(live: LiveService) -> None:
    reply = grant(live, **creds(live.issuer, live.url, scope=ISSUER))
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    assert reply.headers["x-request-id"]
    body = reply.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 900
    assert body["scope"] == ISSUER


def test_form_grant_is_accepted_too(live: LiveService) -> None:
    reply = live.http.post(
        f"{live.url}/oauth/token", data=creds(live.verifier, live.url), timeout=10
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["cache-control"] == "no-store"
    assert reply.json()["scope"] == VERIFIER
    unknown = live.verify("2|" + "A" * 22 + "|AAAAAAAA", reply.json()["access_token"])
    assert unknown.status_code == 404


@pytest.mark.parametrize("who", ["issuer", "verifier", "admin"])
def test_omitted_scope_is_the_clients_own_role(live: LiveService, who: str) -> None:
    client = {
        "issuer": live.issuer,
        "verifier": live.verifier,
        "admin": {"client_id": live.admin_id, "client_secret": live.admin_secret},
    }[who]
    reply = grant(live, **creds(client, live.url + "/"))  # one trailing slash is ignored
    assert reply.status_code == 200, reply.text
    assert reply.json()["scope"] == f"service:{who}"


def test_unknown_parameters_are_ignored(live: LiveService) -> None:
    reply = grant(live, **creds(live.issuer, live.url, resource="x", state="y"))
    assert reply.status_code == 200, reply.text


def test_bad_credentials_are_invalid_client_and_indistinguishable(live: LiveService) -> None:
    wrong_secret = grant(live, **creds({**live.issuer, "client_secret": "x" * 43}, live.url))
    unknown_client = grant(live, **creds({**live.issuer, "client_id": "iss_nobody"}, live.url))
    swapped = grant(
        live,
        **creds(
            {
                "client_id": live.issuer["client_id"],
                "client_secret": live.verifier["client_secret"],
            },
            live.url,
        ),
    )
    bodies = []
    for reply in (wrong_secret, unknown_client, swapped):
        body = expect_error(reply, 401, "UNAUTHORIZED")
        assert body["error"] == "invalid_client"
        assert reply.headers["cache-control"] == "no-store"
        bodies.append(body)
    assert bodies[0] == bodies[1] == bodies[2]
    form = live.http.post(
        f"{live.url}/oauth/token",
        data=creds({**live.verifier, "client_secret": "nope"}, live.url),
        timeout=10,
    )
    assert expect_error(form, 401, "UNAUTHORIZED")["error"] == "invalid_client"


@pytest.mark.parametrize(
    ("who", "scope"),
    [
        ("issuer", VERIFIER),
        ("issuer", ADMIN),
        ("verifier", ISSUER),
        ("verifier", ADMIN),
        ("admin", ISSUER),
        ("issuer", "service:everything"),
    ],
)
def test_a_scope_not_allowed_for_the_client_is_invalid_scope(
    live: LiveService, who: str, scope: str
) -> None:
    client = {
        "issuer": live.issuer,
        "verifier": live.verifier,
        "admin": {"client_id": live.admin_id, "client_secret": live.admin_secret},
    }[who]
    body = expect_error(grant(live, **creds(client, live.url, scope=scope)), 403, "FORBIDDEN")
    assert body["error"] == "invalid_scope"


@pytest.mark.parametrize(
    "audience", ["https://elsewhere.example", "http://127.0.0.1:1", "", "x", "{url}//"]
)
def test_a_foreign_audience_is_refused(live: LiveService, audience: str) -> None:
    reply = grant(live, **creds(live.issuer, audience.format(url=live.url)))
    if audience == "":
        assert expect_error(reply, 400, "VALIDATION_FAILED")["error"] == "invalid_request"
    else:
        assert expect_error(reply, 403, "FORBIDDEN")["error"] == "invalid_scope"


@pytest.mark.parametrize(
    ("change", "oauth_error", "path"),
    [
        ({"grant_type": None}, "invalid_request", "grant_type"),
        ({"grant_type": "password"}, "unsupported_grant_type", "grant_type"),
        ({"grant_type": "authorization_code"}, "unsupported_grant_type", "grant_type"),
        ({"client_id": None}, "invalid_request", "client_id"),
        ({"client_secret": None}, "invalid_request", "client_secret"),
        ({"audience": None}, "invalid_request", "audience"),
        ({"client_id": 12345}, "invalid_request", "client_id"),
        ({"client_secret": ["a"]}, "invalid_request", "client_secret"),
        ({"scope": 7}, "invalid_request", "scope"),
    ],
)
def test_malformed_grants_are_400_with_the_oauth_error(
    live: LiveService, change: dict[str, Any], oauth_error: str, path: str
) -> None:
    params = creds(live.issuer, live.url)
    for key, value in change.items():
        if value is None:
            del params[key]
        else:
            params[key] = value
    body = expect_error(grant(live, **params), 400, "VALIDATION_FAILED")
    assert body["error"] == oauth_error
    assert [e["path"] for e in body["field_errors"]] == [path]


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"[1, 2]", "application/json"),
        (b'"text"', "application/json"),
        (b'{"grant_type": ', "application/json"),
        (b"", "application/json"),
        (b"\xff\xfe", "application/x-www-form-urlencoded"),
    ],
)
def test_unreadable_token_bodies_are_invalid_request(
    live: LiveService, content: bytes, content_type: str
) -> None:
    reply = live.http.post(
        f"{live.url}/oauth/token",
        content=content,
        headers={"Content-Type": content_type},
        timeout=10,
    )
    assert reply.status_code == 400, reply.text
    assert reply.json()["code"] == "VALIDATION_FAILED"
    assert reply.headers["x-request-id"]


def test_token_endpoint_refuses_other_media_types(live: LiveService) -> None:
    reply = live.http.post(
        f"{live.url}/oauth/token",
        content=json.dumps(creds(live.issuer, live.url)),
        headers={"Content-Type": "text/plain"},
        timeout=10,
    )
    expect_error(reply, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_token_body_over_8_kib_is_413(live: LiveService) -> None:
    params = creds(live.issuer, live.url, padding="x" * (9 * 1024))
    expect_error(grant(live, **params), 413, "PAYLOAD_TOO_LARGE")


# --- the tokens themselves -----------------------------------------------------------------


def test_token_verifies_against_the_jwks(live: LiveService) -> None:
    key, kid = jwks_key(live.url)
    token = live.issuer_token()
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "EdDSA"
    assert header["kid"] == kid
    claims = jwt.decode(token, key, algorithms=["EdDSA"], audience=live.url, issuer=live.url)
    assert claims["sub"] == live.issuer["client_id"]
    assert claims["scope"] == ISSUER
    assert claims["env"] == "production"
    assert claims["exp"] - claims["iat"] == 900
    assert abs(claims["iat"] - time.time()) < 60
    assert claims["jti"]
    assert unverified_claims(live.issuer_token())["jti"] != claims["jti"]


def test_jwks_holds_only_a_public_key(live: LiveService) -> None:
    reply = live.http.get(f"{live.url}/.well-known/jwks.json", timeout=10)
    (key,) = reply.json()["keys"]
    assert key["kty"] == "OKP" and key["crv"] == "Ed25519"
    assert "d" not in key
    assert reply.headers["x-request-id"]


def _forged_tokens(live: LiveService) -> dict[str, str]:
    _, kid = jwks_key(live.url)
    real = live.issuer_token()
    claims = unverified_claims(real)
    head, payload, signature = real.split(".")
    escalated = b64(json.dumps({**claims, "sub": live.admin_id, "scope": ADMIN}).encode())
    foreign_key = Ed25519PrivateKey.generate()
    return {
        "alg none": jwt.encode(claims, None, algorithm="none", headers={"kid": kid}),
        "unsigned": f"{head}.{payload}.",
        "payload swapped": f"{head}.{escalated}.{signature}",
        "foreign key": jwt.encode(claims, foreign_key, algorithm="EdDSA", headers={"kid": kid}),
        "hs256": jwt.encode(claims, "x" * 32, algorithm="HS256", headers={"kid": kid}),
        "garbage": "not-a-jwt",
        "truncated": real[:-5],
    }


def test_forged_and_unsigned_tokens_are_401(live: LiveService) -> None:
    for name, token in _forged_tokens(live).items():
        reply = register(live, token)
        body = expect_error(reply, 401, "UNAUTHORIZED")
        assert "detail" in body, name


@pytest.mark.parametrize(
    "header", [None, "", "Bearer", "Bearer a.b.c", "Basic dXNlcjpwYXNz", "Token abc"]
)
def test_missing_or_wrong_authorization_is_401(live: LiveService, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    sealed = sealed_record(live.issuer["encryption_key"])
    reply = live.http.post(
        f"{live.url}/v1/registerNonPII", json=sealed.body, headers=headers, timeout=10
    )
    expect_error(reply, 401, "UNAUTHORIZED")
    assert live.store.get_record(sealed.reference) is None


class PastClock:
    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def _minted(live: LiveService, clock: Any = None, **changes: str) -> str:
    """An issuer token signed with the live instance's own key, under another clock or URLs."""
    config = dataclasses.replace(live.config, **changes)
    domain = domain_for(live.store, config, clock)
    return domain.tokens.grant(creds(live.issuer, config.issuer_url)).access_token


def test_an_expired_token_is_401(live: LiveService) -> None:
    expired = _minted(live, PastClock(timedelta(seconds=-901)))
    expect_error(register(live, expired), 401, "UNAUTHORIZED")
    nearly = _minted(live, PastClock(timedelta(seconds=-840)))
    assert register(live, nearly).status_code == 201


def test_wrong_audience_issuer_or_environment_is_401(live: LiveService) -> None:
    tokens = {
        "audience": _minted(live, issuer_url="https://issuer.elsewhere.example"),
        "issuer": _minted(live, auth_url="https://auth.elsewhere.example"),
        "environment": _minted(live, environment="sandbox"),
    }
    for name, token in tokens.items():
        assert unverified_claims(token)["scope"] == ISSUER, name
        expect_error(register(live, token), 401, "UNAUTHORIZED")
    sanity = _minted(live)
    assert register(live, sanity).status_code == 201


def test_a_token_from_another_instance_is_401(live: LiveService, tmp_path: Path) -> None:
    other_dir = tmp_path / "other"
    make_instance(other_dir)
    store = open_store(other_dir)
    try:
        # Same URLs, other signing key: the other instance's verifier cannot get in here.
        domain = domain_for(store, make_config(load_master_key(other_dir), live.url))
        verifier = domain.admin.create_verifier("Stranger Desk").wire()
        token = domain.tokens.grant(creds(verifier, live.url)).access_token
    finally:
        store.close()
    expect_error(live.verify("2|" + "A" * 22 + "|AAAAAAAA", token), 401, "UNAUTHORIZED")


# --- scopes on routes ----------------------------------------------------------------------


def test_issuer_token_on_the_verifier_api_is_403(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    expect_error(live.verify(sealed.payload, live.issuer_token()), 403, "FORBIDDEN")
    expect_error(live.verify(sealed.payload, live.admin_token()), 403, "FORBIDDEN")
    assert live.verify(sealed.payload).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/v1/registerNonPII",
        "/v1/registerNonPIIBatch",
        "/v1/registerAndBuildBarcode",
        "/v1/records/AAAAAAAAAAAAAAAAAAAAAA/revoke",
    ],
)
def test_verifier_and_admin_tokens_on_issuer_routes_are_403(live: LiveService, path: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    for token in (live.verifier_token(), live.admin_token()):
        expect_error(live.post(path, sealed.body, token), 403, "FORBIDDEN")
    assert live.store.get_record(sealed.reference) is None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/admin/v1/issuers"),
        ("POST", "/admin/v1/verifiers"),
        ("GET", "/admin/v1/overview"),
        ("POST", "/admin/v1/keys/00000000-0000-0000-0000-000000000000.1/retire"),
    ],
)
def test_admin_routes_need_the_admin_scope(live: LiveService, method: str, path: str) -> None:
    for token in (live.issuer_token(), live.verifier_token()):
        reply = live.http.request(
            method, f"{live.url}{path}", json={"name": "x"}, headers=bearer(token), timeout=10
        )
        expect_error(reply, 403, "FORBIDDEN")
    reply = live.http.request(method, f"{live.url}{path}", json={"name": "x"}, timeout=10)
    expect_error(reply, 401, "UNAUTHORIZED")


@dataclass
class Split:
    live: LiveService
    issuer_url: str = "https://issuer.example.test"
    verifier_url: str = "https://verify.example.test"
    auth_url: str = "https://auth.example.test"


@pytest.fixture
def split(tmp_path: Path) -> Iterator[Split]:
    """A server whose three role URLs differ from where it listens (PROTOCOL §9 --*-url). An
    in-process TinyDB server only: the URLs are the server's own configuration, not the store's."""
    live = start_live(
        tmp_path / "data",
        issuer_url="https://issuer.example.test/",
        verifier_url="https://verify.example.test",
        auth_url="https://auth.example.test",
    )
    try:
        yield Split(live)
    finally:
        assert live.running is not None
        live.running.stop()


def test_audience_must_be_the_url_of_the_scopes_api(split: Split) -> None:
    live = split.live
    ok = grant(live, **creds(live.issuer, split.issuer_url))
    assert ok.status_code == 200, ok.text
    claims = unverified_claims(ok.json()["access_token"])
    assert claims["aud"] == split.issuer_url
    assert claims["iss"] == split.auth_url
    assert grant(live, **creds(live.issuer, split.issuer_url + "/")).status_code == 200
    for wrong in (split.verifier_url, split.auth_url, live.url):
        body = expect_error(grant(live, **creds(live.issuer, wrong)), 403, "FORBIDDEN")
        assert body["error"] == "invalid_scope"
    assert grant(live, **creds(live.verifier, split.verifier_url)).status_code == 200
    expect_error(grant(live, **creds(live.verifier, split.issuer_url)), 403, "FORBIDDEN")
    admin = {"client_id": live.admin_id, "client_secret": live.admin_secret}
    assert grant(live, **creds(admin, split.issuer_url)).status_code == 200
    expect_error(grant(live, **creds(admin, split.verifier_url)), 403, "FORBIDDEN")


def test_cross_api_tokens_are_refused_with_split_urls(split: Split) -> None:
    live = split.live
    issuer_token = grant(live, **creds(live.issuer, split.issuer_url)).json()["access_token"]
    verifier_token = grant(live, **creds(live.verifier, split.verifier_url)).json()["access_token"]
    sealed = sealed_record(live.issuer["encryption_key"])
    expect_error(live.post("/v1/registerNonPII", sealed.body, verifier_token), 403, "FORBIDDEN")
    assert live.post("/v1/registerNonPII", sealed.body, issuer_token).status_code == 201
    expect_error(live.verify(sealed.payload, issuer_token), 403, "FORBIDDEN")
    reply = live.verify(sealed.payload, verifier_token)
    assert reply.status_code == 200, reply.text
    assert reply.json()["verified"] is True


# --- disabling clients ---------------------------------------------------------------------


def test_disabling_a_client_over_http_cuts_it_off_at_once(live: LiveService) -> None:
    issuer_token = live.issuer_token()
    assert register(live, issuer_token).status_code == 201
    reply = live.post(
        f"/admin/v1/clients/{live.issuer['client_id']}/disable", None, live.admin_token()
    )
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"client_id": live.issuer["client_id"], "disabled": True}
    expect_error(register(live, issuer_token), 401, "UNAUTHORIZED")
    body = expect_error(grant(live, **creds(live.issuer, live.url)), 401, "UNAUTHORIZED")
    assert body["error"] == "invalid_client"
    # Others are untouched; a repeat is harmless; an unknown client is 404.
    assert live.verify("2|" + "A" * 22 + "|AAAAAAAA").status_code == 404
    again = live.post(
        f"/admin/v1/clients/{live.issuer['client_id']}/disable", None, live.admin_token()
    )
    assert again.status_code == 200
    unknown = live.post("/admin/v1/clients/iss_nobody/disable", None, live.admin_token())
    expect_error(unknown, 404, "SERVICE_REFERENCE_NOT_FOUND")


def test_disabling_a_client_with_the_cli_while_serving_cuts_it_off(live: LiveService) -> None:
    verifier_token = live.verifier_token()
    assert live.verify("2|" + "A" * 22 + "|AAAAAAAA", verifier_token).status_code == 404
    done = run_cli(
        "admin",
        "--data-dir",
        str(live.data_dir),
        "disable-client",
        "--client-id",
        live.verifier["client_id"],
        env=live.cli_env(),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["disabled"] is True
    expect_error(live.verify("2|" + "A" * 22 + "|AAAAAAAA", verifier_token), 401, "UNAUTHORIZED")
    body = expect_error(grant(live, **creds(live.verifier, live.url)), 401, "UNAUTHORIZED")
    assert body["error"] == "invalid_client"
    assert register(live, live.issuer_token()).status_code == 201
