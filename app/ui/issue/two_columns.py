"""Two columns side by side on a wide tab, one above the other on a narrow one.

One rule for the Issue screen's tabs (one payslip, pay run). A tab inside the staff screens'
scroll area is never narrower than its own least width, which two columns side by side
inflate, so its own width cannot say the window got narrow: the scroll area passes the width
it has (`fit`, see app.ui.main_window._ScreenArea) and that caps what the tab's resizes say.
"""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QWidget

TWO_COLUMNS_FROM = 1000
"""Tab width (px) from which the columns sit side by side: a 1280 px window minus the sidebar."""
SCREEN_MARGINS = 120
"""What the Issue screen and its tab frame take of the scroll area's width (about)."""


class TwoColumns:
    """Switches `columns` (a QBoxLayout of `tab`) between side by side and stacked."""

    def __init__(self, tab: QWidget, columns: QBoxLayout) -> None:
        self.tab = tab
        self.columns = columns
        self._room: int | None = None  # the width the screen's scroll area gives

    @property
    def side_by_side(self) -> bool:
        return self.columns.direction() == QBoxLayout.Direction.LeftToRight

    def resized(self, width: int) -> None:
        """The tab's own resize: never wider than the scroll area allows."""
        self._apply(width if self._room is None else min(width, self._room))

    def fit(self, available: int) -> None:
        """The width the scroll area has, margins included."""
        self._room = available - SCREEN_MARGINS
        self._apply(self._room)

    def _apply(self, width: int) -> None:
        wide = width >= TWO_COLUMNS_FROM
        direction = QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom
        if self.columns.direction() == direction:
            return
        self.columns.setDirection(direction)
        outer = self.tab.layout()
        if outer is not None:  # a hidden tab's layout is not redone on its own: its least
            outer.invalidate()  # width would stay the two-column one
        self.tab.updateGeometry()
