"""Reading and checking a pay-run file: kept so `app.issuer.payrun` imports keep working.

The code lives in `app.issuer.run` (`source` reads the file, `rows` checks each row,
`stray_pii` finds personal data in non-personal columns).
"""

from __future__ import annotations

from app.issuer.run.rows import META_COLUMNS, PayrunFileError, PayrunRow, RowProblem
from app.issuer.run.source import count_rows, read_payrun, read_text_rows
from app.issuer.run.stray_pii import find_stray_pii, stray_pii

__all__ = [
    "META_COLUMNS",
    "PayrunFileError",
    "PayrunRow",
    "RowProblem",
    "count_rows",
    "find_stray_pii",
    "read_payrun",
    "read_text_rows",
    "stray_pii",
]
