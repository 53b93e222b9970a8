"""Keeps a locked kiosk on screen: minimised, hidden or covered, it comes straight back.

A kiosk stands where the public can reach it. The window manager can take it away without the
app being asked: Super+D ("show desktop"), a minimise from the title bar or a task bar, another
program's window on top. Any of those would leave the desktop open to whoever stands there, and
nothing would bring the kiosk back. So while the window is locked this watches it and restores
it full screen, raised and active, as soon as the event loop runs again (at once for a person).
Leaving full screen on purpose still goes through the operator PIN (the main window's job); a
minimise needs no PIN to undo, it is simply undone.

The app's own dialogs (operator PIN, settings) are not "covering": while one of them is the
active window nothing is raised over it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication, QWidget


class KioskKeeper(QObject):
    """Restores ``window`` full screen whenever it is minimised, hidden or left for another
    program's window while ``locked()`` is true.

    Signals:
        restored(): the window was brought back (tests wait on it).
    """

    restored = Signal()

    def __init__(self, window: QWidget, locked: Callable[[], bool]) -> None:
        super().__init__(window)
        self._window = window
        self._locked = locked
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is getattr(self, "_window", None) and self._locked():
            kind = event.type()
            if kind == QEvent.Type.Hide or (
                kind == QEvent.Type.WindowStateChange and self._window.isMinimized()
            ):
                QTimer.singleShot(0, self.restore)
            elif kind == QEvent.Type.WindowDeactivate:
                QTimer.singleShot(0, self._maybe_covered)
        return False

    def _maybe_covered(self) -> None:
        """Another program took the screen (no window of this app is active): come back."""
        if QApplication.activeWindow() is None and QApplication.activeModalWidget() is None:
            self.restore()

    def restore(self) -> None:
        """Full screen, visible, on top and active again (nothing to do once unlocked)."""
        window = self._window
        if not self._locked():
            return
        state = window.windowState() & ~Qt.WindowState.WindowMinimized
        window.setWindowState(state | Qt.WindowState.WindowFullScreen)
        window.show()
        window.raise_()
        window.activateWindow()
        self.restored.emit()
