"""Three-way reconciliation: each good row of the file against what an interrupted run left.

A checked row is in exactly one of three places: acknowledged in the journal (its badge is on
disk and its result known), journaled and sent but never answered (pending), or new. Each case,
plus "the row was edited since", gets its own answer, so a resumed run sends nothing twice and
never silently replaces what the service already holds:

* acknowledged, unchanged: its old result stands and counts as done in every phase;
* acknowledged, changed: rejected (the registered version is kept);
* pending, unchanged: the same sealed entry is resent byte for byte (the service answers
  `duplicate` for what it already has);
* pending, changed: rejected (a new seal would be a second record for the same row);
* new: sealed now, with a fresh IV and reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.issuer.records import IssuerKey, non_pii_record
from app.issuer.row_status import RowStatus
from app.issuer.run.journal_replay import Acked, Entry, Pending
from app.issuer.run.results import RecordResult
from app.issuer.run.rows import PayrunRow
from service.protocol.encoding import new_reference
from service.protocol.sealing import SealedPii, seal

__all__ = ["Reconciled", "reconcile", "seal_row"]

_CHANGED_AFTER_REGISTERED = (
    "this row changed after an interrupted run registered it; the registered version is kept "
    "(issue the new one in a new run)"
)
_CHANGED_AFTER_SENT = (
    "this row changed after an interrupted run sent it; issue it again in a new run"
)


@dataclass(frozen=True)
class Reconciled:
    """What to do with one row. `done` and `changed` carry a final `result`; `resend` and `new`
    carry the `entry` to put in the next batch."""

    kind: Literal["done", "changed", "resend", "new"]
    result: RecordResult | None = None
    entry: Entry | None = None


def seal_row(row: PayrunRow, fingerprint: str, key: IssuerKey, issued_at: str) -> Entry:
    """Encrypt a row's personal data (fresh IV) and build its record under a new reference.
    `issued_at` is the run's time, used when the row gives none, so a resent row is identical."""
    sealed: SealedPii = seal(row.pii_text, key.encryption_key)
    body = non_pii_record(
        row.schema,
        row.issued_at or issued_at,
        row.payslip_non_pii,
        sealed,
        reference=new_reference(),
        key_version=key.key_version,
        external_id=row.external_id,
    )
    return Entry(
        row=row.number,
        fingerprint=fingerprint,
        external_id=row.external_id,
        body=body,
        ciphertext=sealed.ciphertext,
        stem=row.file_stem,
        pdf=row.pdf,
        pdf_page=row.pdf_page,
        pdf_corner=row.pdf_corner,
    )


def _changed(row: PayrunRow, reference: str, reason: str) -> Reconciled:
    """A row edited since an interrupted run registered or sent it: rejected, keeping the
    reference the service already holds so the clerk can find it."""
    result = RecordResult(row.number, row.external_id, RowStatus.REJECTED, reference, reason=reason)
    return Reconciled("changed", result=result)


def reconcile(
    row: PayrunRow,
    fingerprint: str,
    acked: Acked,
    pending: Pending,
    *,
    key: IssuerKey,
    issued_at: str,
) -> Reconciled:
    """Decide one row's fate (see the module docstring). Takes the row out of `acked` and
    `pending`, so what is left there afterwards belongs to rows no longer in the file."""
    done = acked.pop(row.number, None)
    earlier = pending.pop(row.number, None)
    if done is not None:
        result, acked_fingerprint = done
        if acked_fingerprint != fingerprint:
            return _changed(row, result.service_reference, _CHANGED_AFTER_REGISTERED)
        return Reconciled("done", result=result)
    if earlier is not None:
        if earlier.fingerprint != fingerprint:
            return _changed(row, earlier.reference, _CHANGED_AFTER_SENT)
        return Reconciled("resend", entry=earlier)
    return Reconciled("new", entry=seal_row(row, fingerprint, key, issued_at))
