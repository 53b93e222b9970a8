"""Issue 37 #8: what a correctly signed token must still be, and answers every client can trust.

A token signed with the instance's own key (a leaked one, or one minted by a bug) is refused when
its scope is not its client's role, when it was issued in the future beyond the clock skew, or
when it lives longer than the service's tokens do. The last enabled admin client cannot disable
itself over HTTP. Every answer, refusals made from a request's head before its body included,
carries `X-Content-Type-Options: nosniff` and `Referrer-Policy`.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import jwt
import pytest

from service.domain.clock import SystemClock
from service.domain.signing_keys import SigningKeys
from service.protocol.encoding import b64url_encode
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES
ADMIN, VERIFIER, ISSUER = "service:admin", "service:verifier", "service:issuer"


def _signed(live: LiveService, **claims: Any) -> str:
    """A token signed with the instance's current signing key: what its holder can mint."""
    kid, key = SigningKeys(live.store, live.config.master_key, SystemClock(), 900).current()
    now = int(time.time())
    config = live.config
    full = {
        "iss": config.auth_url,
        "iat": now,
        "exp": now + 900,
        "jti": b64url_encode(secrets.token_bytes(12)),
        "env": config.environment,
        **claims,
    }
    return jwt.encode(full, key, algorithm="EdDSA", headers={"kid": kid})


def _admin_get(live: LiveService, token: str) -> Any:
    return live.http.get(
        f"{live.url}/admin/v1/overview",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def test_a_scope_that_is_not_the_clients_role_is_refused(live: LiveService) -> None:
    config = live.config
    verifier_as_admin = _signed(
        live, sub=live.verifier["client_id"], aud=config.issuer_url, scope=ADMIN
    )
    expect_error(_admin_get(live, verifier_as_admin), 401, "UNAUTHORIZED")
    issuer_as_verifier = _signed(
        live, sub=live.issuer["client_id"], aud=config.verifier_url, scope=VERIFIER
    )
    expect_error(
        live.verify("2|" + "A" * 22 + "|AAAAAAAA", issuer_as_verifier), 401, "UNAUTHORIZED"
    )
    genuine = _signed(live, sub=live.admin_id, aud=config.issuer_url, scope=ADMIN)
    assert _admin_get(live, genuine).status_code == 200  # the same minting, the right role


def test_a_token_from_the_future_or_living_too_long_is_refused(live: LiveService) -> None:
    config = live.config
    now = int(time.time())
    admin = {"sub": live.admin_id, "aud": config.issuer_url, "scope": ADMIN}
    future = _signed(live, **admin, iat=now + 300, exp=now + 900)
    expect_error(_admin_get(live, future), 401, "UNAUTHORIZED")
    ten_years = _signed(live, **admin, iat=now, exp=now + 10 * 365 * 86400)
    expect_error(_admin_get(live, ten_years), 401, "UNAUTHORIZED")
    just_longer = _signed(live, **admin, iat=now, exp=now + 901)
    expect_error(_admin_get(live, just_longer), 401, "UNAUTHORIZED")
    skewed = _signed(live, **admin, iat=now + 30, exp=now + 900)  # within 60 s of skew
    assert _admin_get(live, skewed).status_code == 200


@pytest.mark.tinydb_only  # the PostgreSQL variant's database holds earlier tests' admin clients
def test_the_last_admin_client_cannot_disable_itself(live: LiveService) -> None:
    token = live.admin_token()
    reply = live.post(f"/admin/v1/clients/{live.admin_id}/disable", None, token)
    body = expect_error(reply, 409, "CONFLICT")
    assert "last enabled admin client" in body["detail"]
    assert _admin_get(live, token).status_code == 200  # still in
    other = live.post(f"/admin/v1/clients/{live.issuer['client_id']}/disable", None, token)
    assert other.status_code == 200, other.text  # any other client still can be


def _raw(url: str, request: bytes) -> bytes:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in answer and (chunk := sock.recv(65536)):
                answer += chunk
    return answer.partition(b"\r\n\r\n")[0]


def _has_security_headers(head: bytes) -> bool:
    lines = {line.lower() for line in head.split(b"\r\n")}
    return b"x-content-type-options: nosniff" in lines and any(
        line.startswith(b"referrer-policy: ") for line in lines
    )


def test_every_answer_carries_nosniff_and_referrer_policy(live: LiveService) -> None:
    """On the real listener (the single-process server's, or `serve --workers`'s): answers of
    the app, and the refusals the server makes from a head alone, before reading the body (a
    declared body over either server's buffer: 40 MB is refused before a byte of it is read)."""
    big = b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
    requests = {
        "healthz": b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "metrics": b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "404": b"GET /nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "405": b"DELETE /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "401 before the body": big + b"\r\nContent-Length: 40000000\r\n\r\n",
        "413 before the body": big
        + b"\r\nAuthorization: Bearer "
        + live.verifier_token().encode()
        + b"\r\nContent-Length: 40000000\r\n\r\n",
        "malformed": b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    }
    heads = {name: _raw(live.url, request) for name, request in requests.items()}
    # No token and too large: the single-process server's buffer cap answers first (413).
    assert heads["401 before the body"][:12] in (b"HTTP/1.1 401", b"HTTP/1.1 413"), heads
    assert heads["413 before the body"].startswith(b"HTTP/1.1 413"), heads
    assert heads["malformed"].split(b"\r\n")[0].endswith(b" 400 Validation Failed"), heads
    missing = [name for name, head in heads.items() if not _has_security_headers(head)]
    assert missing == [], {name: heads[name] for name in missing}
