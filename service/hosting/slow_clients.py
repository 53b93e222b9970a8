"""How slow a client may send a request before it is cut off, on every serving path (issue 22).

One setting for the single-process server (waitress, `service.hosting.waitress_guard`) and the
multi-worker one (gunicorn, `service.hosting.gunicorn_guard`): the request line and headers must
arrive
within the header timeout of their first byte, and a body at no less than the minimum rate on
average after a grace period. The defaults let any real client through (a 1000-record pay run
of ~1.5 MB may take 15 + 46 s; clients send it in well under a second); lower them only to test.

Environment: PAYSLIP_HEADER_TIMEOUT (seconds, default 10), PAYSLIP_BODY_GRACE (seconds,
default 15), PAYSLIP_BODY_MIN_RATE (bytes per second, default 32768).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.composition.settings import read_settings


@dataclass(frozen=True, slots=True)
class SlowClientLimits:
    header_timeout: float = 10.0
    body_grace: float = 15.0
    body_min_rate: float = 32 * 1024

    @classmethod
    def from_env(cls) -> SlowClientLimits:
        """Read now (service.composition.settings): a value that is not a positive number is
        refused with one
        line naming the variable, so a typo never turns the protection off."""
        env = read_settings()
        return cls(
            header_timeout=env.header_timeout,
            body_grace=env.body_grace,
            body_min_rate=env.body_min_rate,
        )

    def too_slow(self, elapsed: float, head_done: bool, received: int) -> bool:
        """Whether a request whose first byte came `elapsed` seconds ago, with `received` bytes
        of it in (head included), is arriving slower than allowed."""
        if not head_done:
            return elapsed > self.header_timeout
        return elapsed > self.body_grace + received / self.body_min_rate
