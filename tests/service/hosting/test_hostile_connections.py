"""Connections built to lock everyone out, against the real waitress server (issue 15, items 1-2).

Raw sockets play the attacker: hundreds of clients trickling headers or holding idle keep-alive
connections, a Content-Length the body never reaches, and large bodies streamed at routes that
would refuse them on their headers alone. The server must keep answering normal requests and
must refuse from the head, reading (almost) nothing of such bodies. Deadlines are shortened
through the module's constants so the test does not wait out the production values.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator

import pytest

from service.hosting import waitress_guard
from testbed import web
from testbed.factories import sealed_record
from tests.service.conftest import LiveService


@pytest.fixture
def short_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waitress_guard, "HEADER_TIMEOUT", 1.0)
    monkeypatch.setattr(waitress_guard, "BODY_GRACE", 1.0)


def _address(live: LiveService) -> tuple[str, int]:
    host, port = live.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def _sockets(live: LiveService, count: int) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            opened.append(socket.create_connection(_address(live), timeout=5))
        yield opened
    finally:
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.close()


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def _read_response(sock: socket.socket, timeout: float = 10) -> tuple[int, bytes]:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, body


def test_normal_requests_answer_while_hundreds_of_clients_trickle_or_idle(
    live: LiveService, short_deadlines: None
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    token = live.verifier_token()
    with _sockets(live, 200) as slow, _sockets(live, 200) as idle:
        for sock in slow:
            sock.sendall(b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n")
        for sock in idle:  # a complete request, then the connection is kept and left idle
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answered = 0
        for _ in range(5):
            reply = web.post(
                f"{live.url}/v1/verifications/payload",
                json={"barcode": sealed.payload},
                headers={"Authorization": f"Bearer {token}"},
                timeout=5,
            )
            answered += reply.status_code == 200
            for sock in slow[:50]:  # still trickling: one byte each
                with contextlib.suppress(OSError):
                    sock.sendall(b"X")
        assert answered == 5
        # The tricklers are cut off once their headers are overdue.
        assert sum(_closed_by_server(sock, 3.0) for sock in slow[:20]) == 20


def test_a_body_shorter_than_its_content_length_is_cut_off(
    live: LiveService, short_deadlines: None
) -> None:
    with _sockets(live, 1) as (sock,):
        sock.sendall(
            b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 20000\r\n"
            + f"Authorization: Bearer {live.verifier_token()}\r\n\r\n".encode()
            + b'{"barcode": "'
        )
        assert _closed_by_server(sock, 5.0)


def test_an_unauthenticated_body_is_refused_from_the_headers(live: LiveService) -> None:
    """A 5 MB Content-Length to an issuer route with a bad token: 401 at once, nothing read."""
    with _sockets(live, 1) as (sock,):
        sock.sendall(
            b"POST /v1/registerNonPIIBatch HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 5000000\r\n"
            b"Authorization: Bearer forged\r\n\r\n"
        )
        status, body = _read_response(sock)
    assert status == 401
    assert json.loads(body)["code"] == "UNAUTHORIZED"


@pytest.mark.parametrize(
    ("path", "limit"), [("/oauth/token", 8 * 1024), ("/v1/verifications/payload", 32 * 1024)]
)
def test_a_streamed_body_stops_at_the_routes_limit(
    live: LiveService, path: str, limit: int
) -> None:
    """Chunked bodies have no Content-Length to refuse up front: the server stops reading at
    the route's own limit (not its 32 MiB cap) and answers 413 while the client still sends."""
    token = live.verifier_token()
    with _sockets(live, 1) as (sock,):
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"4000\r\n" + b" " * 0x4000 + b"\r\n"  # 16 KiB of JSON whitespace
        sent = 0
        with contextlib.suppress(OSError):
            while sent < 15 * 1024 * 1024:
                sock.sendall(chunk)
                sent += 0x4000
                if sent > 4 * limit:
                    break
        status, body = _read_response(sock)
    assert status == 413, body
    assert json.loads(body)["code"] == "PAYLOAD_TOO_LARGE"
    assert f"limit of {limit} bytes" in json.loads(body)["detail"]


def test_a_declared_length_over_the_route_limit_is_refused_unread(live: LiveService) -> None:
    """Not one byte of the declared 15 MB is ever sent: an answer at all means the server did
    not wait for the body (waiting, it would not answer before `_read_response` gives up)."""
    with _sockets(live, 1) as (sock,):
        sock.sendall(
            b"POST /oauth/token HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 15000000\r\n\r\n"
        )
        status, body = _read_response(sock)
    assert status == 413 and json.loads(body)["code"] == "PAYLOAD_TOO_LARGE"
