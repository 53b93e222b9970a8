"""A pay-run row's status: the `status` column of results.csv, what the journal keeps for an
acknowledged row and what the progress counts are counted by.

Three of the words are the service's own for a record it answered (`BatchItemStatus`, defined
once in the protocol); REJECTED and SKIPPED are this side's: a row that failed its checks, or
one issued before and skipped on request, never sent. Kept apart from `app.issuer.run` so that
`app.issuer.progress` can import it without importing the pay-run engine.
"""

from __future__ import annotations

from enum import StrEnum

from service.protocol.vocabulary import BatchItemStatus

__all__ = ["RowStatus"]


class RowStatus(StrEnum):
    CREATED = BatchItemStatus.CREATED
    DUPLICATE = BatchItemStatus.DUPLICATE
    ERROR = BatchItemStatus.ERROR
    """The service refused the record; `code` and `reason` say why."""
    REJECTED = "rejected"
    """The row failed its checks here and was not sent."""
    SKIPPED = "skipped"
    """Issued before (the issuer's ledger) and skipped on purpose: not sent, no new badge."""

    @classmethod
    def of_answer(cls, status: str) -> RowStatus:
        """The row's status for the service's answer to its record: CREATED or DUPLICATE as
        answered, ERROR for anything else (a refusal, or a word a newer service added)."""
        if status == BatchItemStatus.CREATED:
            return cls.CREATED
        if status == BatchItemStatus.DUPLICATE:
            return cls.DUPLICATE
        return cls.ERROR

    @property
    def registered(self) -> bool:
        """The service holds the record (created now or by an earlier attempt)."""
        return self is RowStatus.CREATED or self is RowStatus.DUPLICATE
