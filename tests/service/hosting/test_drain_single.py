"""A stop drains the single-process server (issue 22): `python -m service serve` on SIGTERM, and
the embedded service when the app quits.

Requests are held in flight by clients that send part of their request and wait: the server
cannot answer them until the rest arrives, so they are certainly in flight when the signal comes.
The test then waits (polling, with a deadline) until the server refuses new connections, sends
the rest, and expects every one answered in full, with `Connection: close`.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from service.composition.instance import open_store
from service.hosting.server import start
from service.hosting.waitress_drain import _settle
from testbed.factories import sealed_record
from testbed.waiting import wait_until
from tests.service.cli.test_cli import Serve, cli, token

DEADLINE = 60.0


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _refuses_connections(url: str) -> bool:
    try:
        socket.create_connection(_address(url), timeout=2).close()
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        return True  # this probe reached the backlog just as the listener closed
    return False


def _keep_alive_exchange(sock: socket.socket) -> None:
    """One /healthz on `sock`, answered in full; the connection stays open (keep-alive)."""
    sock.sendall(HEALTHZ)
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += sock.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(
        next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        ).split(b":")[1]
    )
    while len(body) < length:
        body += sock.recv(65536)


class Partial:
    """A request sent up to `split` bytes; `finish` sends the rest and reads the whole answer."""

    def __init__(self, url: str, request: bytes, split: int) -> None:
        self.sock = socket.create_connection(_address(url), timeout=DEADLINE)
        self.request, self.split = request, split
        self.sock.sendall(request[:split])

    def finish(self) -> tuple[int, dict[str, str], bytes]:
        self.sock.sendall(self.request[self.split :])
        raw = b""
        while chunk := self.sock.recv(65536):  # the server closes after the answer
            raw += chunk
        self.sock.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        assert len(body) == int(headers["content-length"]), raw[:200]
        return int(status_line.split()[1]), headers, body


def _post(path: str, body: dict[str, Any], bearer: str) -> bytes:
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {bearer}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dict[str, Any]]:
    data_dir = tmp_path / "d"
    assert cli("init", "--data-dir", str(data_dir)).returncode == 0
    made = cli("admin", "--data-dir", str(data_dir), "create-issuer", "--name", "Acme")
    desk = cli("admin", "--data-dir", str(data_dir), "create-verifier", "--name", "Desk")
    yield {
        "data_dir": data_dir,
        "issuer": json.loads(made.stdout),
        "verifier": json.loads(desk.stdout),
    }


@contextlib.contextmanager
def _serving(instance: dict[str, Any], *args: str) -> Iterator[tuple[Serve, str]]:
    server = Serve("--data-dir", str(instance["data_dir"]), *args)
    try:
        yield server, server.wait_listening()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(30)
        server.stop()  # the process is gone by now: this closes its pipes


def test_sigterm_answers_every_request_in_flight_then_exits_0(
    instance: dict[str, Any],
) -> None:
    issuer, verifier = instance["issuer"], instance["verifier"]
    with _serving(instance) as (server, url):
        itok = token(url, issuer["client_id"], issuer["client_secret"])
        vtok = token(url, verifier["client_id"], verifier["client_secret"])
        sealed = sealed_record(issuer["encryption_key"])
        created = Partial(url, _post("/v1/registerNonPII", sealed.body, itok), 0)
        assert created.finish()[0] == 201
        verify = _post("/v1/verifications/payload", {"barcode": sealed.payload}, vtok)
        pending = sealed_record(issuer["encryption_key"])
        register = _post("/v1/registerNonPII", pending.body, itok)
        in_flight = [Partial(url, verify, len(verify) - 7) for _ in range(8)]  # bodies partly
        in_flight += [Partial(url, HEALTHZ, 20) for _ in range(4)]  # heads partly
        in_flight.append(Partial(url, register, len(register) // 2))
        idle = socket.create_connection(_address(url), timeout=DEADLINE)  # keep-alive, idle
        _keep_alive_exchange(idle)

        server.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: _refuses_connections(url), "the listener to close", DEADLINE)
        assert idle.recv(1) == b""  # the idle connection is closed in order, not reset
        idle.close()
        answers = [partial.finish() for partial in in_flight]
        assert server.proc.wait(DEADLINE) == 0

    for status, headers, body in answers[:8]:
        assert status == 200, body
        assert json.loads(body)["verified"] is True
        assert headers["connection"] == "close"
    assert [status for status, _, _ in answers[8:12]] == [200] * 4
    assert answers[12][0] == 201, answers[12][2]
    store = open_store(instance["data_dir"])
    try:  # acknowledged during the drain: stored
        assert store.get_record(pending.reference) is not None
    finally:
        store.close()
    assert "Traceback" not in "".join(server.stderr)


def test_a_second_signal_stops_at_once(instance: dict[str, Any]) -> None:
    with _serving(instance, "--graceful-timeout", "600") as (server, url):
        held = Partial(url, HEALTHZ, 10)  # never finished: the drain would wait 600 s
        server.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: _refuses_connections(url), "the listener to close", DEADLINE)
        assert server.proc.poll() is None  # still draining
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(DEADLINE) == 1
        held.sock.close()
    assert "second stop signal: stopping at once" in "".join(server.stderr)


def test_the_grace_period_bounds_the_drain(instance: dict[str, Any]) -> None:
    with _serving(instance, "--graceful-timeout", "1") as (server, url):
        held = Partial(url, HEALTHZ, 10)  # never finished
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(DEADLINE) == 0
        with contextlib.suppress(ConnectionResetError):
            assert held.sock.recv(1) == b""  # cut, not held open
        held.sock.close()
    assert "1 request(s) unfinished after the 1 s grace period" in "".join(server.stderr)


def test_the_embedded_service_drains_when_the_app_quits(tmp_path: Path) -> None:
    """`Running.stop()` (what the app calls on quit) answers the requests in flight first."""
    running = start(tmp_path / "d", init_if_missing=True)
    stopped = threading.Event()
    held = [Partial(running.url, HEALTHZ, 12) for _ in range(3)]
    idle = socket.create_connection(_address(running.url), timeout=DEADLINE)
    _keep_alive_exchange(idle)

    def stop() -> None:
        running.stop()
        stopped.set()

    stopper = threading.Thread(target=stop)
    stopper.start()
    wait_until(lambda: _refuses_connections(running.url), "the listener to close", DEADLINE)
    assert not stopped.is_set()  # waiting for the requests in flight
    assert idle.recv(1) == b""
    idle.close()
    answers = [partial.finish() for partial in held]
    stopper.join(DEADLINE)
    assert stopped.is_set()
    assert [(status, headers["connection"]) for status, headers, _ in answers] == [
        (200, "close")
    ] * 3


@pytest.fixture
def idle_channels() -> Iterator[Any]:
    """Real waitress channels over socket pairs, as a drain sees them between two requests."""
    from waitress.channel import HTTPChannel
    from waitress.server import create_server

    server = create_server(lambda environ, start_response: [], host="127.0.0.1", port=0)
    made: list[tuple[HTTPChannel, socket.socket]] = []

    def make(answered_ago: float, now: float) -> tuple[HTTPChannel, socket.socket]:
        ours, theirs = socket.socketpair()
        channel = HTTPChannel(server, ours, ("127.0.0.1", 1), server.adj, map={})
        channel.last_activity = now - answered_ago
        made.append((channel, theirs))
        return channel, theirs

    yield make
    for channel, peer in made:
        channel.close()  # a no-op for one the drain closed
        peer.close()
    server.close()


def test_a_drain_closes_an_idle_connection_before_a_retry_after_ends(idle_channels: Any) -> None:
    """A client waiting out `Retry-After: 1` (the shortest the service sends) on its keep-alive
    connection must find it closed when it wakes, not have it closed under the request it sends
    then (the TinyDB chaos soak's two resets). A client answered a moment ago keeps its
    connection for its next request; a request already waiting on the socket is answered."""
    now = 1_000_000.0
    sleeper, sleeper_peer = idle_channels(answered_ago=0.9, now=now)
    assert _settle(sleeper, False, now)
    assert not sleeper.connected
    assert sleeper_peer.recv(1) == b""  # the client's pool sees the close before it sends

    busy, _ = idle_channels(answered_ago=0.01, now=now)
    assert not _settle(busy, False, now)
    assert busy.connected

    next_request, peer = idle_channels(answered_ago=5.0, now=now)
    peer.sendall(HEALTHZ)
    assert not _settle(next_request, False, now)
    assert next_request.connected
