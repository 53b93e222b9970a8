"""Time as the domain sees it: injected, so tests can move it, and always UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def iso_z(moment: datetime) -> str:
    """UTC ISO 8601 with a trailing Z and millisecond precision, as every response uses."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )
