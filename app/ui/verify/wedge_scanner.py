"""USB barcode scanners ("keyboard wedges"): a burst of fast keystrokes ending in Enter is a scan.

A wedge scanner types the code it reads into whatever has the keyboard focus and presses Enter.
On the verify screen that is often not the code field: while a verdict shows, the focus is on
Next, which would swallow the characters and take the scanner's Enter as a press of Next (the
verdict vanishes and the new code is never checked). So an application-level event filter
watches the key presses meant for one window and measures the time between them. People do not
type a dozen characters with every gap under :data:`MAX_GAP_S`; scanners do (a few ms apart).

- Keys meant for a text field (the code field, or any other line edit) go on to it unchanged,
  so people can type; the field's own Enter handling then submits what was typed or scanned.
- Keys meant for anything else (a button, the page, nothing) would be lost anyway: printable
  ones are collected instead of delivered, and an Enter that ends a fast burst of at least
  :data:`MIN_LENGTH` characters is swallowed and reported as ``scanned(text)``. A slow Enter
  (a person pressing Next) goes through as usual, and so does a lone Space on a button.

A scanner types like a keyboard: before each capital (and each character on a shifted key, such
as ``|``) it presses Shift, a key press with no text. Those presses belong to the burst: they
neither add a character nor end the scan (they once did, so every code with a capital was cut
short and its Enter pressed the focused button, issue 35). The same holds for Caps Lock and
AltGr, which some scanners and layouts send.

Only plain and Shift keys count (Ctrl/Alt combinations are shortcuts), and only while the
watched widget is visible; dialogs are other windows and are left alone.

The time between keys is the time the keyboard sent them (the window system's timestamp on each
key event), not the time the app got round to them: a busy kiosk PC that stalls for a tenth of a
second mid-scan would otherwise see a "slow" gap and lose the code. Events without a timestamp
fall back to the monotonic clock. The clock is injectable so tests can type "like a person"
without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

MAX_GAP_S = 0.06
"""The longest pause between two keys of one scan (scanners send a key every 1-20 ms)."""
MIN_LENGTH = 8
"""Fewer characters than this before Enter are not taken for a scan (payslip codes are long)."""
_ENTER = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
SHIFTING_KEYS = frozenset({Qt.Key.Key_Shift, Qt.Key.Key_CapsLock, Qt.Key.Key_AltGr})
"""Keys a scanner presses to type a character: part of the burst, not a character of it."""
_SHORTCUT_MODIFIERS = (
    Qt.KeyboardModifier.ControlModifier
    | Qt.KeyboardModifier.AltModifier
    | Qt.KeyboardModifier.MetaModifier
)


def takes_text(widget: QWidget | None) -> bool:
    """Does this widget use typed characters itself (so they must reach it)?"""
    if isinstance(widget, QLineEdit | QTextEdit | QPlainTextEdit | QAbstractSpinBox):
        return not getattr(widget, "isReadOnly", lambda: False)()
    return isinstance(widget, QComboBox) and widget.isEditable()


class WedgeScanner(QObject):
    """Reads keyboard-wedge scans meant for ``watched``'s window, wherever the focus is in it.

    Signals:
        scanned(str): a scan ended in Enter while the focus was not on a text field.
    """

    scanned = Signal(str)

    def __init__(
        self,
        watched: QWidget,
        *,
        clock: Callable[[], float] | None = None,
        max_gap_s: float = MAX_GAP_S,
        min_length: int = MIN_LENGTH,
    ) -> None:
        super().__init__(watched)
        self._watched = watched
        self._clock = clock
        self._max_gap = max_gap_s
        self._min_length = min_length
        self._buffer: list[str] = []
        self._last = float("-inf")
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)  # removed by Qt when this object is deleted

    def eventFilter(self, target: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() != QEvent.Type.KeyPress or not isinstance(target, QWidget):
            return False
        if not self._watched.isVisible() or target.window() is not self._watched.window():
            return False
        assert isinstance(event, QKeyEvent)
        return self._key(target, event)

    def _now(self, event: QKeyEvent) -> float:
        """Seconds: the injected clock (tests), else when the key was sent, else now."""
        if self._clock is not None:
            return self._clock()
        sent_ms = event.timestamp()
        if sent_ms:
            return sent_ms / 1000
        return time.monotonic()

    def _key(self, target: QWidget, event: QKeyEvent) -> bool:
        """True: the key was part of a scan and is not delivered."""
        now = self._now(event)
        fast = now - self._last <= self._max_gap
        self._last = now
        if event.modifiers() & _SHORTCUT_MODIFIERS:
            self._buffer.clear()
            return False
        if not fast:
            self._buffer.clear()
        if event.key() in SHIFTING_KEYS:
            return False  # Shift before a capital: the burst goes on
        if event.key() in _ENTER:
            burst = "".join(self._buffer).strip()
            self._buffer.clear()
            self._last = float("-inf")  # the next key starts afresh (propagated Enters too)
            if not fast or len(burst) < self._min_length or takes_text(target):
                return False
            self.scanned.emit(burst)
            return True
        text = event.text()
        if not text or not text.isprintable():
            self._buffer.clear()
            return False
        self._buffer.append(text)
        if takes_text(target):
            return False
        # A lone Space (a person pressing a focused button) goes through; inside a burst it
        # is part of the code.
        return not (text == " " and len(self._buffer) == 1)
