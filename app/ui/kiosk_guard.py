"""Keeps a locked kiosk on screen: minimised, hidden or covered, it comes straight back.

A kiosk stands where the public can reach it. The window manager can take it away without the
app being asked: Super+D ("show desktop"), a minimise from the title bar or a task bar, another
program's window on top. Any of those would leave the desktop open to whoever stands there, and
nothing would bring the kiosk back. So while the window is locked this watches it and restores
it full screen, raised and active, as soon as the event loop runs again (at once for a person).
Leaving full screen on purpose still goes through the operator PIN (the main window's job); a
minimise needs no PIN to undo, it is simply undone.

Some window managers do not minimise on "show desktop": openbox (and others after it) simply
unmap every window, and Qt then sends the widget no Hide and no state change, only an Expose
of its native window saying it is no longer exposed (the kiosk stayed away for good although
a restore had run: it ran at the deactivation, before the unmap, issue 35). So the native
window's exposure is watched too: a locked kiosk that stops being exposed while Qt still calls
it visible is restored, and on X11 the window manager is asked, as a pager asks, to leave
show-desktop and activate it (:mod:`app.ui.x11_desktop`; Qt defers the app's own activation
until the window is mapped, so that alone never brought it back). A window still away a moment
later (unmapped by another program, so no longer managed) is mapped anew.
Tested under Xvfb with openbox against Super+D, minimise and ``xdotool windowunmap``.

The app's own dialogs (operator PIN, settings) are not "covering": while one of them is the
active window nothing is raised over it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QWindow
from PySide6.QtWidgets import QApplication, QWidget

from app.ui.x11_desktop import bring_back

REMAP_AFTER_MS = 300
"""How long a window manager gets to map the kiosk again before the app maps it anew."""


SETTLE_MS = 2000
"""How long after bringing the window back its passing states are the window manager's."""


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
        self._native: QWindow | None = None
        self._settling = QTimer(self)
        self._settling.setSingleShot(True)
        self._settling.setInterval(SETTLE_MS)
        window.installEventFilter(self)
        self._watch_native()

    @property
    def bringing_back(self) -> bool:
        """True for SETTLE_MS after the keeper brought the window back from being minimised,
        hidden or unmapped. A window manager shows such a window in its normal state first and
        only then applies full screen: that passing state is the keeper's own way back, not
        somebody leaving full screen, so it must not ask for the operator PIN (under load, the
        PIN prompt came up on a kiosk nobody had touched, and the next scan was typed into it
        as a wrong PIN)."""
        return self._settling.isActive()

    def _watch_native(self) -> None:
        """Watch the native window (made when the widget is first shown) for being unmapped."""
        native = self._window.windowHandle()
        if native is not None and native is not self._native:
            native.installEventFilter(self)
            self._native = native

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        native: QWindow | None = getattr(self, "_native", None)  # None while built or torn down
        if native is not None and watched is native:
            if (
                event.type() == QEvent.Type.Expose
                and not native.isExposed()
                and self._window.isVisible()
                and self._locked()
            ):
                QTimer.singleShot(0, self._maybe_unmapped)
            return False
        if watched is getattr(self, "_window", None) and self._locked():
            kind = event.type()
            if kind == QEvent.Type.Hide or (
                kind == QEvent.Type.WindowStateChange and self._window.isMinimized()
            ):
                QTimer.singleShot(0, self.restore)
            elif kind == QEvent.Type.WindowDeactivate:
                QTimer.singleShot(0, self._maybe_covered)
            elif kind == QEvent.Type.Show:
                self._watch_native()
        return False

    def _maybe_unmapped(self) -> None:
        """Unmapped by the window manager (show desktop) while Qt still calls it visible."""
        native = self._native
        if native is not None and not native.isExposed() and self._window.isVisible():
            self.restore()  # what the app itself can do; Qt defers activation while unmapped
            if QGuiApplication.platformName() == "xcb":
                bring_back(int(self._window.winId()))
            QTimer.singleShot(REMAP_AFTER_MS, self._remap_if_still_away)

    def _remap_if_still_away(self) -> None:
        """Still unmapped after asking: map the window anew (the manager then manages it again)."""
        native = self._native
        if (
            native is not None
            and not native.isExposed()
            and self._window.isVisible()
            and self._locked()
        ):
            self._window.hide()  # Qt maps it again on show: the only way back once withdrawn
            self.restore()

    def _maybe_covered(self) -> None:
        """Another program took the screen (no window of this app is active): come back (on
        top and active; its state never changed, so nothing to settle)."""
        if QApplication.activeWindow() is None and QApplication.activeModalWidget() is None:
            self.restore(settle=False)

    def restore(self, settle: bool = True) -> None:
        """Full screen, visible, on top and active again (nothing to do once unlocked);
        `settle`: the window manager may pass through the normal state on the way
        (`bringing_back`)."""
        window = self._window
        if not self._locked():
            return
        if settle:
            self._settling.start()
        state = window.windowState() & ~Qt.WindowState.WindowMinimized
        window.setWindowState(state | Qt.WindowState.WindowFullScreen)
        window.show()
        window.raise_()
        window.activateWindow()
        self.restored.emit()
