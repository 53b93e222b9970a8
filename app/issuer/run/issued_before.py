"""Before a pay run registers anything: which of its rows this issuer issued before.

The issuer's ledger (app.issuer.ledger) knows every payslip this computer registered, by
external id, period and payment date. A run that would register one of them again (the same
export into a new output folder) stops here, before its journal is opened or a batch is sent,
unless the person chose to skip those rows or to issue them again. Payslips issued into this
run's own output folder are not "before": that is the same run, resumed.

Reading the file once more costs a pass of checks, only when the ledger holds anything for the
issuer (a first run pays nothing).
"""

from __future__ import annotations

from app.issuer.ledger import AlreadyIssued, Issued, Ledger, day_words, payslip_key
from app.issuer.run.results import RunSettings
from app.issuer.run.rows import PayrunRow
from app.issuer.run.source import PayrunSource

__all__ = ["issued_before", "skipped_reason"]


def issued_before(
    settings: RunSettings, ledger: Ledger | None, source: PayrunSource
) -> dict[int, Issued]:
    """Row number -> the earlier payslip, for rows to skip. Raises `AlreadyIssued` when rows
    were issued before and the settings say stop; {} when they say issue again."""
    if ledger is None or settings.already_issued == "again":
        return {}
    earlier = ledger.active(except_in=settings.out_dir)
    if not earlier:
        return {}
    matches: list[tuple[int, Issued]] = []
    rows = source.rows(
        default_schema=settings.default_schema,
        # A combined PDF is split later; rows are matched by their figures, not their PDFs.
        pdf_dir=settings.pdf_dir if settings.combined_pdf is None else None,
    )
    for row in rows:
        if isinstance(row, PayrunRow):
            found = earlier.get(payslip_key(row.external_id, row.payslip_non_pii))
            if found is not None:
                matches.append((row.number, found))
    if matches and settings.already_issued == "stop":
        raise AlreadyIssued(matches)
    return dict(matches)


def skipped_reason(item: Issued) -> str:
    """The results.csv reason of a skipped row (no personal data: a day and a folder)."""
    return f"issued on {day_words(item.issued_on)} into {item.out_dir}; skipped"
