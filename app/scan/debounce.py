"""Accept a camera code only after repeated identical sightings.

A single read can come from a code sliding past the lens or from a frame with two payslips in
view; verifying it would show the wrong result or flicker between two. So a code is accepted only
when ``required`` of the last ``window`` decoded frames read exactly that text, frames that show
several different codes are refused, and a code that is already on screen is ignored until the
screen is cleared (``release``), so a badge left in front of the camera is verified once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class Debouncer:
    """Feed it the texts decoded from each frame; it says when a code is accepted.

    Every frame passed to :meth:`feed` counts towards the window, including frames where nothing
    was found: "2 of the last 3" then means 2 sightings close together in time, not 2 sightings
    minutes apart. Frames the caller skipped (throttling) are simply never fed.
    """

    def __init__(self, required: int = 2, window: int = 3) -> None:
        if required < 1 or window < required:
            raise ValueError("need 1 <= required <= window")
        self.required = required
        self.window = window
        self._recent: deque[str | None] = deque(maxlen=window)
        self._held: str | None = None
        self.several_codes = False
        """True when the last frame fed showed several different codes (so it was refused)."""

    @property
    def held(self) -> str | None:
        """The code currently on screen, which new frames ignore."""
        return self._held

    def feed(self, texts: Iterable[str]) -> str | None:
        """Record one decoded frame; return the code it makes accepted, else None.

        An accepted code is held (as if :meth:`hold` were called) and the history is cleared, so
        the same code is not accepted again on the next frame.
        """
        seen = {text for text in texts if text and text != self._held}
        self.several_codes = len(seen) > 1
        sighting = seen.pop() if len(seen) == 1 else None
        self._recent.append(sighting)
        if sighting is None or self._recent.count(sighting) < self.required:
            return None
        self.hold(sighting)
        return sighting

    def hold(self, text: str) -> None:
        """Ignore ``text`` until :meth:`release`: it is on screen already."""
        self._held = text
        self._recent.clear()

    def release(self) -> None:
        """The screen was cleared: any code, the last one included, may be accepted again."""
        self._held = None
        self._recent.clear()
        self.several_codes = False
