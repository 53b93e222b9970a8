"""Waitress made fit for an open network (issue 15, items 1 and 2).

Waitress serves the embedded desktop service and the single-process `serve`. Out of the box it
accepts 100 connections, puts no deadline on reading headers (a client sending a byte a second
holds its connection for ever), keeps idle keep-alive connections for the channel timeout, and
reads a whole body into memory before the app sees the request. Here:

- the request line and headers must arrive within HEADER_TIMEOUT, and a body at no less than
  BODY_MIN_RATE on average after a grace period; slower clients are disconnected (set from the
  environment, `service.hosting.slow_clients`; the same limits hold on `serve --workers`);
- idle keep-alive connections close after IDLE_TIMEOUT, and after a second once the server is
  crowded, so idle connections cannot lock out new clients;
- up to CONNECTION_LIMIT connections (poll(), not select(), so past 1024 descriptors);
- as soon as the headers are in, `service.http.preflight` refuses a bad token, media type or
  declared length before any body byte is read, and a streamed (chunked) body is cut off at the
  route's limit, not at the server's.

Every answer waitress gives itself carries the JSON error object and an X-Request-ID, as every
other response does (PROTOCOL §6).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.task import ErrorTask
from waitress.utilities import Error

from service.domain.errors import ServiceError
from service.hosting.slow_clients import SlowClientLimits
from service.hosting.waitress_drain import DrainAwareTask
from service.http.body import too_large
from service.http.errors import HSTS, error_headers, error_json
from service.http.middleware import REQUEST_ID_RE, new_request_id
from service.http.preflight import Preflight
from service.protocol.errors import ErrorCode

_LIMITS = SlowClientLimits.from_env()
HEADER_TIMEOUT = _LIMITS.header_timeout
BODY_GRACE = _LIMITS.body_grace
BODY_MIN_RATE = _LIMITS.body_min_rate
IDLE_TIMEOUT = 15.0
CROWDED_IDLE_TIMEOUT = 1.0
CONNECTION_LIMIT = 1000
CROWDED_SHARE = 0.5

SERVER_SETTINGS: dict[str, Any] = {
    "connection_limit": CONNECTION_LIMIT,
    "asyncore_use_poll": True,
    "cleanup_interval": 1,
    "channel_timeout": IDLE_TIMEOUT,
}
"""Keyword arguments for `waitress.create_server` that go with the classes below."""


class Refused(Error):  # type: ignore[misc]
    """A request answered from its head alone, with the service's own error."""

    def __init__(self, failure: ServiceError) -> None:
        super().__init__(failure.detail)
        self.failure = failure
        self.code = failure.code.status
        self.reason = failure.code


class JsonErrorTask(ErrorTask):  # type: ignore[misc]
    """Waitress's own answers (a body over its cap, a malformed request, a preflight refusal)
    as the JSON error object with an X-Request-ID."""

    def execute(self) -> None:
        error = self.request.error
        failure = getattr(error, "failure", None)
        if not isinstance(failure, ServiceError):
            if error.code == 413:
                failure = ServiceError(
                    ErrorCode.PAYLOAD_TOO_LARGE, "the body exceeds the server's limit"
                )
            elif error.code >= 500:
                failure = ServiceError(
                    ErrorCode.INTERNAL_ERROR, "the server could not read the request"
                )
            else:
                failure = ServiceError(ErrorCode.VALIDATION_FAILED, "the HTTP request is malformed")
        body = error_json(failure)
        incoming = str(self.request.headers.get("X_REQUEST_ID", ""))
        request_id = incoming if REQUEST_ID_RE.match(incoming) else new_request_id()
        status = failure.code.status
        self.status = f"{status} {failure.code.replace('_', ' ').title()}"
        headers = {**error_headers(failure), "X-Request-ID": request_id}
        if self.channel.adj.url_scheme == "https":  # also before the head was parsed
            headers[HSTS[0]] = HSTS[1]
        self.response_headers.extend(headers.items())
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class GuardedParser(HTTPRequestParser):  # type: ignore[misc]
    """Asks the preflight once the headers are in, and holds a streamed body to the route's
    limit. The preflight rides on the server's Adjustments object, one per server."""

    _limit: int | None = None
    remote = "-"
    """The client's address, set by the channel that made this parser."""

    def received(self, data: bytes) -> int:
        had_headers = self.headers_finished
        consumed = int(super().received(data))
        if self.completed or not self.headers_finished:
            return consumed
        if not had_headers:
            preflight: Preflight | None = getattr(self.adj, "preflight", None)
            if preflight is not None and self.body_rcv is not None:
                verdict = preflight(self.command, self.path, self.remote, self.headers)
                self._limit = verdict.limit
                if verdict.refusal is not None:
                    self._refuse(verdict.refusal)
        elif self._limit is not None and self.body_bytes_received > self._limit:
            self._refuse(too_large(self._limit))
        return consumed

    def _refuse(self, failure: ServiceError) -> None:
        self.error = Refused(failure)
        self.completed = True


class GuardedChannel(HTTPChannel):  # type: ignore[misc]
    error_task_class = JsonErrorTask
    task_class = DrainAwareTask
    request_started: float | None = None
    has_received = False
    """Whether the client has sent anything yet (a drain gives a silent one only a moment)."""

    def parser_class(self, adj: Any) -> GuardedParser:
        parser = GuardedParser(adj)
        parser.remote = str(self.addr[0]) if self.addr else "-"
        return parser

    def received(self, data: bytes) -> bool:
        if self.request is None and data:
            self.request_started = time.monotonic()
            self.has_received = True
        result = bool(super().received(data))
        if self.request is None:
            self.request_started = None  # nothing half-read any more
        return result

    def too_slow(self, now: float) -> bool:
        """A request whose headers, or whose body, are arriving slower than allowed."""
        started, request = self.request_started, self.request
        if started is None or request is None or request.completed:
            return False
        elapsed = now - started
        if not request.headers_finished:
            return elapsed > HEADER_TIMEOUT
        allowed = BODY_GRACE + float(request.body_bytes_received) / BODY_MIN_RATE
        return elapsed > allowed


def guard_server(server: Any, preflight: Preflight | None) -> None:
    """Install the guarded channel, the preflight and the deadline sweep on a server made by
    `waitress.create_server(..., **SERVER_SETTINGS)`."""
    server.channel_class = GuardedChannel
    server.adj.preflight = preflight
    sweep_idle = server.maintenance

    def maintenance(now: float) -> None:
        sweep_idle(now)  # waitress's own: idle longer than the channel timeout
        monotonic = time.monotonic()
        channels = list(server.active_channels.values())
        crowded = len(channels) > CONNECTION_LIMIT * CROWDED_SHARE
        for channel in channels:
            if isinstance(channel, GuardedChannel) and channel.too_slow(monotonic):
                channel.will_close = True
            elif (
                crowded
                and not channel.requests
                and channel.request is None
                and channel.last_activity < now - CROWDED_IDLE_TIMEOUT
            ):
                channel.will_close = True  # idle keep-alive: make room for new clients

    server.maintenance = maintenance
    _raise_descriptor_limit()


def _raise_descriptor_limit() -> None:
    """Each connection is a file descriptor: let the process have enough for the limit.
    (POSIX only; Windows has no such per-process soft limit to raise.)"""
    try:
        import resource
    except ImportError:
        return
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = CONNECTION_LIMIT + 256
        if soft != resource.RLIM_INFINITY and soft < wanted:
            ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
