"""How slow a client may send a request before it is cut off, on every serving path (issue 22).

One setting for the single-process server (waitress, `service.waitress_guard`) and the
multi-worker one (gunicorn, `service.gunicorn_guard`): the request line and headers must arrive
within the header timeout of their first byte, and a body at no less than the minimum rate on
average after a grace period. The defaults let any real client through (a 1000-record pay run
of ~1.5 MB may take 15 + 46 s; clients send it in well under a second); lower them only to test.

Environment: PAYSLIP_HEADER_TIMEOUT (seconds, default 10), PAYSLIP_BODY_GRACE (seconds,
default 15), PAYSLIP_BODY_MIN_RATE (bytes per second, default 32768).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlowClientLimits:
    header_timeout: float = 10.0
    body_grace: float = 15.0
    body_min_rate: float = 32 * 1024

    @classmethod
    def from_env(cls) -> SlowClientLimits:
        default = cls()
        return cls(
            header_timeout=_positive("PAYSLIP_HEADER_TIMEOUT", default.header_timeout),
            body_grace=_positive("PAYSLIP_BODY_GRACE", default.body_grace),
            body_min_rate=_positive("PAYSLIP_BODY_MIN_RATE", default.body_min_rate),
        )

    def too_slow(self, elapsed: float, head_done: bool, received: int) -> bool:
        """Whether a request whose first byte came `elapsed` seconds ago, with `received` bytes
        of it in (head included), is arriving slower than allowed."""
        if not head_done:
            return elapsed > self.header_timeout
        return elapsed > self.body_grace + received / self.body_min_rate


def _positive(name: str, default: float) -> float:
    """A positive number from the environment; anything else keeps the default (a typo must not
    turn the protection off)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default
