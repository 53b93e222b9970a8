"""Nothing of a barcode reaches a server's log, and no caller writes a line of its own there
(issue 37 #3), on a real `serve` (single process) and a real `serve --workers 2`.

Every declared route is sent with the payload in each of its path parameters and with a method
it does not take, then the hostile paths the review used (`POST /v/<payload>`, `GET /x/<payload>`,
a bare base32 run, percent-encoded and raw control characters), all at DEBUG so that every line
the server can write is written. The whole log is then searched for the ciphertext (in each
encoding, and a fragment of it) and for a line the caller wrote.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    offline_config,
    open_store,
)
from service.http.routes import ROUTES
from service.protocol.encoding import b64url_encode, base32_encode
from testbed import web
from testbed.cluster import Server, new_instance, token
from testbed.factories import Sealed, sealed_record
from tests.service.cli.test_cli import Serve

FORGED = "FORGED-LINE level=INFO admin logged in"


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _raw(url: str, request_line: bytes, body: bytes = b"") -> bytes:
    """One request as bytes on a socket of its own (clients refuse to send such paths)."""
    with socket.create_connection(_address(url), timeout=10) as sock:
        head = request_line + b"\r\nHost: x\r\nConnection: close\r\n"
        if body:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        sock.sendall(head + b"\r\n" + body)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


def _send_everything(url: str, sealed: Sealed) -> None:
    payload = sealed.payload
    quoted = quote(payload, safe="").encode()
    for route in ROUTES:
        path = re.sub(r"<[^>]+>", "PAYLOAD", route.path)
        path_bytes = path.encode().replace(b"PAYLOAD", quoted)
        _raw(url, route.method.encode() + b" " + path_bytes + b" HTTP/1.1", b"{}")
        other = b"DELETE" if route.method != "DELETE" else b"PUT"
        _raw(url, other + b" " + path_bytes + b" HTTP/1.1")
    encoded = base32_encode(sealed.ciphertext).encode()
    hostile = [
        b"POST /v/" + quoted + b" HTTP/1.1",
        b"GET /v/" + quoted + b" HTTP/1.1",
        b"GET /x/" + quoted + b" HTTP/1.1",
        b"GET /" + encoded + b" HTTP/1.1",
        b"GET /a/b/" + encoded[:40] + b"/c HTTP/1.1",
        b"GET /nope%0a" + quote(FORGED).encode() + b" HTTP/1.1",
        b"GET /nope%0d%0a" + quote(FORGED).encode() + b" HTTP/1.1",
        b"GET /nope%E2%80%A8" + quote(FORGED).encode() + b" HTTP/1.1",
        b"GET /nope\x1b[2K\r" + FORGED.replace(" ", "_").encode() + b" HTTP/1.1",
        b"G\x0bET /healthz HTTP/1.1",
        b"POST /v1/verifications/payload/" + quoted + b" HTTP/1.1",
        b"GET /openapi.json/" + quoted + b" HTTP/1.1",
        b"GET /v1/records/" + quoted + b"/revoke?x=" + quoted + b" HTTP/1.1",
    ]
    for line in hostile:
        _raw(url, line, b'{"barcode": "' + payload.encode() + b'"}')


def _needles(sealed: Sealed) -> list[bytes]:
    ct = sealed.ciphertext
    b32 = base32_encode(ct).encode()
    return [
        b32[:26],
        b32[-26:],
        b64url_encode(ct).encode()[:22],
        base64.b64encode(ct)[:22],
        quote(sealed.payload, safe="").encode()[:30],
        sealed.payload.encode()[:30],
    ]


def _assert_clean(log: bytes, sealed: Sealed) -> None:
    assert log.strip(), "the server wrote nothing: the test would prove nothing"
    found = [n for n in _needles(sealed) if n in log]
    assert found == [], f"ciphertext in the log: {found}"
    forged = [line for line in log.splitlines() if b"FORGED" in line.split(b" ", 1)[0]]
    assert forged == [], forged
    assert not [line for line in log.splitlines() if line.startswith(b"FORGED")]
    assert b"\x1b" not in log and "\u2028".encode() not in log


@pytest.fixture
def single(tmp_path: Path) -> Iterator[tuple[str, Sealed, Serve]]:
    data_dir = tmp_path / "data"
    init_instance(data_dir)
    store = open_store(data_dir)
    try:
        admin = domain_for(store, offline_config(load_master_key(data_dir))).admin
        issuer = admin.create_issuer("Log Payroll").wire()
    finally:
        store.close()
    serve = Serve("--data-dir", str(data_dir), env={"PAYSLIP_LOG_LEVEL": "DEBUG"})
    try:
        url = serve.wait_listening()
        sealed = sealed_record(issuer["encryption_key"])
        reply = web.post(
            f"{url}/v1/registerNonPII",
            json=sealed.body,
            headers={"Authorization": f"Bearer {token(url, issuer)}"},
            timeout=10,
        )
        assert reply.status_code == 201, reply.text
        yield url, sealed, serve
    finally:
        serve.stop()


def test_single_process_log_holds_no_payload_and_no_forged_line(
    single: tuple[str, Sealed, Serve],
) -> None:
    url, sealed, serve = single
    _send_everything(url, sealed)
    assert serve.stop() == 0
    log = "".join(serve.stderr).encode()
    assert b"GET /v/<rest:path>" in log  # the routed path is logged as its template
    assert b"GET /x/\xe2\x80\xa6" in log  # an unknown path's payload segment as "…"
    _assert_clean(log, sealed)


@pytest.mark.postgres
def test_workers_log_holds_no_payload_and_no_forged_line(tmp_path: Path) -> None:
    with new_instance(tmp_path / "data") as instance:
        env = {"PAYSLIP_LOG_LEVEL": "DEBUG", "PAYSLIP_RATE_LIMIT_IP": "off"}
        with Server.start(instance, 2, env=env) as server:
            sealed = sealed_record(instance.issuer["encryption_key"])
            reply = web.post(
                f"{server.url}/v1/registerNonPII",
                json=sealed.body,
                headers={"Authorization": f"Bearer {token(server.url, instance.issuer)}"},
                timeout=10,
            )
            assert reply.status_code == 201, reply.text
            _send_everything(server.url, sealed)
            server.terminate()
            log = server.stderr_path.read_bytes()
    assert b'"route":"/v/<rest:path>"' in log or b"/v/<rest:path>" in log
    _assert_clean(log, sealed)
