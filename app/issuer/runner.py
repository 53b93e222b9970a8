"""Running a pay run: kept so `app.issuer.runner` imports keep working.

The engine lives in `app.issuer.run` (`runner.PayRun` drives it; see that package's docstring
for where results, journal replay, reconciliation and outputs are). This module re-exports the
public names of `app.issuer.progress`, `run.results` and `run.runner`, as their `__all__` say.
"""

from __future__ import annotations

from app.issuer import progress as _progress
from app.issuer.progress import *  # noqa: F403
from app.issuer.run import results as _results
from app.issuer.run import runner as _runner
from app.issuer.run.results import *  # noqa: F403
from app.issuer.run.runner import *  # noqa: F403

__all__ = [*_progress.__all__, *_results.__all__, *_runner.__all__]
