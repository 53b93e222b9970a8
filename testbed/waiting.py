"""Waiting, in tests, for something a real process does that it announces to nobody.

Tests wait on an event, a Qt signal or a fake clock wherever the code offers one, and assert
nothing about how long anything took. What is left is another process changing state that can
only be looked at: a gunicorn master replacing its workers, a server starting to answer, a
PostgreSQL backend taking or waiting for a lock, a redis-server accepting connections.
`wait_until` looks again every `POLL_INTERVAL` until the condition holds, and fails naming what
it waited for once its deadline has passed. That pause between looks is the one sleep the tests
allow; the deadline is only there so that a broken product fails the test instead of hanging it.

`records_locked` makes "a batch is in the middle of its transaction" a state a test can wait for:
while it holds the records table, every insert waits, visibly, in pg_stat_activity.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg

T = TypeVar("T")

POLL_INTERVAL = 0.05
"""Seconds between two looks at another process's state (the tests' only sleep)."""


def wait_until(
    condition: Callable[[], T],
    what: str,
    timeout: float = 30.0,
    interval: float = POLL_INTERVAL,
) -> T:
    """The first truthy value of `condition()`, asked again every `interval` seconds; an
    AssertionError naming `what` when there is none within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)  # the poll interval, not a timing assumption


class LockedRecords:
    """The records table of one database held by this test; see `records_locked`."""

    def __init__(self, holder: psycopg.Connection[Any], observer: psycopg.Connection[Any]) -> None:
        self._holder = holder
        self._observer = observer

    def release(self) -> None:
        """Let the held inserts go on (the block's end does it too)."""
        self._holder.rollback()

    def waiting(self) -> list[int]:
        """Pids of the backends of this database now waiting for a lock (the held inserts)."""
        rows = self._observer.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchall()
        return [int(row[0]) for row in rows]

    def alive(self, pid: int) -> bool:
        """Whether the backend `pid` still exists (a backend whose client died ends once it
        notices, rolling back its open transaction)."""
        row = self._observer.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        return bool(row and row[0])


@contextlib.contextmanager
def records_locked(database_url: str) -> Iterator[LockedRecords]:
    """Holds the `records` table in EXCLUSIVE mode until the block ends: reads go on, while
    every insert (a registration, a batch's one transaction) waits for the lock, so a test can
    see a batch that is certainly in the middle of its transaction (`LockedRecords.waiting`)
    and act on the server at that moment. `release()`, or leaving the block, lets the inserts
    go on."""
    with (
        psycopg.connect(database_url) as holder,
        psycopg.connect(database_url, autocommit=True) as observer,
    ):
        holder.execute("LOCK TABLE records IN EXCLUSIVE MODE")
        locked = LockedRecords(holder, observer)
        try:
            yield locked
        finally:
            locked.release()
