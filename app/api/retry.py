"""When the client sends a request again, how long it waits first, and when it stops.

One `RetryPolicy` per `ApiClient`. Every logical call gets one deadline (`deadline` seconds from
its start) that covers token fetches, every attempt and every backoff sleep: a desk that must say
CANNOT VERIFY within seconds (app/shell/context.py's `verifier_client`: 4 s deadline, 1.5 s connect
timeout) relies on the client never waiting past it, whether the service refuses connections,
never accepts them, or accepts and never answers. So each attempt's timeouts are cut to what is
left of the deadline, and a backoff sleep that would end past it is not taken at all.

Backoff is exponential with full jitter (base 0.25 s, cap 8 s) so that desks retrying after the
same outage spread out instead of arriving together, and it is never shorter than an integer
`Retry-After` the service sent: a 429 or 503 says how long the service needs, and asking sooner
only earns another refusal.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import httpx

BACKOFF_BASE: Final = 0.25
BACKOFF_CAP: Final = 8.0

#: Statuses after which an idempotent request is resent: nothing harmful can come of a resend.
RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
#: Statuses after which a non-idempotent request is resent: 429 means nothing was processed.
RETRY_STATUSES_UNSAFE: Final = frozenset({429})


@dataclass(slots=True)
class RetryPolicy:
    """Timeouts, the per-call deadline and the backoff schedule, with injectable time.

    `timeout` bounds each HTTP attempt, `connect_timeout` (default: `timeout`) its TCP connect:
    a reachable service accepts a connection in milliseconds, so a short connect timeout finds a
    dead host fast and leaves the rest of the deadline for another attempt. `sleep`, `clock` and
    `rng` exist so tests can run backoff on a fake clock.
    """

    timeout: float = 10.0
    deadline: float = 30.0
    connect_timeout: float | None = None
    unreachable_after: float | None = None
    """Seconds after which a call that has had no answer at all (every attempt failed to
    connect or timed out) gives up, however long `deadline` is: issuing keeps a long deadline
    for a slow answer but must say "cannot be reached" within 5 s (issue 27)."""
    refused_after: float | None = None
    """Seconds after which a call whose every attempt so far was refused gives up. A refusal is
    the host's own prompt answer that nothing listens there: a desk says so within 1.5 s
    (issue 35) rather than retrying until its deadline (1.7-3.3 s with jitter)."""
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if (
            self.timeout <= 0
            or self.deadline <= 0
            or (self.connect_timeout is not None and self.connect_timeout <= 0)
        ):
            raise ValueError("timeouts and deadline must be positive")
        self.timeout = float(self.timeout)
        self.deadline = float(self.deadline)
        self.connect_timeout = float(self.connect_timeout) if self.connect_timeout else self.timeout

    def reach_deadline(self) -> float | None:
        """The clock reading by which the service must have answered something, or None."""
        return None if self.unreachable_after is None else self.clock() + self.unreachable_after

    def refusal_deadline(self) -> float | None:
        """The clock reading after which refusals alone end the call, or None."""
        return None if self.refused_after is None else self.clock() + self.refused_after

    def deadline_from_now(self) -> float:
        """The clock reading after which one logical call must have ended."""
        return self.clock() + self.deadline

    def remaining(self, deadline: float) -> float:
        return deadline - self.clock()

    def attempt_timeout(self, remaining: float) -> httpx.Timeout:
        """Every phase of one attempt (connect, each read, write, pool) cut to what is left of
        the deadline, so no single attempt can outlive it."""
        limit = min(self.timeout, remaining)
        connect = self.connect_timeout if self.connect_timeout is not None else self.timeout
        return httpx.Timeout(limit, connect=min(limit, connect))

    @staticmethod
    def retries_status(status: int, *, idempotent: bool) -> bool:
        """Whether an error status may be answered by sending the same request again.

        A non-idempotent request (`registerAndBuildBarcode`, creating clients or keys) is only
        resent after 429: any other error may come after the service acted on it.
        """
        return status in (RETRY_STATUSES if idempotent else RETRY_STATUSES_UNSAFE)

    @staticmethod
    def retries_failure(*, sent: bool, idempotent: bool) -> bool:
        """Whether a request that got no response is resent: always when idempotent, otherwise
        only when it surely never left (the connection failed before sending)."""
        return idempotent or not sent

    def backoff(self, attempt: int, retry_after: int | None) -> float:
        """Seconds to wait before retry number `attempt + 1` (full jitter, at least Retry-After)."""
        delay = self.rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt)))
        if retry_after is not None:
            delay = max(delay, float(retry_after))
        return delay

    def fits(self, delay: float, deadline: float) -> bool:
        """Whether sleeping `delay` still leaves time before the deadline for another attempt."""
        return self.clock() + delay < deadline
