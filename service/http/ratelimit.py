"""Rate limits per IP and per client, on the `limits` library (spec "Limits").

A request over a limit is refused before anything is processed and told, in whole seconds, when
its window resets. A single process counts in memory; with a `SharedState` (Redis, see
service/http/shared_limits.py) every worker and host counts against the same windows, and an
unreachable Redis fails open (or closed, when configured) instead of failing the request.
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse_many, storage, strategies
from limits.errors import StorageError

from service.domain.errors import ServiceError
from service.http import metrics
from service.http.shared_limits import SharedState
from service.protocol.errors import ErrorCode


class RateLimiter:
    def __init__(self, spec: str | None, namespace: str, shared: SharedState | None = None) -> None:
        self._items: list[RateLimitItem] = parse_many(spec) if spec else []
        backend = shared.limits_storage if shared is not None else storage.MemoryStorage()
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
