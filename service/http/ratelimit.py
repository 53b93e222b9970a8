"""Rate limits per IP and per client, on the `limits` library (spec "Limits").

A request over a limit is refused before anything is processed and told, in whole seconds, when
its window resets. A single process counts in memory (`WindowCounts`); with a `SharedState`
(Redis, see service/http/shared_limits.py) every worker and host counts against the same windows,
and an unreachable Redis fails open (or closed, when configured) instead of failing the request.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from limits import RateLimitItem, parse_many, storage, strategies
from limits.errors import StorageError

from service.domain.errors import ServiceError
from service.http import metrics
from service.http.shared_limits import SharedState
from service.protocol.errors import ErrorCode

SWEEP_SECONDS = 60.0
"""How often `WindowCounts` drops the windows that have ended (inline, during a hit)."""


class WindowCounts(storage.Storage):
    """Fixed-window counters in this process's memory: what a server without Redis counts in.

    Not the `limits` library's own MemoryStorage: that one expires keys from a
    ``threading.Timer`` that fires 10 ms after it is started and is started again by the next
    hit, so at a desk's pace (requests more than 10 ms apart) every request started a thread.
    That cost ~0.4 ms of CPU per verification (1.1 against 0.7 ms for the whole verify route,
    measured calling the WSGI app directly), in the desk app's own process, where the embedded
    service shares one GIL with the checks (bench/applicant_bench.py). A fixed window needs no
    timer: a count read after its window has ended counts as zero and restarts, and the windows
    that have ended are dropped inline at most every `SWEEP_SECONDS`, so that identities never
    seen again do not pile up.
    """

    STORAGE_SCHEME = None  # not registered under a URI scheme: RateLimiter builds it directly

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[int, float]] = {}
        """key -> (count, clock reading at which its window ends)"""
        self._next_sweep = clock() + SWEEP_SECONDS

    @property
    def base_exceptions(self) -> type[Exception]:
        return ValueError

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = self._clock()
        with self._lock:
            if now >= self._next_sweep:
                self._windows = {k: v for k, v in self._windows.items() if v[1] > now}
                self._next_sweep = now + SWEEP_SECONDS
            count, ends = self._windows.get(key, (0, 0.0))
            if ends <= now:
                count, ends = 0, now + expiry
            count += amount
            self._windows[key] = (count, ends)
            return count

    def get(self, key: str) -> int:
        count, ends = self._windows.get(key, (0, 0.0))
        return count if ends > self._clock() else 0

    def get_expiry(self, key: str) -> float:
        now = self._clock()
        ends = self._windows.get(key, (0, 0.0))[1]
        return ends if ends > now else now

    def check(self) -> bool:
        return True

    def held(self) -> int:
        """How many windows are held (ended ones included until the next sweep)."""
        return len(self._windows)

    def reset(self) -> int:
        with self._lock:
            dropped = len(self._windows)
            self._windows = {}
            return dropped

    def clear(self, key: str) -> None:
        with self._lock:
            self._windows.pop(key, None)


class RateLimiter:
    def __init__(self, spec: str | None, namespace: str, shared: SharedState | None = None) -> None:
        self._items: list[RateLimitItem] = parse_many(spec) if spec else []
        backend = shared.limits_storage if shared is not None else WindowCounts()
        self._limiter = strategies.FixedWindowRateLimiter(backend)
        self._namespace = namespace
        self._shared = shared

    def check(self, identity: str) -> None:
        if not self._items:
            return
        if self._shared is not None and not self._shared.usable():
            self._shared.unavailable(f"rate limit {self._namespace}")
            return
        try:
            self._check(identity)
        except StorageError as exc:
            assert self._shared is not None  # memory storage does not raise StorageError
            self._shared.failed(f"rate limit {self._namespace}", exc)

    def would_refuse(self, identity: str) -> ServiceError | None:
        """The RATE_LIMITED error `check` would raise now, without counting a hit: a server
        asks this before reading a body, and the pipeline counts the request afterwards."""
        if not self._items or (self._shared is not None and not self._shared.usable()):
            return None
        try:
            for item in self._items:
                if not self._limiter.test(item, self._namespace, identity):
                    stats = self._limiter.get_window_stats(item, self._namespace, identity)
                    wait = max(1, math.ceil(stats.reset_time - time.time()))
                    return ServiceError(
                        ErrorCode.RATE_LIMITED,
                        f"too many requests; retry after {wait} s",
                        retry_after=wait,
                    )
        except StorageError:
            return None  # the pipeline's own check reports the outage
        return None

    def _check(self, identity: str) -> None:
        for item in self._items:
            if not self._limiter.hit(item, self._namespace, identity):
                stats = self._limiter.get_window_stats(item, self._namespace, identity)
                wait = max(1, math.ceil(stats.reset_time - time.time()))
                metrics.RATE_LIMITED.labels(self._namespace).inc()
                raise ServiceError(
                    ErrorCode.RATE_LIMITED,
                    f"too many requests; retry after {wait} s",
                    retry_after=wait,
                )
