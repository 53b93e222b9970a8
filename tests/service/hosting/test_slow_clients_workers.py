"""Slow clients cannot hold `serve --workers` (issue 22): a real `serve --workers 2` on
PostgreSQL + Redis, with the slow-client deadlines lowered by configuration.

300 connections send a partial head and 110 a body, a byte every half second, with a token or
without. Meanwhile normal verifications on new connections are answered (each within a client
timeout far below the time the slow connections are kept trickling), and every slow connection
is cut by the server. gunicorn's plain gthread worker failed both: every thread was held by a
slow connection and none was ever cut.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testbed import web
from testbed.cluster import Instance, Server, new_instance, registered, token

HEADS = 300
BODIES = 110
TRICKLE_FOR = 30.0
"""The longest the test keeps trickling; the server must cut every slow connection before."""
LIMITS = {
    "PAYSLIP_HEADER_TIMEOUT": "2",
    "PAYSLIP_BODY_GRACE": "2",
    "PAYSLIP_BODY_MIN_RATE": "1024",
    "PAYSLIP_RATE_LIMIT_IP": "off",
}


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[Instance]:
    with new_instance(tmp_path / "d") as made:
        yield made


def verify_status(url: str, payload: str, bearer: str) -> int:
    """The status of one verify request on a fresh connection (the server still serves)."""
    reply = web.post(
        f"{url}/v1/verifications/payload",
        json={"barcode": payload},
        headers={"Authorization": f"Bearer {bearer}"},
        timeout=8,
    )
    return int(reply.status_code)


class Trickle:
    """Slow connections sending a byte each per round; `cut` are those the server closed."""

    def __init__(self, url: str, starts: list[bytes]) -> None:
        parts = urlsplit(url)
        address = (parts.hostname or "", parts.port or 0)
        self.socks: list[socket.socket] = []
        for start in starts:
            sock = socket.create_connection(address, timeout=10)
            sock.sendall(start)
            sock.setblocking(False)
            self.socks.append(sock)
        self.cut: set[socket.socket] = set()
        self.all_cut = threading.Event()  # set once the server has closed every one
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            for sock in self.socks:
                if sock in self.cut:
                    continue
                if self._closed(sock):
                    self.cut.add(sock)
                    continue
                with contextlib.suppress(BlockingIOError):
                    try:
                        sock.send(b"a")
                    except OSError:
                        self.cut.add(sock)
            if len(self.cut) == len(self.socks):
                self.all_cut.set()

    @staticmethod
    def _closed(sock: socket.socket) -> bool:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        try:
            return sock.recv(65536) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def assert_all_cut(self, within: float) -> None:
        """Every slow connection closed by the server within `within` seconds."""
        self.all_cut.wait(within)
        assert len(self.cut) == len(self.socks), (
            f"{len(self.socks) - len(self.cut)} slow connections still open"
        )

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        for sock in self.socks:
            sock.close()


def test_slow_heads_and_bodies_neither_hold_nor_stay(instance: Instance) -> None:
    with Server.start(instance, 2, env=LIMITS) as server:
        sealed = registered(server.url, instance)
        bearer = token(server.url, instance.verifier)
        head = b"POST /v1/verifications/payload HTTP/1.1\r\nHost: t\r\nContent-Type: appl"
        body_head = (
            "POST /v1/verifications/payload HTTP/1.1\r\nHost: t\r\n"
            "Content-Type: application/json\r\nContent-Length: 5000\r\n{auth}\r\n{{"
        )
        starts = [head] * HEADS + [
            body_head.format(auth=f"Authorization: Bearer {bearer}\r\n" if i % 2 else "").encode()
            for i in range(BODIES)
        ]
        trickle = Trickle(server.url, starts)
        trickle.thread.start()
        try:
            answered = 0
            with web.client(timeout=8) as client:
                for _ in range(20):  # a new connection each time: any worker, any thread
                    reply = client.post(
                        f"{server.url}/v1/verifications/payload",
                        json={"barcode": sealed.payload},
                        headers={"Authorization": f"Bearer {bearer}", "Connection": "close"},
                    )
                    assert reply.status_code == 200, reply.text
                    answered += reply.json()["verified"] is True
            assert answered == 20
            trickle.assert_all_cut(TRICKLE_FOR)
        finally:
            trickle.close()
        assert verify_status(server.url, sealed.payload, bearer) == 200  # still serving
        assert server.terminate() == 0
    assert "Traceback" not in server.log()
