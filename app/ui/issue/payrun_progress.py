"""How far a pay run is, shown so that a long run never looks stuck.

The bar is determinate through every phase (checking, registering, badges, PDFs): it counts
thousandths of the whole run, the average of the phases' fractions, so it moves smoothly while
the phases overlap, and it never goes backwards or reads 100% before the run has really ended.
Beside it: rows done, rows per second and the time left; under it a line per phase (✓ done,
▸ the one the run is in, ○ still to come). The counts come from the runner's
:class:`~app.issuer.progress.Progress`; this module only turns them into widgets' text.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QVBoxLayout

from app.issuer.progress import PhaseCount, Progress
from app.ui.widgets.staff_style import label

SCALE = 1000
"""The bar counts thousandths of the whole run, so it moves smoothly through every phase."""


def phase_views(progress: Progress) -> list[PhaseCount]:
    """Every phase's count; the PDFs phase only when the run stamps any."""
    return [s for s in progress.steps() if s.phase != "pdfs" or bool(progress.with_pdf)]


def overall_fraction(views: list[PhaseCount]) -> float | None:
    fractions = [v.fraction for v in views]
    if not fractions or any(f is None for f in fractions):
        return None
    return sum(f for f in fractions if f is not None) / len(fractions)


def rows_words(
    phase: str, views: list[PhaseCount], done: int, total: int | None, *, finished: bool
) -> str:
    """The figure beside the bar, counting what the bar counts. Rows are "done" only once every
    phase is through with them, so mid-run "0 of 2500 rows done" stood beside a bar at 51 %
    (issue 35): until the end it names the step the run is in and that step's rows."""
    of = f" of {total:,}" if total is not None else ""
    if finished:
        return f"{done:,}{of} rows done"
    current = next((view for view in views if view.phase == phase), None)
    if current is None:
        return f"{done:,}{of} rows done"
    step_of = f" of {current.total:,}" if current.total is not None else ""
    words = f"{current.label}: {current.done:,}{step_of}"
    return words + (f" · {done:,}{of} rows done" if done and len(views) > 1 else "")


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def snapshot(progress: Progress) -> Progress:
    """A copy: the worker keeps mutating its own Progress while the GUI reads this one."""
    return Progress(**vars(progress))


class RunProgress(QObject):
    """The bar (``bar``), the figures (``rows_label``, ``rate_label``, ``left_label``) and the
    phase lines (``phase_label``) of one pay-run tab."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._started = 0.0
        self.bar = QProgressBar()
        self.bar.setObjectName("runProgress")
        self.bar.setRange(0, SCALE)
        self.bar.setValue(0)
        self.bar.setFormat("%p%")
        self.rows_label = label("", "fieldValue", wrap=False)
        self.rate_label = label("", "fieldLabel", wrap=False)
        self.left_label = label("", "fieldLabel", wrap=False)
        self.phase_label = label("", "hint")
        self.phase_label.setObjectName("runPhases")

    def add_to(self, layout: QVBoxLayout) -> None:
        layout.addWidget(self.bar)
        figures = QHBoxLayout()
        figures.addWidget(self.rows_label)
        figures.addStretch(1)
        figures.addWidget(self.rate_label)
        figures.addWidget(self.left_label)
        layout.addLayout(figures)
        layout.addWidget(self.phase_label)

    def restart(self) -> None:
        """A new check or run begins: empty bar and figures, and its clock starts now."""
        self._started = time.monotonic()
        self.bar.setValue(0)
        self.rows_label.setText("")
        self.rate_label.setText("")
        self.left_label.setText("")
        self.phase_label.setText("")

    def show(
        self,
        phase: str,
        views: list[PhaseCount],
        elapsed: float,
        done: int,
        total: int | None,
        *,
        finished: bool,
    ) -> str | None:
        """Show the counts; returns the step the run is in, for the status line (None once
        finished, or when the phase is not among ``views``)."""
        fraction = overall_fraction(views)
        if fraction is not None:
            value = round(fraction * SCALE)
            if not finished:
                value = min(value, SCALE - 1)  # full only when it is really finished
            self.bar.setValue(max(value, self.bar.value()))
        elapsed = elapsed or (time.monotonic() - self._started)
        self.rows_label.setText(rows_words(phase, views, done, total, finished=finished))
        if elapsed > 0.2 and done:
            self.rate_label.setText(f"{done / elapsed:,.0f} rows/s")
        if fraction and 0.02 < fraction < 1 and not finished:
            self.left_label.setText(f"· about {_duration(elapsed / fraction - elapsed)} left")
        elif finished:
            self.left_label.setText("")
        lines = []
        for view in views:
            mark = "✓" if view.fraction == 1.0 else ("▸" if view.phase == phase else "○")
            count = f"{view.done} of {view.total}" if view.total is not None else f"{view.done}"
            lines.append(f"{mark} {view.label}: {count}")
        self.phase_label.setText("\n".join(lines))
        number = next((i for i, view in enumerate(views, 1) if view.phase == phase), 0)
        if finished or not number:
            return None
        step = f"Step {number} of {len(views)}: " if len(views) > 1 else ""
        return f"{step}{views[number - 1].label.lower()}…"
