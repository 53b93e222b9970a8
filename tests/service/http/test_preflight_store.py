"""A request's head is judged without the store (`ApiPlugin.refusal_before_body`).

The single-process server asks the preflight on its I/O thread, the one thread that reads and
writes every connection. The preflight used to read the caller's client from the store there:
with PostgreSQL refusing connections, each authenticated request held every other connection for
the pool's 10 s wait and was then refused before its body was read (on a busy machine the client
saw a dropped connection instead of the 503). Now the token is judged on itself there, and the
client's state is read by the pipeline on a worker thread, or before any other early refusal, so
that a disabled client is still told so first.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import jwt
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from psycopg import sql

from service.composition.instance import domain_for, load_master_key, make_config, open_store
from service.domain import signing_keys
from service.hosting.server import Running, start
from service.protocol.encoding import b64url_encode
from testbed.cluster import ADMIN_DATABASE_URL, Instance, throwaway_database
from testbed.factories import sealed_record
from testbed.oauth import fetch_token

pytestmark = pytest.mark.postgres

VERIFY = "/v1/verifications/payload"


@contextlib.contextmanager
def _served(tmp_path: Path) -> Iterator[tuple[Running, Instance, str]]:
    with throwaway_database("pv_preflight") as database_url:
        instance = Instance.create(tmp_path / "data", database_url)
        running = start(instance.data_dir, store_kind="postgres", database_url=database_url)
        try:
            yield running, instance, database_url
        finally:
            running.stop()


def _refuse_connections(database_url: str) -> None:
    """The database takes no new connection and loses the ones it had (the pool's too)."""
    name = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(ADMIN_DATABASE_URL, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(str(name)))
        )
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed without an answer: {raw[:200]!r}"
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the middle of the answer"
        body += chunk
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize("keys_due", [False, True], ids=["keys-fresh", "keys-refresh-due"])
def test_other_clients_are_answered_while_a_request_waits_for_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys_due: bool
) -> None:
    """keys-refresh-due: the signing keys are due a re-read at every look (REFRESH_SECONDS 0),
    so a head check that refreshed them would wait for the store on the I/O thread and refuse
    the request from its head; it judges the token by the keys as last read instead."""
    if keys_due:
        monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0.0)
    with _served(tmp_path) as (running, instance, database_url):
        address = _address(running)
        verifier = instance.verifier
        token = fetch_token(running.url, verifier["client_id"], verifier["client_secret"])
        _refuse_connections(database_url)
        body = json.dumps({"barcode": sealed_record(b64url_encode(b"\0" * 32)).payload})
        head = _head(token, len(body))
        with (
            socket.create_connection(address, timeout=60) as waiting,
            socket.create_connection(address, timeout=60) as other,
        ):
            waiting.sendall(head)  # the head only: the preflight judges it now
            other.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            status, _, _ = _read_answer(other)
            assert status == 200
            # Its token is good, so the first request is waiting for its body, not refused from
            # its head after a wait for the store.
            waiting.setblocking(False)
            with pytest.raises(BlockingIOError):
                waiting.recv(1)
            waiting.setblocking(True)
            waiting.sendall(body.encode())
            status, headers, answer = _read_answer(waiting)
        assert status == 503, answer
        assert headers.get("retry-after")
        assert json.loads(answer)["code"] == "SERVICE_UNAVAILABLE"


def test_a_disabled_client_is_told_so_before_its_body_is_refused(tmp_path: Path) -> None:
    """The token is valid but its client is disabled: a declared body over the route's limit is
    refused from the head with UNAUTHORIZED, as the pipeline would refuse it, not with
    PAYLOAD_TOO_LARGE."""
    with _served(tmp_path) as (running, instance, _):
        verifier = instance.verifier
        token = fetch_token(running.url, verifier["client_id"], verifier["client_secret"])
        instance.cli("disable-client", "--client-id", verifier["client_id"])
        with socket.create_connection(_address(running), timeout=60) as sock:
            sock.sendall(_head(token, 10 * 1024 * 1024))  # and not a byte of the body
            status, _, answer = _read_answer(sock)
        assert status == 401, answer
        assert json.loads(answer)["code"] == "UNAUTHORIZED"


def test_a_token_of_a_key_rotated_in_elsewhere_is_left_to_the_request_to_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head check does not read the store, so a token signed by a key it does not know is
    refused from the head only while the keys as last read are fresh; when a re-read is due, a
    rotation elsewhere (another host, the CLI) may have made that key, and the request's own
    check, which reads the keys, decides."""
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 3600.0)
    with _served(tmp_path) as (running, instance, database_url):
        verifier = instance.verifier
        fetch_token(running.url, verifier["client_id"], verifier["client_secret"])  # keys read
        forged = jwt.encode(
            {"sub": verifier["client_id"], "scope": "service:verifier", "exp": 2**40},
            Ed25519PrivateKey.generate(),
            algorithm="EdDSA",
            headers={"kid": "made-up-key"},
        )
        with socket.create_connection(_address(running), timeout=60) as sock:
            sock.sendall(_head(forged, 10 * 1024 * 1024))  # and not a byte of the body
            status, _, answer = _read_answer(sock)
        assert status == 401, answer

        instance.cli("rotate-signing-key")
        elsewhere = _granted_on_another_host(instance, running.url, database_url)
        monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0.0)  # a re-read is due now
        body = json.dumps({"barcode": sealed_record(b64url_encode(b"\0" * 32)).payload})
        with socket.create_connection(_address(running), timeout=60) as sock:
            sock.sendall(_head(elsewhere, len(body)))
            sock.sendall(body.encode())
            status, _, answer = _read_answer(sock)
        # The token was accepted: the answer is about the (unregistered) payslip.
        assert status == 404 and json.loads(answer)["code"] == "SERVICE_REFERENCE_NOT_FOUND"


def _granted_on_another_host(instance: Instance, url: str, database_url: str) -> str:
    """A verifier token issued by another host of the same instance (its own domain on the same
    database), signed by the key it reads there now."""
    store = open_store(instance.data_dir, "postgres", database_url)
    try:
        domain = domain_for(store, make_config(load_master_key(instance.data_dir), url))
        verifier = instance.verifier
        granted = domain.tokens.grant(
            {
                "grant_type": "client_credentials",
                "client_id": verifier["client_id"],
                "client_secret": verifier["client_secret"],
                "audience": url,
            }
        )
    finally:
        store.close()
    return granted.access_token


def _address(running: Running) -> tuple[str, int]:
    parts = urlsplit(running.url)
    return str(parts.hostname), int(parts.port or 0)


def _head(token: str, length: int) -> bytes:
    return (
        f"POST {VERIFY} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()
