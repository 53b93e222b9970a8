"""Keeps a single-process server's token signing keys recently read, on a thread of its own.

The server judges a request's head on waitress's I/O thread, which must never wait for the
store, so it judges tokens by the signing keys as last read (`TokenService.check_token`). On a
quiet server nothing else would re-read them, and a view older than two refresh periods makes
the head leave every unknown key to the request's own check, forged ones included, whose bodies
would then be read before they are refused. This thread re-reads them every half period, so the
view stays recent while the store answers; while it does not, the head's view ages, as it must
(a key rotated in elsewhere cannot be known), and the requests themselves get the store's 503.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from service.domain import signing_keys

log = logging.getLogger("service.keys")


class KeysKeeper:
    def __init__(self, refresh: Callable[[], None], every: float | None = None) -> None:
        self._refresh = refresh
        # Never a busy loop, even where the refresh period is set to 0 (tests do).
        self._every = max(0.05, signing_keys.REFRESH_SECONDS / 2 if every is None else every)
        self._stop = threading.Event()
        self._rounds = 0
        self._round_done = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="payslip-keys", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Ask the thread to end and wait a second at most: a re-read in progress (a store that
        does not answer) is not waited out, as the thread is a daemon and ends after it."""
        self._stop.set()
        self.ended(timeout=1.0)

    def ended(self, timeout: float) -> bool:
        """Wait up to `timeout` for the thread to end (it ends only once asked to stop)."""
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)
        return not self._thread.is_alive()

    def rounds_later(self, count: int, timeout: float) -> bool:
        """Wait until `count` more rounds have run (re-read or failed): how a test lets time
        pass on a quiet server without sleeping."""
        with self._round_done:
            target = self._rounds + count
            return self._round_done.wait_for(lambda: self._rounds >= target, timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._refresh()
            except Exception as exc:  # the store failing: the next round tries again
                log.debug("signing keys not re-read: %s", type(exc).__name__)
            with self._round_done:
                self._rounds += 1
                self._round_done.notify_all()
