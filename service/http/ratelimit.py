"""Rate limits per IP and per client, on the `limits` library (spec "Limits").

A request over a limit is refused before anything is processed and told, in whole seconds, when
its window resets.
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse_many, storage, strategies

from service.domain.errors import ServiceError


class RateLimiter:
    def __init__(self, spec: str | None, namespace: str) -> None:
        self._items: list[RateLimitItem] = parse_many(spec) if spec else []
        self._limiter = strategies.FixedWindowRateLimiter(storage.MemoryStorage())
        self._namespace = namespace

    def check(self, identity: str) -> None:
        for item in self._items:
            if not self._limiter.hit(item, self._namespace, identity):
                stats = self._limiter.get_window_stats(item, self._namespace, identity)
                wait = max(1, math.ceil(stats.reset_time - time.time()))
                raise ServiceError(
                    "RATE_LIMITED",
                    f"too many requests; retry after {wait} s",
                    retry_after=wait,
                )
