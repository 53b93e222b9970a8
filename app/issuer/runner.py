"""Running a pay run: kept so `app.issuer.runner` imports keep working.

The engine lives in `app.issuer.run` (`runner.PayRun` drives it; see that package's docstring
for where results, journal replay, reconciliation and outputs are).
"""

from __future__ import annotations

from app.issuer.progress import PHASES, PhaseCount, Progress
from app.issuer.run.results import (
    MAX_BATCH,
    RESULT_COLUMNS,
    RESULTS_NAME,
    RecordResult,
    RunCancelled,
    RunInterrupted,
    RunSettings,
    RunSummary,
)
from app.issuer.run.runner import REPORT_EVERY, PayRun

__all__ = [
    "MAX_BATCH",
    "PHASES",
    "REPORT_EVERY",
    "RESULTS_NAME",
    "RESULT_COLUMNS",
    "PayRun",
    "PhaseCount",
    "Progress",
    "RecordResult",
    "RunCancelled",
    "RunInterrupted",
    "RunSettings",
    "RunSummary",
]
