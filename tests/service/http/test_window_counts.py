"""The in-memory rate-limit windows: fixed windows as the `limits` strategies expect, counted
without a thread per hit, and ended windows not kept forever."""

from __future__ import annotations

import threading

from limits import parse, strategies

from service.http.ratelimit import SWEEP_SECONDS, RateLimiter, WindowCounts


class Clock:
    """A hand-moved clock, so windows end without waiting."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_fixed_window_counts_then_restarts_when_it_ends() -> None:
    clock = Clock()
    windows = WindowCounts(clock)
    assert [windows.incr("k", 60) for _ in range(3)] == [1, 2, 3]
    assert windows.get("k") == 3
    assert windows.get_expiry("k") == clock.now + 60
    clock.now += 59.9
    assert windows.incr("k", 60) == 4  # the window started at the first hit, not the last
    clock.now += 0.1
    assert windows.get("k") == 0
    assert windows.get_expiry("k") == clock.now
    assert windows.incr("k", 60) == 1
    assert windows.get_expiry("k") == clock.now + 60


def test_the_limits_strategy_refuses_over_the_limit_and_reports_the_reset() -> None:
    clock = Clock()
    limiter = strategies.FixedWindowRateLimiter(WindowCounts(clock))
    item = parse("2/minute")
    assert [limiter.hit(item, "ip", "a") for _ in range(3)] == [True, True, False]
    assert limiter.hit(item, "ip", "b")  # another identity has its own window
    assert not limiter.test(item, "ip", "a")
    stats = limiter.get_window_stats(item, "ip", "a")
    assert (stats.reset_time, stats.remaining) == (clock.now + 60, 0)
    clock.now += 60
    assert limiter.test(item, "ip", "a") and limiter.hit(item, "ip", "a")


def test_hits_start_no_thread() -> None:
    # limits' MemoryStorage started a Timer thread for nearly every request at a desk's pace.
    before = threading.active_count()
    limiter = RateLimiter("1000/minute", "client")
    for n in range(20):
        limiter.check(f"client-{n % 3}")
    assert threading.active_count() == before


def test_ended_windows_are_swept_during_a_later_hit() -> None:
    clock = Clock()
    windows = WindowCounts(clock)
    for n in range(100):
        windows.incr(f"gone-{n}", 10)
    clock.now += SWEEP_SECONDS
    windows.incr("fresh", 10)
    assert windows.held() == 1
    assert windows.get("fresh") == 1


def test_clear_and_reset() -> None:
    windows = WindowCounts(Clock())
    windows.incr("a", 60)
    windows.incr("b", 60)
    windows.clear("a")
    assert (windows.get("a"), windows.get("b")) == (0, 1)
    assert windows.reset() == 1
    assert windows.held() == 0
    assert windows.check()
