"""`Expect: 100-continue` cannot hold `serve --workers` (issue 37 #6): a real `serve --workers 2`
on PostgreSQL + Redis, with the slow-client deadlines lowered by configuration.

110 connections send a head asking for `100 Continue`, then their bodies a byte every half
second, with a token or without. The guard used to hand such a head to a thread at once, where
gunicorn answered `100 Continue` and the thread waited for the body with no deadline: 16 threads,
110 connections, and /healthz stopped answering. Now the main loop answers `100 Continue` and
reads the body under the same deadlines as any other: /healthz answers throughout (each within a
client timeout far below the time the slow connections are kept trickling), every slow
connection is cut, and a well-behaved client that waits for `100 Continue` is answered once.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

from testbed import web
from testbed.cluster import Instance, Server, registered, token
from tests.service.hosting.test_slow_clients_workers import (
    LIMITS,
    Trickle,
    instance,
    verify_status,
)

__all__ = ["instance"]  # the fixture, shared with the other slow-client test

SLOW = 110
TRICKLE_FOR = 20.0
"""The longest the test waits for the server to cut every slow connection."""


def _expecting(bearer: str | None, length: int) -> bytes:
    auth = f"Authorization: Bearer {bearer}\r\n" if bearer else ""
    return (
        "POST /v1/verifications/payload HTTP/1.1\r\nHost: t\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n{auth}"
        "Expect: 100-continue\r\n\r\n"
    ).encode()


def _read_until(sock: socket.socket, marker: bytes, start: bytes = b"") -> bytes:
    data = start
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _polite_client(url: str, bearer: str, barcode: str) -> tuple[bytes, bytes]:
    """What curl does: the head, then wait for `100 Continue`, then the body; returns (what
    came before the body was sent, the rest of the answer)."""
    parts = urlsplit(url)
    body = json.dumps({"barcode": barcode}).encode()
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10) as sock:
        sock.sendall(_expecting(bearer, len(body)))
        interim = _read_until(sock, b"\r\n\r\n")
        sock.sendall(body)
        sock.shutdown(socket.SHUT_WR)
        rest = b""
        while chunk := sock.recv(65536):
            rest += chunk
    return interim, rest


def test_slow_bodies_after_100_continue_neither_hold_nor_stay(instance: Instance) -> None:
    with Server.start(instance, 2, env=LIMITS) as server:
        sealed = registered(server.url, instance)
        bearer = token(server.url, instance.verifier)
        interim, rest = _polite_client(server.url, bearer, sealed.payload)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        assert rest.startswith(b"HTTP/1.1 200 "), rest[:200]
        assert b"100 Continue" not in rest  # one interim answer, not a second from gunicorn
        starts = [_expecting(bearer if i % 2 else None, 5000) for i in range(SLOW)]
        trickle = Trickle(server.url, starts)
        trickle.thread.start()
        try:
            with web.client(timeout=5) as client:
                for _ in range(10):  # a new connection each time: any worker, any thread
                    reply = client.get(f"{server.url}/healthz", headers={"Connection": "close"})
                    assert reply.status_code == 200, reply.text
                    if trickle.all_cut.wait(1.0):
                        break  # every slow connection is gone: nothing left to hold a thread
            trickle.assert_all_cut(TRICKLE_FOR)
        finally:
            trickle.close()
        assert verify_status(server.url, sealed.payload, bearer) == 200  # still serving
        assert server.terminate() == 0
    assert "Traceback" not in server.log()
