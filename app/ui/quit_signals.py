"""Ctrl+C (SIGINT) and SIGTERM quit the GUI cleanly, as closing the window does.

Python runs a signal handler only between bytecodes, and Qt's event loop runs in C++: by
default Ctrl+C in the terminal did nothing until the next Python call, then raised
KeyboardInterrupt inside whatever ran (an event filter: "unhandled KeyboardInterrupt", the
window stayed), so only SIGTERM ended it. Here the signal only writes a byte to a socket
(``signal.set_wakeup_fd``) that a ``QSocketNotifier`` watches: the event loop wakes at once (no
polling timer), and the quit runs as ordinary GUI code, on the GUI thread.

The quit is the operator's: whoever can signal the process can end it anyway, so a locked
kiosk is unlocked and closed without the PIN, and the embedded service stops as on any close.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable

from PySide6.QtCore import QObject, QSocketNotifier

QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class QuitOnSignals(QObject):
    """Calls ``quit`` on the GUI thread when SIGINT or SIGTERM arrives; ``close()`` undoes it."""

    def __init__(self, quit: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._quit = quit
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno())
        self._previous = {sig: signal.signal(sig, self._noted) for sig in QUIT_SIGNALS}
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._woken)
        self.received: list[int] = []

    def _noted(self, signum: int, frame: object) -> None:
        """The Python-level handler: only note it (the wake-up byte already went out)."""
        self.received.append(signum)

    def _woken(self) -> None:
        with contextlib.suppress(OSError):
            self._reader.recv(64)
        if self.received:
            self._quit()

    def close(self) -> None:
        self._notifier.setEnabled(False)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()
