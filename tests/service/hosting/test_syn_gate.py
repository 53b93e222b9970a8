"""The listener's gate (service.hosting.syn_gate) on a real loopback socket: what was queued is
still accepted and answered, a new connection attempt is ignored (not reset), and once the
listener closes the next attempt is refused before anything is sent."""

from __future__ import annotations

import ctypes
import select
import socket
import struct
import sys

import pytest

from service.hosting.syn_gate import (
    SO_ATTACH_FILTER,
    close_gate,
    connection_waiting,
    gate_closed,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux filter")


def test_a_closed_gate_keeps_the_queue_and_ignores_new_connections() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        address = listener.getsockname()
        queued = socket.create_connection(address)
        queued.sendall(b"sent before the gate")
        assert not gate_closed(listener)

        assert close_gate(listener)
        assert gate_closed(listener)

        accepted, _ = listener.accept()  # the queued connection is still there, data and all
        with accepted, queued:
            assert accepted.recv(64) == b"sent before the gate"
            queued.sendall(b"and after")  # an established connection passes the filter
            assert accepted.recv(64) == b"and after"
            accepted.sendall(b"answered")
            assert queued.recv(64) == b"answered"

        late = socket.socket()
        late.settimeout(0.5)  # an open gate would connect at once: a timeout is the only pass
        with late, pytest.raises(TimeoutError):
            late.connect(address)
    refused = socket.socket()
    with refused, pytest.raises(ConnectionRefusedError):
        refused.connect(address)


def test_an_open_listener_reports_no_gate() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        assert not gate_closed(listener)


def test_a_longer_filter_of_someone_elses_is_seen_without_overrunning_a_buffer() -> None:
    """SO_GET_FILTER counts its buffer in instructions: asked with a length of zero it only
    answers how many there are (a 20-instruction filter once meant 160 bytes into 64)."""
    program = b"".join(struct.pack("HBBI", 0x06, 0, 0, 0xFFFFFFFF) for _ in range(20))
    code = ctypes.create_string_buffer(program, len(program))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        header = struct.pack("HP", 20, ctypes.addressof(code))
        listener.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, header)
        assert gate_closed(listener)


@pytest.mark.parametrize("without_poll", [False, True])
def test_a_waiting_connection_is_seen_with_or_without_poll(
    monkeypatch: pytest.MonkeyPatch, without_poll: bool
) -> None:
    """The single-process drain asks this on every platform; Windows has no select.poll, so it
    asks select() there (it once raised AttributeError on every stop of the desktop app)."""
    if without_poll:
        monkeypatch.delattr(select, "poll")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        assert not connection_waiting(listener)
        with socket.create_connection(listener.getsockname()):
            assert connection_waiting(listener, 5.0)  # returns as soon as it is queued
