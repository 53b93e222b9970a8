"""A pay run's progress: counts per phase, for a progress bar, rows per second and time left.

The phases overlap (rows stream through in batches of up to 1000, and badges of one batch are
drawn while the next one is checked and registered), so every phase has its own count of rows
done and of rows to do; `phase` names what the run's own thread is doing at the moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from app.issuer.row_status import RowStatus

__all__ = ["PHASES", "PhaseCount", "Progress"]


class _Outcome(Protocol):
    @property
    def status(self) -> str: ...


#: The phases of a pay run, in order, with the words a screen shows for them.
PHASES: tuple[tuple[str, str], ...] = (
    ("checking", "Checking rows"),
    ("registering", "Registering with the service"),
    ("badges", "Making badges"),
    ("pdfs", "Stamping payslip PDFs"),
)


@dataclass(frozen=True)
class PhaseCount:
    """How far one phase is: `done` of `total` rows (`total` None while unknown; an estimate
    until the whole file was read)."""

    phase: str
    label: str
    done: int
    total: int | None

    @property
    def fraction(self) -> float | None:
        if self.total is None:
            return None
        return 1.0 if self.total <= 0 else min(self.done / self.total, 1.0)

    def rate(self, elapsed: float) -> float | None:
        """Rows per second over the run so far."""
        return self.done / elapsed if elapsed > 0 and self.done else None

    def seconds_left(self, elapsed: float) -> float | None:
        """Time left for this phase at its rate so far (None when not computable)."""
        rate = self.rate(elapsed)
        if rate is None or self.total is None:
            return None
        return max(self.total - self.done, 0) / rate


@dataclass
class Progress:
    """Counts so far; `total` is an estimate of the rows in the file (None when unknown), exact
    once `total_exact` is set. Every field is a plain dataclass field, so `Progress(**vars(p))`
    copies it (a GUI snapshots it that way)."""

    rows: int = 0
    """Rows whose result is final (written to results.csv)."""
    total: int | None = None
    created: int = 0
    duplicate: int = 0
    errors: int = 0
    rejected: int = 0
    skipped: int = 0
    """Rows issued before (the ledger) and skipped on request."""
    batches: int = 0
    phase: str = "checking"
    """What the run is doing now: checking, registering, badges, pdfs, done."""
    checked: int = 0
    """Rows read and checked."""
    accepted: int = 0
    """Checked rows that passed the checks (the others are rejected)."""
    answered: int = 0
    """Records the service answered (created, duplicate or refused)."""
    badges: int = 0
    """Badge PNGs written."""
    pdfs: int = 0
    """Stamped PDFs written (or given up on: a damaged PDF counts as handled)."""
    with_pdf: int = 0
    """Accepted rows that name a PDF to stamp."""
    refused: int = 0
    """Records the service refused when it answered (no badge follows for them)."""
    total_exact: bool = False
    elapsed: float = 0.0
    """Seconds since the run started."""

    @property
    def registered(self) -> int:
        return self.created + self.duplicate

    def count(self, result: _Outcome) -> None:
        self.rows += 1
        if result.status == RowStatus.CREATED:
            self.created += 1
        elif result.status == RowStatus.DUPLICATE:
            self.duplicate += 1
        elif result.status == RowStatus.REJECTED:
            self.rejected += 1
        elif result.status == RowStatus.SKIPPED:
            self.skipped += 1
        else:
            self.errors += 1

    def steps(self) -> tuple[PhaseCount, ...]:
        """Every phase's count, in order. Until the whole file is read, later phases' totals
        are estimated from the rows checked so far (their share of accepted rows and PDFs)."""
        done = (self.checked, self.answered, self.badges, self.pdfs)
        if self.phase == "done":
            return tuple(
                PhaseCount(phase, label, n, n)
                for (phase, label), n in zip(PHASES, done, strict=True)
            )
        total = self.total
        if total is not None and not self.total_exact:
            total = max(total, self.checked)
        to_send: int | None
        to_stamp: int | None
        if self.total_exact:
            to_send, to_stamp = self.accepted, self.with_pdf
        elif total is None:
            to_send = to_stamp = None
        elif not self.checked:  # nothing read yet: every row may go through, no PDF known
            to_send, to_stamp = total, 0
        else:
            to_send = max(self.accepted, round(total * self.accepted / self.checked))
            to_stamp = max(self.with_pdf, round(total * self.with_pdf / self.checked))
        to_draw = None if to_send is None else max(to_send - self.refused, self.badges)
        totals = (total, to_send, to_draw, to_stamp)
        return tuple(
            PhaseCount(phase, label, n, t)
            for (phase, label), n, t in zip(PHASES, done, totals, strict=True)
        )

    def current(self) -> PhaseCount:
        """The step of the phase the run is in now (the last one once done)."""
        steps = self.steps()
        return next((s for s in steps if s.phase == self.phase), steps[-1])
