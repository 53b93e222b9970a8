"""The verify screen's result page: the verdict card, how it fits the window, and how long it holds.

A result stays for ``settings.idle_timeout`` seconds (the countdown on the card) or until Next or
Esc, so a verdict cannot linger for the next person in the queue; the page says when that time
is up and the screen clears it. While a check is under way the card's one button is Cancel, once
a result shows it is Next, and the keyboard focus is on whichever button the operator needs.
Which input or verification led here is the screen's business, not this page's.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

from app.ui.verify.result_card import ANOTHER_CODE_HINT, ResultCard
from app.verify.flow import Outcome

SCANNED_HINT = "Another code was scanned: press Next to check it"


class ResultPage(QScrollArea):
    """The :class:`ResultCard` in a scroll area that never scrolls sideways.

    Signals:
        expired(): the result's time on screen is up.
    """

    expired = Signal()

    def __init__(self, kiosk: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.card = ResultCard(kiosk)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidget(self.card)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._remaining = 0
        self._countdown = QTimer(self)
        self._countdown.setInterval(1000)
        self._countdown.timeout.connect(self._tick)

    def show_pending(self, *, slow: bool = False, document: bool = False) -> None:
        """A check is under way (``slow``: and the service takes its time; ``document``: the
        page is being compared with the registered payslip); Esc cancels it."""
        self._countdown.stop()
        self.card.show_pending(slow=slow, document=document)
        self.card.banner.next_button.setText("Cancel  (Esc)")
        self.card.banner.next_button.setAccessibleName("Cancel the check")

    def show_checking_document(self) -> None:
        """The service answered; the page is being compared (no verdict yet: it may change)."""
        self.show_pending(document=True)

    def show_outcome(self, outcome: Outcome, seconds: int, *, another_in_view: bool) -> None:
        """Show a result for ``seconds``; ``another_in_view``: the camera saw a code meanwhile."""
        self._remaining = seconds
        self.card.set_countdown(self._remaining)
        self.card.banner.next_button.setText("Next  (Esc)")
        self.card.banner.next_button.setAccessibleName("Next payslip")
        self.fit()
        self.card.show_outcome(outcome)
        if another_in_view:
            self.note_another_code()

    def start_countdown(self) -> None:
        """Start the hold, and put the focus on the button the operator needs next."""
        self._countdown.start()
        retry, next_button = self.card.banner.retry_button, self.card.banner.next_button
        (retry if retry.isVisibleTo(self.card) else next_button).setFocus()

    def note_another_code(self, hint: str = ANOTHER_CODE_HINT) -> None:
        """Say on the card that another code is waiting (the camera sees one, or one was
        scanned) and that Next is the way to it."""
        self.card.set_hint(hint)

    def clear(self) -> None:
        self._countdown.stop()
        self.card.clear()

    def fit(self) -> None:
        """The verdict panel: its share of the visible card area, and never under half of the
        window (the whole point of the screen is the verdict)."""
        half_window = (self.window().height() + 1) // 2
        self.card.set_available_height(self.viewport().height(), half_window)

    def _tick(self) -> None:
        self._remaining -= 1
        if self._remaining <= 0:
            self.expired.emit()
        else:
            self.card.set_countdown(self._remaining)
