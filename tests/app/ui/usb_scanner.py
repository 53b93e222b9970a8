"""Type a code the way a USB barcode scanner (a keyboard wedge) types it.

A scanner is a keyboard: for each character it presses and releases a key, holding Shift (a
key press of its own, with no text) for capitals and shifted symbols, a few milliseconds per
key, and ends with Enter, all sent to whatever has the focus. ``qtbot.keyClicks`` sends no Shift
presses, which hid a bug that lost every code with a capital letter (issue 35). Time comes from
a fake clock the screen's ``WedgeScanner`` reads, advanced :data:`KEY_GAP_S` per key: the speed
is a scanner's whatever else loads the machine, and nothing sleeps.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

KEY_GAP_S = 0.005
"""Five milliseconds per key, as the scanners measured (and ``xdotool type --delay 5``)."""
_SHIFTED = set('~!@#$%^&*()_+{}|:"<>?')


class ScannerClock:
    """The scanner's time: moves on :data:`KEY_GAP_S` for every key pressed."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def key(self, gap_s: float = KEY_GAP_S) -> None:
        self.now += gap_s


def _focus(fallback: QWidget) -> QWidget:
    return QApplication.focusWidget() or fallback


def scanner_types(window: QWidget, clock: ScannerClock, code: str, *, enter: bool = True) -> None:
    """Send ``code`` (then Enter) to the focused widget of ``window`` as a scanner does."""
    shift = Qt.KeyboardModifier.ShiftModifier
    plain = Qt.KeyboardModifier.NoModifier
    for char in code:
        shifted = char.isupper() or char in _SHIFTED
        if shifted:
            clock.key()
            QTest.keyPress(_focus(window), Qt.Key.Key_Shift, plain)  # a press with no text
        clock.key()
        target = _focus(window)
        # QTest takes a one-character str (its char overload; the stubs list only keys).
        QTest.keyPress(target, char, shift if shifted else plain)  # type: ignore[call-overload]
        QTest.keyRelease(target, char, shift if shifted else plain)  # type: ignore[call-overload]
        if shifted:
            QTest.keyRelease(_focus(window), Qt.Key.Key_Shift, shift)
    if enter:
        clock.key()
        QTest.keyClick(_focus(window), Qt.Key.Key_Return)
