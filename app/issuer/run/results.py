"""What a pay run is given and what it gives back: its settings, each row's result, the summary
and the two ways it can stop early.

These are the run's public vocabulary: the command line (`app.commands.issue_run`), the pay-run
tab and the results file all speak it, while the journal, reconciliation and output modules only
produce it. A `RecordResult` is exactly one line of `results.csv` and is also what the journal
stores for an acknowledged row, so it never holds personal data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.issuer.export.mapping import ExportMapping
from app.issuer.progress import Progress
from app.issuer.row_status import RowStatus
from service.documents.badge import BADGE_WIDTH

__all__ = [
    "MAX_BATCH",
    "RESULTS_NAME",
    "RESULT_COLUMNS",
    "RecordResult",
    "RunCancelled",
    "RunInterrupted",
    "RunSettings",
    "RunSummary",
]

MAX_BATCH = 1000
"""The most records registerNonPIIBatch accepts in one call."""
RESULTS_NAME = "results.csv"
RESULT_COLUMNS = (
    "row",
    "external_id",
    "status",
    "service_reference",
    "code",
    "reason",
    "badge",
    "pdf",
)


class RunInterrupted(Exception):
    """The run stopped before every row was handled. It can be resumed: run it again with the
    same output folder. The message is plain text fit for a dialog or a terminal."""


class RunCancelled(RunInterrupted):
    """The user stopped the run."""


@dataclass(frozen=True)
class RunSettings:
    """What to run and where to put it."""

    source: Path
    out_dir: Path
    pdf_dir: Path | None = None
    default_schema: str | None = None
    batch_size: int = MAX_BATCH
    badge_width: int = BADGE_WIDTH
    workers: int | None = None
    """Badge worker processes; None picks the CPU count, 0 or 1 renders in this process."""
    mapping: ExportMapping | None = None
    """How a payroll system's export maps onto payslip fields (PROTOCOL §12)."""
    combined_pdf: Path | None = None
    """One PDF holding every employee's payslip, split by the names and ids in its text."""
    already_issued: Literal["stop", "skip", "again"] = "stop"
    """Rows the issuer's ledger says were issued before (app.issuer.ledger): stop before
    registering anything (`AlreadyIssued`), skip them, or issue them again deliberately."""

    def __post_init__(self) -> None:
        if not 1 <= self.batch_size <= MAX_BATCH:
            raise ValueError(f"batch size must be 1 to {MAX_BATCH}")


@dataclass(frozen=True)
class RecordResult:
    """One row's outcome, as written to results.csv. Never holds personal data."""

    row: int
    external_id: str
    status: RowStatus
    service_reference: str = ""
    code: str = ""
    reason: str = ""
    badge: str = ""
    pdf: str = ""

    @property
    def ok(self) -> bool:
        return self.status.registered


@dataclass(frozen=True)
class RunSummary:
    progress: Progress
    results_csv: Path
    resumed: bool
    seconds: float
    notes: tuple[str, ...] = ()
    """Plain lines about the run as a whole (pages of a combined PDF nobody was matched to)."""

    @property
    def clean(self) -> bool:
        return self.progress.errors == 0 and self.progress.rejected == 0
