"""Background jobs whose results arrive on the GUI thread.

Network calls, decoding and file work never run on the GUI thread. A job is a plain callable run
on a QThreadPool; its return value or exception comes back through a Qt signal, which Qt delivers
on the thread that owns the receiving object (the GUI thread).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger("app.tasks")


def _receiver_alive(callback: Callable[..., Any]) -> bool:
    """False when `callback` is a method of a widget Qt has deleted meanwhile (a tab rebuilt or a
    screen closed while its job ran): its late result has nowhere to go and must be dropped."""
    owner = getattr(callback, "__self__", None)
    return not isinstance(owner, QObject) or shiboken6.isValid(owner)


class _Relay(QObject):
    """Carries one job's outcome back; emitted from the worker thread, received on the GUI's.

    Values travel wrapped in a one-element list: PySide6 mis-counts references to a bare None
    sent through a queued `Signal(object)` and eventually aborts with "deallocating None".
    """

    done = Signal(object)
    failed = Signal(object)


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any], relay: _Relay) -> None:
        super().__init__()
        # Python owns the job (kept in TaskRunner._jobs until it reports back); letting the pool
        # delete it from C++ while the wrapper lives crashes PySide6.
        self.setAutoDelete(False)
        self._fn = fn
        self._relay = relay

    def run(self) -> None:
        try:
            value = self._fn()
        except Exception as exc:  # delivered to the caller's error slot, never lost
            self._relay.failed.emit([exc])
        else:
            self._relay.done.emit([value])


class TaskRunner(QObject):
    """Runs callables off the GUI thread. `active` counts jobs still running (tests wait on it)."""

    def __init__(self, parent: QObject | None = None, max_threads: int = 4) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._relays: set[_Relay] = set()
        self._jobs: dict[_Relay, _Job] = {}
        self._closed = False

    @property
    def active(self) -> int:
        return len(self._relays)

    def run(
        self,
        fn: Callable[[], Any],
        on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        relay = _Relay()
        relay.moveToThread(self.thread())
        self._relays.add(relay)

        def finish(boxed: list[Any]) -> None:
            self._relays.discard(relay)
            self._jobs.pop(relay, None)
            if not self._closed and _receiver_alive(on_done):
                on_done(boxed[0])

        def fail(boxed: list[Exception]) -> None:
            exc = boxed[0]
            self._relays.discard(relay)
            self._jobs.pop(relay, None)
            if self._closed or not _receiver_alive(on_done):
                return
            if on_error is not None:
                on_error(exc)
            else:
                log.error("background job failed: %s", type(exc).__name__)

        relay.done.connect(finish)
        relay.failed.connect(fail)
        job = _Job(fn, relay)
        self._jobs[relay] = job
        self._pool.start(job)

    def wait(self, msecs: int = 30000) -> bool:
        return bool(self._pool.waitForDone(msecs))

    def close(self, msecs: int = 5000) -> None:
        """Wait for running jobs and drop their results: the widgets that asked for them are
        being torn down, and a late result must not reach a deleted widget."""
        self._closed = True
        self.wait(msecs)
