"""Windows and dialogs that fit small screens: 1024x600, 1366x768, and 1366x768 at 150 %.

At ``QT_SCALE_FACTOR=1.5`` a 1366x768 display is 910x512 logical pixels, so a dialog taller than
about 500 px has its buttons off the screen. Two rules keep everything reachable:

- a dialog's body scrolls (:func:`scrolling`) while its buttons sit outside the scroll area,
  always visible;
- the main window opens at its default size only where that fits (:func:`fit_to_screen`),
  otherwise at the screen's available size.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

DEFAULT_SIZE = QSize(1180, 800)
"""The main window's size where the screen has room for it."""
BODY_HINT_HEIGHT = 300
"""The most height a scrolling body asks for (the buttons and a title bar go on top)."""
FRAME_ALLOWANCE = QSize(16, 48)
"""Room left for the window manager's frame and title bar."""


class BodyScroll(QScrollArea):
    """A scroll area that asks for at most :data:`BODY_HINT_HEIGHT` px of height, so the
    dialog around it (body plus buttons) opens within a 512 px tall screen."""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        hint = super().sizeHint()
        return QSize(hint.width(), min(hint.height(), BODY_HINT_HEIGHT))


def scrolling(body: QWidget, *, sideways: bool = False) -> QScrollArea:
    """``body`` in a frameless scroll area that scrolls down (and sideways only if asked)."""
    area = BodyScroll()
    area.setWidget(body)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    if not sideways:
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area


def fit_to_screen(window: QWidget, preferred: QSize) -> None:
    """Resize ``window`` to ``preferred``, shrunk to the available screen area if needed."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        window.resize(preferred)
        return
    room = screen.availableGeometry().size() - FRAME_ALLOWANCE
    window.resize(preferred.boundedTo(room))
