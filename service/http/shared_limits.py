"""Limits that hold across workers and hosts: rate-limit counters and batch leases in Redis.

Why it looks the way it does:

- A single process keeps its limits in memory (nothing to share). With `--workers N` or several
  hosts, every process must count against the same numbers, so the `limits` library's Redis
  storage holds the rate-limit windows and a Redis sorted set holds the concurrent-batch leases.
- An *instance* (PROTOCOL §6's "per instance" batch limit) is one `serve`: its master and all its
  workers. Its leases live under `<prefix>:batches:<instance_id>`; the id is made by the master and
  handed to every worker (`PAYSLIP_INSTANCE_ID` when the WSGI entry point is run by hand).
- A lease is a sorted-set member scored by its expiry time. A worker killed while holding one
  never releases it, so every acquire first drops expired members: a dead worker's slot comes back
  after `lease_seconds` at the latest.
- Every key starts with `PAYSLIP_REDIS_PREFIX` (default `payslip`), so several deployments
  (production, staging) can share one Redis without sharing limits.
- Redis being unreachable must never turn into a 500. By default the limits *fail open*: the
  request goes through, a warning is logged (at most once per `warn_every` seconds, so a Redis
  outage does not flood the log) and `payslip_redis_fail_open_total` counts every such request.
  `PAYSLIP_REDIS_FAIL_CLOSED=1` instead answers 503 + Retry-After. After a failure, Redis is not
  asked again for `retry_after` seconds (a black-holed Redis host would otherwise cost every
  request a socket timeout); batches then fall back to a per-process semaphore.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Protocol

import redis
from limits import storage

from service.domain.errors import ServiceError
from service.protocol.errors import ErrorCode

log = logging.getLogger("service.limits")

REDIS_TIMEOUT = 0.5
"""Seconds for a Redis connect or command: limits must not slow a request down noticeably."""


class Lease(Protocol):
    def release(self) -> None: ...


class BatchSlots(Protocol):
    def try_acquire(self) -> Lease | None:
        """A lease on one concurrent-batch slot, or None when all are taken."""


class _SemaphoreLease:
    __slots__ = ("_semaphore",)

    def __init__(self, semaphore: threading.BoundedSemaphore) -> None:
        self._semaphore = semaphore

    def release(self) -> None:
        self._semaphore.release()


class LocalBatchSlots:
    """The single-process form: a semaphore."""

    def __init__(self, size: int) -> None:
        self._semaphore = threading.BoundedSemaphore(size)

    def try_acquire(self) -> Lease | None:
        if self._semaphore.acquire(blocking=False):
            return _SemaphoreLease(self._semaphore)
        return None


class SharedState:
    """One Redis connection pool per process, plus the fail-open/fail-closed rule."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "payslip",
        fail_closed: bool = False,
        retry_after: float = 1.0,
        warn_every: float = 10.0,
        on_fail_open: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.fail_closed = fail_closed
        self._retry_after = retry_after
        self._warn_every = warn_every
        self._on_fail_open = on_fail_open
        self._down_until = 0.0
        self._warned_at = 0.0
        self._lock = threading.Lock()
        self.client = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT
        )
        self.limits_storage = storage.RedisStorage(
            url,
            connection_pool=self.client.connection_pool,
            key_prefix=f"{prefix}:limits",
            wrap_exceptions=True,
        )

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def usable(self) -> bool:
        """False while a recent failure says Redis is down (no call is made then)."""
        return time.monotonic() >= self._down_until

    def failed(self, what: str, exc: BaseException) -> None:
        """Record a Redis failure; raises 503 when configured to fail closed."""
        now = time.monotonic()
        with self._lock:
            self._down_until = now + self._retry_after
            warn = now - self._warned_at >= self._warn_every
            if warn:
                self._warned_at = now
        if warn:
            mode = "failing closed (503)" if self.fail_closed else "failing open"
            log.warning("Redis unreachable for %s (%s): %s", what, type(exc).__name__, mode)
        self.unavailable(what)

    def unavailable(self, what: str) -> None:
        """Called instead of Redis while it is marked down (and after a failure): 503 when
        failing closed, else the fail-open hook is told and the caller goes on without Redis."""
        if self.fail_closed:
            raise ServiceError(
                ErrorCode.SERVICE_UNAVAILABLE,
                "the limits store is not answering; retry later",
                retry_after=max(1, round(self._retry_after)),
            )
        if self._on_fail_open is not None:
            self._on_fail_open(what)

    def close(self) -> None:
        self.client.close()


# KEYS[1] = the instance's lease set; ARGV = now, expiry, member, size.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
  redis.call('EXPIRE', KEYS[1], math.ceil(ARGV[2] - ARGV[1]) + 60)
  return 1
end
return 0
"""


class _RedisLease:
    __slots__ = ("_key", "_member", "_shared")

    def __init__(self, shared: SharedState, key: str, member: str) -> None:
        self._shared, self._key, self._member = shared, key, member

    def release(self) -> None:
        try:
            self._shared.client.zrem(self._key, self._member)
        except redis.RedisError as exc:  # the lease expires by itself
            log.warning("could not release a batch lease (%s); it expires", type(exc).__name__)


class RedisBatchSlots:
    """At most `size` batches at once across every worker of one instance.

    `clock` (seconds since the epoch) scores the leases: every worker reads its own wall clock,
    which NTP keeps close enough for a two-minute lease. Tests pass a fake one to let a lease
    expire without waiting for it.
    """

    def __init__(
        self,
        shared: SharedState,
        instance_id: str,
        size: int,
        lease_seconds: float = 120.0,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._shared = shared
        self._key = f"{shared.prefix}:batches:{instance_id}"
        self._size = size
        self._lease_seconds = lease_seconds
        self._clock = clock
        self._script = shared.client.register_script(_ACQUIRE)
        self._fallback = LocalBatchSlots(size)

    def try_acquire(self) -> Lease | None:
        if not self._shared.usable():
            self._shared.unavailable("batch slots")
            return self._fallback.try_acquire()
        member = uuid.uuid4().hex
        now = self._clock()
        try:
            won = self._script(
                keys=[self._key], args=[now, now + self._lease_seconds, member, self._size]
            )
        except redis.RedisError as exc:
            self._shared.failed("batch slots", exc)
            return self._fallback.try_acquire()
        return _RedisLease(self._shared, self._key, member) if won else None
