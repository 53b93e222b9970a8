"""Limits shared through a real Redis: rate limits across processes, batch leases per instance
that expire when their holder dies, and what happens when Redis goes away (fail open, counted
and logged; or fail closed with 503 when configured)."""

from __future__ import annotations

import contextlib
import re
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.domain.errors import ServiceError
from service.http.ratelimit import RateLimiter
from service.http.shared_limits import RedisBatchSlots, SharedState
from testbed import web
from testbed.cluster import (
    REDIS_URL,
    Instance,
    Server,
    new_instance,
    registered,
    require_redis,
    token,
)
from testbed.waiting import wait_until


@pytest.fixture
def prefix() -> str:
    require_redis()
    return f"test-{secrets.token_hex(4)}"


def test_two_processes_count_against_one_rate_limit(prefix: str) -> None:
    """Two limiters with their own Redis connections, as two workers or hosts have."""
    with (
        contextlib.closing(SharedState(REDIS_URL, prefix=prefix)) as one,
        contextlib.closing(SharedState(REDIS_URL, prefix=prefix)) as two,
    ):
        first = RateLimiter("5/minute", "client", one)
        second = RateLimiter("5/minute", "client", two)
        for limiter in (first, second, first, second, first):
            limiter.check("cli_a")
        with pytest.raises(ServiceError) as refused:
            second.check("cli_a")
        assert refused.value.code == "RATE_LIMITED"
        assert refused.value.retry_after is not None and 1 <= refused.value.retry_after <= 60
        first.check("cli_b")  # another client has its own window


def test_batch_slots_are_shared_by_an_instance_and_expire_without_release(prefix: str) -> None:
    now = [time.time()]  # the workers' wall clock, moved by the test
    with (
        contextlib.closing(SharedState(REDIS_URL, prefix=prefix)) as shared,
        contextlib.closing(SharedState(REDIS_URL, prefix=prefix)) as shared_b,
    ):
        worker_a = RedisBatchSlots(shared, "host:1", 2, lease_seconds=1.0, clock=lambda: now[0])
        worker_b = RedisBatchSlots(shared_b, "host:1", 2, 1.0, clock=lambda: now[0])
        other_instance = RedisBatchSlots(
            shared, "host:2", 2, lease_seconds=1.0, clock=lambda: now[0]
        )
        first = worker_a.try_acquire()
        second = worker_b.try_acquire()
        assert first is not None and second is not None
        assert worker_a.try_acquire() is None and worker_b.try_acquire() is None
        assert other_instance.try_acquire() is not None  # limits are per instance
        first.release()
        third = worker_b.try_acquire()
        assert third is not None
        # `second` and `third` are never released (their worker died): they expire.
        now[0] += 0.9
        assert worker_a.try_acquire() is None  # not before their lease is over
        now[0] += 0.2
        assert worker_a.try_acquire() is not None


def test_unreachable_redis_fails_open_and_is_counted(prefix: str) -> None:
    events: list[str] = []
    shared = SharedState(
        "redis://127.0.0.1:1/0", prefix=prefix, on_fail_open=events.append, retry_after=60
    )
    limiter = RateLimiter("1/minute", "ip", shared)
    for _ in range(3):
        limiter.check("10.0.0.1")  # no exception: the limit is not enforced while Redis is away
    slots = RedisBatchSlots(shared, "host:1", 1)
    lease = slots.try_acquire()
    assert lease is not None  # the per-process fallback
    assert slots.try_acquire() is None  # ... which still limits this process
    lease.release()
    assert events[0] == "rate limit ip" and "batch slots" in events
    assert len(events) == 5


def test_unreachable_redis_fails_closed_when_configured(prefix: str) -> None:
    shared = SharedState("redis://127.0.0.1:1/0", prefix=prefix, fail_closed=True)
    limiter = RateLimiter("100/minute", "ip", shared)
    for _ in range(2):  # the first call finds out, the second is refused without a call
        with pytest.raises(ServiceError) as refused:
            limiter.check("10.0.0.1")
        assert refused.value.code == "SERVICE_UNAVAILABLE"
        assert refused.value.retry_after == 1


# --- across the workers of a real server -------------------------------------------------------


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    with new_instance(tmp_path_factory.mktemp("limits") / "data") as instance:
        yield instance


def _verify_many(url: str, bearer: str, barcode: str, count: int) -> list[httpx.Response]:
    replies = []
    for _ in range(count):  # a new connection each time, so every worker gets some
        with web.client(timeout=10) as client:
            replies.append(
                client.post(
                    f"{url}/v1/verifications/payload",
                    json={"barcode": barcode},
                    headers={"Authorization": f"Bearer {bearer}", "Connection": "close"},
                )
            )
    return replies


@pytest.mark.postgres
@pytest.mark.slow
def test_a_client_limit_holds_across_the_workers_of_one_server(instance: Instance) -> None:
    env = {
        "PAYSLIP_RATE_LIMIT_CLIENT": "12/minute",
        "PAYSLIP_RATE_LIMIT_IP": "off",
        "PAYSLIP_REDIS_PREFIX": f"test-{secrets.token_hex(4)}",
    }
    with Server.start(instance, 2, env=env) as server:
        vtok = token(server.url, instance.verifier)
        sealed = registered(server.url, instance)
        replies = _verify_many(server.url, vtok, sealed.payload, 30)
        statuses = [r.status_code for r in replies]
        assert statuses.count(200) == 12, statuses
        assert statuses.count(429) == 18, statuses
        refused = next(r for r in replies if r.status_code == 429)
        assert refused.json()["code"] == "RATE_LIMITED"
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
        metrics = web.get(f"{server.url}/metrics").text
        assert 'payslip_rate_limited_total{limit="client"} 18.0' in metrics


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _own_redis() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A Redis of this test's own, so it can be stopped under a running server."""
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        require_redis_when_started(url)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)


def require_redis_when_started(url: str, timeout: float = 10) -> None:
    import redis

    def pong() -> bool:
        with (
            contextlib.suppress(redis.RedisError),
            redis.Redis.from_url(url, socket_connect_timeout=0.5) as client,
        ):
            return bool(client.ping())
        return False

    wait_until(pong, "the test's own redis-server to answer", timeout)


def _stopped_redis_server(
    instance: Instance, tmp_path: Path, extra_env: dict[str, str]
) -> tuple[Server, list[httpx.Response], str, httpx.Response]:
    with _own_redis() as (redis_proc, redis_url):
        server = Server.start(
            instance,
            2,
            "--redis-url",
            redis_url,
            env={
                "PAYSLIP_LOG_LEVEL": "WARNING",
                # tests/conftest.py turns limits off for every other test: these need them on
                "PAYSLIP_RATE_LIMIT_IP": "1000/minute",
                "PAYSLIP_RATE_LIMIT_CLIENT": "1000/minute",
                **extra_env,
            },
            log_dir=tmp_path,
        )
        ready = web.get(f"{server.url}/readyz")
        assert ready.status_code == 200 and ready.json()["redis"] == "ok"
        vtok = token(server.url, instance.verifier)
        sealed = registered(server.url, instance)
        redis_proc.send_signal(signal.SIGTERM)
        redis_proc.wait(10)
        replies = _verify_many(server.url, vtok, sealed.payload, 10)
        metrics = web.get(f"{server.url}/metrics").text
        ready = web.get(f"{server.url}/readyz")
    return server, replies, metrics, ready


@pytest.mark.postgres
@pytest.mark.slow
def test_redis_stopped_under_a_server_fails_open_logged_and_counted(
    instance: Instance, tmp_path: Path
) -> None:
    server, replies, metrics, ready = _stopped_redis_server(instance, tmp_path, {})
    with server:
        assert [r.status_code for r in replies] == [200] * 10
        # still ready: taking every host out of the balancer would make it an outage
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "redis": "unreachable; limits fail open"}
        assert "Redis unreachable" in server.log() and "failing open" in server.log()
        counted = re.findall(r'payslip_redis_fail_open_total\{what="([^"]+)"\} (\d+)', metrics)
        assert counted and sum(float(n) for _, n in counted) >= 10


@pytest.mark.postgres
@pytest.mark.slow
def test_redis_stopped_under_a_server_fails_closed_with_503_when_configured(
    instance: Instance, tmp_path: Path
) -> None:
    server, replies, _, ready = _stopped_redis_server(
        instance, tmp_path, {"PAYSLIP_REDIS_FAIL_CLOSED": "1"}
    )
    with server:
        assert ready.status_code == 503 and int(ready.headers["Retry-After"]) >= 1
        assert {r.status_code for r in replies} == {503}
        assert all(r.json()["code"] == "SERVICE_UNAVAILABLE" for r in replies)
        assert all(r.headers["Retry-After"] == "1" for r in replies)
