"""The add-records verdict rule (PROTOCOL §6 "Batch" and "Idempotency"), defined once.

Both storage adapters call `resolve_additions` inside whatever makes their write atomic (the
TinyDB adapter's exclusive transaction, the PostgreSQL adapter's advisory-locked transaction):
the adapter supplies read-only views of what is stored, the rule decides every record's verdict
and which records to insert, and the adapter inserts exactly those. Keeping the rule pure (no
I/O, no locks, inputs never mutated) is what lets it be tested on its own and lets the two
adapters never disagree on an outcome.

Per record, in order:

1. its reference is already taken (stored, or CREATED earlier in this call): DUPLICATE when the
   fingerprints are equal and the issuer is the same, else CONFLICT. Equal fingerprints normally
   imply the same issuer (the domain hashes it in); the issuer check guarantees that an outcome
   never carries another issuer's record;
2. else its (issuer_id, iv) is taken (stored, or CREATED earlier in this call): IV_REUSED;
3. else CREATED.

Only CREATED records reserve a reference or an IV for the records after them: a rejected record
stores nothing and reserves nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

from service.storage.port import AddOutcome, AddStatus, Record

__all__ = ["AddPlan", "resolve_additions"]


@dataclass(frozen=True, slots=True)
class AddPlan:
    """The verdicts of one `add_records` call and the records it must insert."""

    outcomes: list[AddOutcome]
    """One per input record, in input order."""
    created: list[Record]
    """The CREATED records, in input order: what the adapter writes (all in one durable write)."""


def resolve_additions(
    records: Sequence[Record],
    stored: Callable[[str], Record | None],
    stored_ivs: Container[tuple[str, str]],
) -> AddPlan:
    """Apply the rule to `records` against what is stored.

    `stored(reference)` returns the stored record with that reference, or None; `stored_ivs`
    holds the `(issuer_id, iv)` pairs already stored (the adapter may pass only the pairs the
    batch asks about). Neither is modified.
    """
    batch_refs: dict[str, Record] = {}
    batch_ivs: set[tuple[str, str]] = set()
    outcomes: list[AddOutcome] = []
    created: list[Record] = []
    for record in records:
        ref = record.service_reference
        existing = batch_refs.get(ref)
        if existing is None:
            existing = stored(ref)
        if existing is not None:
            if (
                existing.fingerprint == record.fingerprint
                and existing.issuer_id == record.issuer_id
            ):
                outcomes.append(AddOutcome(AddStatus.DUPLICATE, existing))
            else:
                outcomes.append(AddOutcome(AddStatus.CONFLICT))
            continue
        iv_key = (record.issuer_id, record.iv)
        if iv_key in batch_ivs or iv_key in stored_ivs:
            outcomes.append(AddOutcome(AddStatus.IV_REUSED))
            continue
        batch_refs[ref] = record
        batch_ivs.add(iv_key)
        created.append(record)
        outcomes.append(AddOutcome(AddStatus.CREATED, record))
    return AddPlan(outcomes, created)
