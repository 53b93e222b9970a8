"""`serve --workers N` made fit for slow clients (issue 22): whole requests before a thread.

gunicorn's gthread worker hands a connection to a pool thread as soon as it is readable, and the
thread reads the head and the body from a blocking socket with no deadline: ~16 connections
sending a byte a second held every thread of 2 workers x 8 threads, 300 made every request time
out, and none was ever cut. A deadline alone would not do: each slow connection would still hold
a thread until its deadline.

`GuardedThreadWorker` reads every request in the worker's main loop instead, non-blocking, as
waitress does: the head, then the body it declares, into a buffer. Only a complete request goes
to a thread, which then parses it from memory and never waits on the client. A request whose
head does not arrive within the header timeout, or whose body arrives slower than the minimum
rate after the grace period (`service.hosting.slow_clients`, from the environment), is cut off.
A head with
`Expect: 100-continue` (issue 37: 110 such connections, sending their bodies a byte a second, held
every thread of `serve --workers 2`) is answered `100 Continue` by the main loop itself, and its
body read there under the same deadlines as any other; the header is taken out of the buffered
head, so gunicorn does not send a second one. Handed over as they are (the application decides):
a declared body over MAX_BUFFERED (refused by the route's limit without being read), one that
would take the worker past BUDGET bytes held for requests being read, another expectation
(gunicorn answers 417), and a malformed head (gunicorn answers 400).
"""

from __future__ import annotations

import contextlib
import selectors
import time
from functools import partial
from typing import Any

from gunicorn import util as gunicorn_util

from service.domain.errors import ServiceError
from service.hosting.slow_clients import SlowClientLimits
from service.hosting.workers import DrainingThreadWorker
from service.http.errors import error_headers, error_json
from service.http.middleware import new_request_id
from service.protocol.errors import ErrorCode

MAX_HEAD = 64 * 1024
"""More than any legitimate head (gunicorn's own limits are lower); handed to gunicorn, which
answers 400, rather than buffered further."""
MAX_BUFFERED = 32 * 1024 * 1024
"""The largest body read in the main loop: the single-process server's cap
(service.hosting.server)."""
BUDGET = 96 * 1024 * 1024
"""The most bytes a worker reserves for requests being read at once (declared lengths): past it,
a request goes to a thread at its head, where the route refuses a body without a valid token
(or over its limit) before reading it, so bodies sent fast without a token cannot make a worker
hold gigabytes."""
_RECV = 64 * 1024  # below malloc's mmap threshold: a larger buffer costs an mmap per recv
_CHUNKED = -1
_AT_HEAD = -2
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _Reading:
    """A request being read by the main loop."""

    __slots__ = ("buf", "conn", "continue_due", "head_end", "needed", "room", "since", "started")

    def __init__(self, conn: Any, since: float, room: Any) -> None:
        self.conn = conn
        self.room = room  # () -> bytes the worker may still reserve
        self.buf = bytearray()
        self.since = since  # when the connection became ours to read (accept, keep-alive)
        self.started: float | None = None  # the request's first byte
        self.head_end = -1
        self.needed: int | None = None
        self.continue_due = False
        """The head asked for `100 Continue` (and the header was taken out): send it once."""

    def take(self, data: bytes, now: float) -> bool:
        """Add received bytes; True once the request is complete (or must go as it is)."""
        if self.started is None:
            self.started = now
        self.buf += data
        if self.head_end < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return len(self.buf) > MAX_HEAD
            self.head_end = end + 4
            self.needed, expects = _needed(bytes(self.buf[:end]), self.head_end)
            if self.needed > self.room():
                self.needed = _AT_HEAD
            elif expects:
                self._take_expect_out(end)
        if self.needed == _AT_HEAD:
            return True
        if self.needed == _CHUNKED:
            return self.buf.endswith(b"0\r\n\r\n") or len(self.buf) > MAX_BUFFERED
        return len(self.buf) >= (self.needed or 0)

    def _take_expect_out(self, end: int) -> None:
        """Remove the `Expect` line from the buffered head (the main loop answers it)."""
        lines = bytes(self.buf[:end]).split(b"\r\n")
        kept = b"\r\n".join(line for line in lines if not line.lower().startswith(b"expect:"))
        removed = end - len(kept)
        self.buf[:end] = kept
        self.head_end -= removed
        if self.needed is not None and self.needed > 0:
            self.needed -= removed
        self.continue_due = True

    def too_slow(self, limits: SlowClientLimits, now: float) -> bool:
        if self.started is None:  # connected, nothing sent yet
            return now - self.since > limits.header_timeout
        return limits.too_slow(now - self.started, self.head_end >= 0, len(self.buf))


def _needed(head: bytes, body_start: int) -> tuple[int, bool]:
    """How many bytes the whole request has, from its head (or _CHUNKED, or _AT_HEAD), and
    whether it asks for `100 Continue` (HTTP/1.1 only: HTTP/1.0 ignores the expectation)."""
    length = 0
    chunked = False
    expects = False
    lines = head.split(b"\r\n")
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return _AT_HEAD, False  # gunicorn answers 400
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"expect":
            if value.strip().lower() != b"100-continue":
                return _AT_HEAD, False  # gunicorn answers 417
            expects = not lines[0].rstrip().endswith(b"HTTP/1.0")
    if chunked:
        return _CHUNKED, expects
    if length < 0 or length > MAX_BUFFERED:
        return _AT_HEAD, False  # refused by the route's limit from the head
    return body_start + length, expects and length > 0


class GuardedThreadWorker(DrainingThreadWorker):
    """`DrainingThreadWorker` that reads whole requests in its main loop (see the module).

    Operators running gunicorn themselves: `-k service.hosting.gunicorn_guard.GuardedThreadWorker`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        gunicorn_util.write_error = write_json_error  # this worker process's own answers
        self.limits = SlowClientLimits.from_env()
        self.reading: dict[Any, _Reading] = {}

    def enqueue_req(self, conn: Any) -> None:
        """Every way a connection reaches a thread (accepted, keep-alive readable, a pipelined
        request left in its buffer) passes here: read the request first."""
        if getattr(conn, "complete", False):
            conn.complete = False
            super().enqueue_req(conn)
            return
        conn.sock.setblocking(False)
        reading = _Reading(conn, time.monotonic(), self._room)
        if conn.parser is not None:  # bytes read ahead (a pipelined request) come first
            left = conn.parser.unreader.take_buffered()
            if left and reading.take(left, time.monotonic()):
                self._dispatch(reading)
                return
            if left and not self._answer_expectation(reading):
                return  # dropped
        if self._receive(reading):
            return  # dispatched or dropped
        self.reading[conn] = reading
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, reading))

    def _room(self) -> int:
        reserved = sum(max(r.needed or 0, len(r.buf)) for r in self.reading.values())
        return BUDGET - reserved

    def _readable(self, reading: _Reading, sock: Any) -> None:
        self._receive(reading)

    def _receive(self, reading: _Reading) -> bool:
        """Read what is there; True when the connection left the main loop's hands (its request
        dispatched, or the connection closed)."""
        conn = reading.conn
        while True:
            try:
                data = conn.sock.recv(_RECV)
            except BlockingIOError:
                return False
            except OSError:
                self._drop(reading)
                return True
            if not data:  # the client closed (or gave up) before its request was whole
                self._drop(reading)
                return True
            if reading.take(data, time.monotonic()):
                self._dispatch(reading)
                return True
            if not self._answer_expectation(reading):
                return True  # dropped
            if len(data) < _RECV:
                return False

    def _answer_expectation(self, reading: _Reading) -> bool:
        """Send `100 Continue` to a head that asked for it and whose body is not all here yet;
        False when the connection had to be dropped (the client is gone, or so slow to read
        that 25 bytes do not fit in its socket's buffer)."""
        if not reading.continue_due:
            return True
        reading.continue_due = False
        try:
            sent = reading.conn.sock.send(CONTINUE)
        except OSError:  # BlockingIOError included
            sent = 0
        if sent == len(CONTINUE):
            return True
        self._drop(reading)
        return False

    def _dispatch(self, reading: _Reading) -> None:
        self._release(reading)
        conn = reading.conn
        conn.init()  # creates the parser (plain HTTP/1.x; sets the socket blocking)
        conn.sock.setblocking(True)
        buffer = conn.parser.unreader.buf
        buffer.seek(0, 2)
        buffer.write(reading.buf)
        conn.data_ready = True
        conn.complete = True
        self.enqueue_req(conn)

    def _drop(self, reading: _Reading) -> None:
        self._release(reading)
        self.nr_conns -= 1
        reading.conn.close()

    def _release(self, reading: _Reading) -> None:
        """Out of the main loop's hands: no longer polled or swept."""
        if self.reading.pop(reading.conn, None) is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(reading.conn.sock)

    def murder_pending(self) -> None:
        """gunicorn's sweep (connections deferred for lack of data), plus the deadlines of the
        requests being read. The main loop runs it at least once a second."""
        super().murder_pending()
        now = time.monotonic()
        for reading in list(self.reading.values()):
            if reading.too_slow(self.limits, now):
                self._drop(reading)


def write_json_error(sock: Any, status: int, reason: str, message: str) -> None:
    """gunicorn's own answers (a malformed head, an unsupported transfer coding), which it
    writes as an HTML page quoting the request line: the service's JSON error object instead,
    with an X-Request-ID and the security headers every answer carries (issue 37), as the
    single-process server's (service.hosting.waitress_guard.JsonErrorTask)."""
    if status >= 500:
        failure = ServiceError(ErrorCode.INTERNAL_ERROR, "the server could not read the request")
    else:
        failure = ServiceError(ErrorCode.VALIDATION_FAILED, "the HTTP request is malformed")
    body = error_json(failure)
    headers = {**error_headers(failure), "X-Request-ID": new_request_id(), "Connection": "close"}
    code = failure.code
    head = f"HTTP/1.1 {code.status} {code.replace('_', ' ').title()}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body)}\r\n\r\n"
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)
