"""After SIGTERM the single-process server closes idle keep-alive connections without a reset
(issue 37 #7): a FIN first, then what the client still sends is read and dropped.

The race the chaos soak met (a client sending its next request just as the drain closed its
idle connection) is made deterministic: each client waits until it has seen the server's close,
then sends a request on the connection anyway, as a client whose request crossed the close on
the wire would have. A socket closed outright answers that with a reset; one closed gently
reads it, and the client sees the connection end.
"""

from __future__ import annotations

import signal
import socket

from testbed.waiting import wait_until
from tests.service.hosting.test_drain_single import (
    DEADLINE,
    HEALTHZ,
    _address,
    _keep_alive_exchange,
    _refuses_connections,
    _serving,
    instance,
)

__all__ = ["instance"]  # the fixture, shared with the other drain tests

IDLE = 8


def requests_crossing_the_close(idle: list[socket.socket]) -> list[str]:
    """On each closed idle connection, once its FIN is seen, send a request anyway (one that
    crossed the close on the wire); the errors met (resets), one per connection that failed."""
    resets: list[str] = []
    for sock in idle:
        assert sock.recv(1) == b""  # the server's FIN: the connection is over
        try:
            sock.sendall(HEALTHZ)
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(65536) == b""
        except OSError as exc:  # reset, or "not connected" once the reset came first
            resets.append(type(exc).__name__)
        finally:
            sock.close()
    return resets


def test_idle_keep_alive_connections_end_without_a_reset(instance: dict[str, object]) -> None:
    with _serving(instance) as (server, url):  # type: ignore[arg-type]
        idle = [socket.create_connection(_address(url), timeout=DEADLINE) for _ in range(IDLE)]
        for sock in idle:
            _keep_alive_exchange(sock)
        server.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: _refuses_connections(url), "the listener to close", DEADLINE)
        resets = requests_crossing_the_close(idle)
        assert resets == [], f"{len(resets)} of {IDLE} idle connections failed: {resets}"
        assert server.proc.wait(DEADLINE) == 0
    assert "Traceback" not in "".join(server.stderr)
