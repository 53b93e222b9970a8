"""After SIGTERM `serve --workers` closes idle keep-alive connections without a reset (issue 37
#7), as the single-process server does (test_drain_idle_close): a FIN first, then what the
client still sends is read and dropped.

gunicorn's worker kept an idle connection up to 2 s after the signal, then closed it outright:
a request crossing that close on the wire (a client sending its next request just then, as the
chaos soak's clients do all the time) met a reset, and the client cannot tell whether its request
was processed. The race is made deterministic as in the single-process test: each client waits
until it has seen the server's close, then sends a request on the connection anyway. A real
`serve --workers 2` on PostgreSQL + Redis.
"""

from __future__ import annotations

import signal
import socket

from testbed.cluster import Instance, Server
from testbed.waiting import wait_until
from tests.service.hosting.test_drain_idle_close import requests_crossing_the_close
from tests.service.hosting.test_drain_single import (
    DEADLINE,
    _address,
    _keep_alive_exchange,
    _refuses_connections,
)
from tests.service.hosting.test_slow_clients_workers import instance

__all__ = ["instance"]  # the fixture, shared with the slow-client tests

IDLE = 8


def test_idle_keep_alive_connections_end_without_a_reset_on_workers(instance: Instance) -> None:
    with Server.start(instance, 2) as server:
        idle = [
            socket.create_connection(_address(server.url), timeout=DEADLINE) for _ in range(IDLE)
        ]
        for sock in idle:
            _keep_alive_exchange(sock)
        server.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: _refuses_connections(server.url), "the listener to close", DEADLINE)
        resets = requests_crossing_the_close(idle)
        assert resets == [], f"{len(resets)} of {IDLE} idle connections failed: {resets}"
        assert server.proc.wait(DEADLINE) == 0
        assert "Traceback" not in server.log()
