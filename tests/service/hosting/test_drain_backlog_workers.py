"""A stopping `serve --workers` worker takes every queued connection before it closes its
listener, even when the first one's client has already gone (issue 37 #7).

The worker (`GuardedThreadWorker`, as `serve --workers` runs it) accepts what the kernel has
queued and then closes the listening socket, so that later clients are refused rather than reset
after sending. It used to stop at the first accept that left it with no more connections than
before: a connection whose client had closed is dropped at once by the guard (it reads the end),
so the loop ended there, and the connections queued behind it were reset with the listener. Here
the worker is real but not forked or run: its shutdown step is called on a real listening socket
with three real connections queued, the first one already closed by its client.
"""

from __future__ import annotations

import os
import selectors
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from service.hosting.gunicorn_guard import GuardedThreadWorker
from testbed.waiting import wait_until

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: t\r\n"  # no blank line: the head is not whole yet


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock
    sock.close()


def _worker(listener: socket.socket) -> GuardedThreadWorker:
    cfg = Config()
    worker = GuardedThreadWorker(0, os.getpid(), [listener], None, 30, cfg, Logger(cfg))
    worker.poller = selectors.DefaultSelector()
    worker.tpool = ThreadPoolExecutor(1)
    worker.method_queue.init()
    worker.set_accept_enabled(True)
    return worker


def _queued(listener: socket.socket) -> bool:
    poll = selectors.DefaultSelector()
    poll.register(listener, selectors.EVENT_READ)
    try:
        return bool(poll.select(0))
    finally:
        poll.close()


def test_a_stopping_worker_takes_every_queued_connection_past_a_gone_one(
    listener: socket.socket,
) -> None:
    worker = _worker(listener)
    gone = socket.create_connection(listener.getsockname(), timeout=10)
    gone.close()  # its client closed before the worker accepted it
    waiting = [socket.create_connection(listener.getsockname(), timeout=10) for _ in range(2)]
    for sock in waiting:
        sock.sendall(PARTIAL)
    wait_until(lambda: _queued(listener), "the connections to be queued", 10)
    try:
        worker.alive = False
        worker.set_accept_enabled(False)  # the shutdown step: accept what is queued, close
        assert listener.fileno() == -1  # the listener is closed
        assert len(worker.reading) == 2, "a queued connection was left to the listener's reset"
        for sock in waiting:  # each still open: its request can be finished and read
            sock.sendall(b"\r\n")
        assert worker.nr_conns == 2
    finally:
        for sock in waiting:
            sock.close()
        for reading in list(worker.reading.values()):
            reading.conn.close()
        worker.tpool.shutdown(wait=False)
        worker.poller.close()
        worker.method_queue.close()
        worker.tmp.close()  # gunicorn's heartbeat file
