"""Stopping waitress without dropping the requests it is serving (issue 22).

Waitress's own `run()` ends its loop on KeyboardInterrupt and the process exits with whatever
its threads were answering still unsent: a SIGTERM under load (`systemctl stop`, `docker stop`)
reset every connection in flight. `serve_until_stopped` runs the same loop until a stop is asked
for (`StopControl.request_stop`: from a signal handler, or from the app when it quits) and then
drains:

1. the connections the kernel has already completed are accepted, then the listening socket is
   closed, so later connections are refused before anything is sent (a client or balancer can
   retry elsewhere) rather than reset after sending;
2. every answer from then on says `Connection: close`; a keep-alive connection with nothing in
   flight is closed once BUSY_CLIENT_WINDOW has passed since its last answer (unless its next
   request is already waiting on the socket: that is answered), and one that has not sent a byte
   yet gets FRESH_WAIT to start its request;
3. the loop runs on (reading, the deadline sweep of `waitress_guard`, writing answers) until no
   request is in flight, or the grace period (`--graceful-timeout`, 30 s) is over;
4. then the worker threads are stopped and every socket closed. The caller closes (and compacts)
   the store afterwards, as before.

An idle connection is closed gently: a FIN first (`shutdown(SHUT_WR)`), then whatever the client
still sends is read and dropped until it closes its side, for at most LINGER. Closed at once, a
socket that receives a request sent just as the close crossed it answers with a reset; the
client sees "connection reset" on a connection it had every reason to think usable, and cannot
tell whether its request was processed (issue 37 #7). After a FIN it sees the connection end.

A second stop signal does not wait: `StopControl.on_signal` exits the process at once (the store
survives that as it survives SIGKILL).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.task import WSGITask

from service.hosting.syn_gate import SETTLE, close_gate, connection_waiting

log = logging.getLogger("service.server")

DEFAULT_GRACE = 30.0
FRESH_WAIT = 1.0
"""How long a connection that has sent nothing yet may take to start its request once draining
(accepted just before the stop, or from the backlog): long enough for a client that connected
to send, short enough that a browser's idle pre-connection does not hold a stop."""
BUSY_CLIENT_WINDOW = 0.25
"""How long after its last answer an idle keep-alive connection stays open once draining.

A busy client sends its next request within milliseconds of an answer: kept open that long, the
request is answered (with `Connection: close`) instead of meeting a close it cannot tell from a
failure. A client that is not busy is closed at once, while it is not sending: its pool sees the
close before the next request and connects anew (refused: it retries elsewhere). Closing an idle
connection always races a client that sends at that very moment, so the window must not match a
pause clients commonly take. It is kept well under one second, the shortest `Retry-After` the
service sends: at 1.0 s, clients waiting out a `Retry-After: 1` on their keep-alive connection
woke exactly as the drain closed it (two connection resets in the TinyDB chaos soak)."""
LINGER = 2.0
"""How long a gently closed connection is read (and what arrives dropped) waiting for the
client's own close, before it is closed regardless."""
_DRAIN_POLL = 0.05
_THREADS_JOIN = 2.0
_FORCED_EXIT = 1


class DrainAwareTask(WSGITask):  # type: ignore[misc]
    """A WSGI task that closes its connection after the answer once the server drains, so a
    keep-alive client sends its next request on a new connection (to another server)."""

    def build_response_header(self) -> bytes:
        if getattr(self.channel.server, "draining", False):
            # As if the client had asked: waitress then closes after the answer and says so,
            # for HTTP/1.0 keep-alive as for 1.1.
            self.request.headers["CONNECTION"] = "close"
        return bytes(super().build_response_header())


class StopControl:
    """Asks a running `serve_until_stopped` to drain and stop; thread- and signal-safe."""

    def __init__(self, grace: float = DEFAULT_GRACE) -> None:
        self.grace = grace
        self._stop = threading.Event()
        self._wake: Callable[[], None] | None = None
        self.signals = 0

    @property
    def attached(self) -> bool:
        """Whether a `serve_until_stopped` loop listens to this control."""
        return self._wake is not None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def attach(self, server: Any) -> None:
        # Without a thunk, waitress's pull_trigger takes no lock: safe inside a signal handler.
        self._wake = server.pull_trigger

    def request_stop(self) -> None:
        self._stop.set()
        wake = self._wake
        if wake is not None:
            with contextlib.suppress(OSError):  # the loop has already closed its trigger
                wake()

    def on_signal(self, signum: int, frame: object) -> None:
        """SIGTERM/SIGINT: the first drains, a second stops at once."""
        self.signals += 1
        if self.signals > 1:
            with contextlib.suppress(OSError):
                os.write(2, b"second stop signal: stopping at once\n")
            os._exit(_FORCED_EXIT)
        self.request_stop()


def serve_until_stopped(server: Any, control: StopControl) -> None:
    """`server.run()` (a waitress server made with `asyncore_use_poll`) until `control` asks to
    stop; then drain and close every socket. Returns once all is closed."""
    control.attach(server)
    socket_map = server._map
    use_poll = bool(server.adj.asyncore_use_poll)
    timeout = float(server.adj.asyncore_loop_timeout)
    try:
        while not control.stopping and socket_map:
            wasyncore.loop(timeout=timeout, map=socket_map, use_poll=use_poll, count=1)
        if socket_map:
            _drain(server, control.grace, use_poll)
    finally:
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=_THREADS_JOIN)
        wasyncore.close_all(socket_map)
        lingering = getattr(server, "lingering", None)
        if lingering is not None:
            lingering.close_all()


def _drain(server: Any, grace: float, use_poll: bool) -> None:
    started = time.monotonic()
    deadline = started + grace
    fresh_until = started + FRESH_WAIT
    server.draining = True
    lingering = Lingering()
    server.lingering = lingering
    # Closing the gate first (service.hosting.syn_gate) leaves nothing new to arrive between
    # the last accept and the close, so nobody is reset by it; what is under way is waited for.
    gated = server.socket is not None and close_gate(server.socket)
    _accept_backlog(server, SETTLE if gated else 0.0)
    if server.socket is not None:
        wasyncore.dispatcher.close(server)  # the listener only; the trigger stays to wake us
    while True:
        now = time.monotonic()
        fresh_may_wait = now < fresh_until
        waiting = [
            c for c in _channels(server) if not _settle(c, fresh_may_wait, time.time(), lingering)
        ]
        lingering.read(now)
        if not waiting and not lingering:
            break
        if now >= deadline:
            if waiting:
                log.warning(
                    "stopping with %d request(s) unfinished after the %.0f s grace period",
                    len(waiting),
                    grace,
                )
            return
        server.maintenance(time.time())  # header deadline, body rate, idle sweep
        wasyncore.loop(timeout=_DRAIN_POLL, map=server._map, use_poll=use_poll, count=1)
    # Let the last closes and writes happen before everything is torn down.
    wasyncore.loop(timeout=0, map=server._map, use_poll=use_poll, count=1)
    log.info("drained in %.2f s", time.monotonic() - started)


def _channels(server: Any) -> list[HTTPChannel]:
    return [c for c in list(server._map.values()) if isinstance(c, HTTPChannel)]


def _settle(
    channel: HTTPChannel, fresh_may_wait: bool, now: float, lingering: Lingering | None = None
) -> bool:
    """True when `channel` needs no more waiting (nothing in flight; closed if idle: gently
    when `lingering` takes it). `now` is wall-clock time, the clock of waitress's
    `last_activity`."""
    if not channel.connected or channel.will_close:
        return True  # closing on the loop's next turn
    in_flight = bool(
        channel.requests
        or channel.request is not None
        or channel.total_outbufs_len
        or channel.close_when_flushed
    )
    if in_flight:
        return False
    if _waiting_data(channel):
        return False  # its next request is on the socket: read and answer it
    if fresh_may_wait and not getattr(channel, "has_received", True):
        return False
    if now - channel.last_activity < BUSY_CLIENT_WINDOW:
        return False
    # At once: the less time between the look and the close, the better.
    if lingering is None or not lingering.take(channel):
        channel.handle_close()
    return True


class Lingering:
    """Connections closed gently (a FIN sent), read until the client closes too or LINGER."""

    def __init__(self) -> None:
        self._socks: list[tuple[socket.socket, float]] = []

    def __bool__(self) -> bool:
        return bool(self._socks)

    def take(self, channel: HTTPChannel) -> bool:
        """Send the FIN and take the socket out of waitress's hands; False when that failed
        (the caller then closes it as before)."""
        sock = channel.socket
        if sock is None or isinstance(sock, ssl.SSLSocket):  # TLS: closed as before
            return False
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return False
        channel.socket = None  # waitress's close below then leaves the socket to us
        channel.handle_close()
        self._socks.append((sock, time.monotonic() + LINGER))
        return True

    def read(self, now: float) -> None:
        """Drop what each one has received; close those whose client closed, or past LINGER."""
        kept = []
        for sock, until in self._socks:
            if drained(sock) or now >= until:
                with contextlib.suppress(OSError):
                    sock.close()
            else:
                kept.append((sock, until))
        self._socks = kept

    def close_all(self) -> None:
        for sock, _ in self._socks:
            with contextlib.suppress(OSError):
                sock.close()
        self._socks = []


def drained(sock: socket.socket) -> bool:
    """Read and drop what is there (a bounded amount per turn); True once the client has
    closed its side (or reset)."""
    for _ in range(16):
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        if not data:
            return True
    return False


def _waiting_data(channel: HTTPChannel) -> bool:
    sock = channel.socket
    if isinstance(sock, ssl.SSLSocket):
        # TLS allows no peeking (recv flags raise): bytes decrypted but unread, or on the wire.
        if sock.pending():
            return True
        try:
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return False  # closed under us: nothing to answer
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return False  # reset by the client: nothing to answer


def _accept_backlog(server: Any, settle: float) -> None:
    """Take every connection the kernel completed before the listener closes (those clients may
    already have sent a request), up to the connection limit; behind a closed gate, also those
    whose handshake completes within `settle` seconds."""
    if server.socket is None:
        return
    limit = server.adj.connection_limit
    for _ in range(limit):  # bounded: an accept that fails takes its connection all the same
        if len(server._map) >= limit or not connection_waiting(server.socket, settle):
            break
        server.handle_accept()
