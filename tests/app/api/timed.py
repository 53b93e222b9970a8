"""The real transport on the fake clock: the ApiClient's deadline checked in clock readings.

The client's deadline arithmetic (app.api.retry) reads its `clock` and waits with its `sleep`;
the tests give it `FakeTime`, whose clock only moves when the client sleeps. An attempt that
waits for an answer that never comes would move that clock not at all, so `TimedTransport`
wraps the real transport and, when an attempt times out, moves the fake clock on by the timeout
that attempt carried: the connect timeout for a connection never accepted, the read timeout for
an answer never sent. The fake clock then reads exactly what the client's own limits let it
spend, and a test asserts on that and on the timeouts each attempt carried (`attempts`), never
on how long the wall clock took. The sockets stay real: an attempt still ends by the socket
timeout the client gave it.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from tests.app.api.faults import FakeTime

_PHASE: dict[type[httpx.TimeoutException], str] = {
    httpx.ConnectTimeout: "connect",
    httpx.ReadTimeout: "read",
    httpx.WriteTimeout: "write",
    httpx.PoolTimeout: "pool",
}


@dataclass(frozen=True)
class Attempt:
    """One request as it reached the transport: its path, the timeouts it carried (httpx's
    connect/read/write/pool) and how it ended ("HTTP 200", or the exception's name)."""

    path: str
    timeout: dict[str, float | None]
    outcome: str


class TimedTransport(httpx.BaseTransport):
    """httpx's own transport; a timed-out attempt moves `time` on by its timeout."""

    def __init__(self, time: FakeTime) -> None:
        self.inner = httpx.HTTPTransport()
        self.time = time
        self.attempts: list[Attempt] = []

    def to(self, path: str) -> list[Attempt]:
        """The attempts whose path ends with `path` (the auth and issuer APIs have prefixes)."""
        return [a for a in self.attempts if a.path.endswith(path)]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeout = dict(request.extensions.get("timeout", {}))
        path = request.url.path
        try:
            response = self.inner.handle_request(request)
        except httpx.TimeoutException as exc:
            self.attempts.append(Attempt(path, timeout, type(exc).__name__))
            spent = timeout.get(_PHASE.get(type(exc), "read"))
            assert spent is not None, f"{path} timed out without a {type(exc).__name__} limit"
            self.time.now += spent
            raise
        except httpx.TransportError as exc:
            self.attempts.append(Attempt(path, timeout, type(exc).__name__))
            raise
        self.attempts.append(Attempt(path, timeout, f"HTTP {response.status_code}"))
        return response

    def close(self) -> None:
        self.inner.close()
