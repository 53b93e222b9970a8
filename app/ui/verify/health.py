"""The verify screen's service line: whether the service answers, before anyone scans.

A desk should learn that the service is down from a glance at the header, not from the first
person in the queue getting CANNOT VERIFY. So the screen polls the service's ``/healthz`` (one
short GET, no sign-in) every :data:`HEALTH_MS` while it is shown, off the GUI thread and one at a
time, and every verification's outcome updates the same line. Colour, a symbol and words change
together.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from PySide6.QtCore import QObject, QTimer, Signal

from app.shell.context import AppContext
from app.ui.widgets.card_parts import plain_label
from app.ui.widgets.tasks import TaskRunner

HEALTH_MS = 10_000
"""How often the screen asks the service's /healthz (one short GET, no auth)."""


class ServiceHealth(QObject):
    """The header's service line (``label``) and the poll that keeps it current.

    Signals:
        changed(str): "connected" or "unreachable", from a poll or from :meth:`set_connected`.
    """

    changed = Signal(str)

    def __init__(
        self,
        context: AppContext,
        tasks: TaskRunner,
        parent: QObject | None = None,
        *,
        name_address: bool = True,
    ):
        """`name_address`: say which address does not answer (a desk's operator can act on it;
        the kiosk shows no service address to the public)."""
        super().__init__(parent)
        self.context = context
        self.name_address = name_address
        self.tasks = tasks
        self.label = plain_label("○ Checking the service…", "serviceStatus")
        # Wraps instead of widening the header: with "not reachable at <address>" the line is
        # long, and the header must still fit 1366x768 at 150 % (910 logical pixels).
        self.label.setWordWrap(True)
        self.label.setProperty("checking", True)
        self.label.setAccessibleName("Service state")
        self._timer = QTimer(self)
        self._timer.setInterval(HEALTH_MS)
        self._timer.timeout.connect(self.poll)
        self._busy = False

    def start(self) -> None:
        """Poll now and every HEALTH_MS from now on (a second start changes nothing)."""
        if not self._timer.isActive():
            self._timer.start()
            self.poll()

    def stop(self) -> None:
        self._timer.stop()

    def poll(self) -> None:
        """One short unauthenticated GET of /healthz, off the GUI thread (one at a time)."""
        url = self.context.service_url
        if self._busy or not url:
            return
        self._busy = True
        client = self.context.verifier

        def done(ok: bool) -> None:
            self._busy = False
            self.set_connected(bool(ok))

        def failed(exc: Exception) -> None:
            self._busy = False
            self.set_connected(False)

        self.tasks.run(lambda: client.healthz(url), done, failed)

    def set_connected(self, connected: bool) -> None:
        self.label.setText("● Service connected" if connected else self._unreachable_words())
        self.label.setProperty("problem", not connected)
        self.label.setProperty("checking", False)
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)
        self.changed.emit("connected" if connected else "unreachable")

    def _unreachable_words(self) -> str:
        url = self.context.service_url
        if not self.name_address or not url:
            return "● Service not reachable"
        where = urlsplit(url).netloc or url
        return f"● Service not reachable at {where}"
