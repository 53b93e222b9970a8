"""Record revocation (PROTOCOL §6): an issuer withdraws one of its own payslips."""

from __future__ import annotations

from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError
from service.domain.tokens import Principal
from service.protocol.barcode_text import REFERENCE_RE
from service.protocol.errors import ErrorCode
from service.protocol.schemas import RevocationResult
from service.protocol.vocabulary import RecordStatus
from service.storage.port import Store


class Revocation:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def revoke(
        self, principal: Principal, reference: str, reason: str | None = None
    ) -> RevocationResult:
        """`reason` is the issuer's own note (checked where the body is read, at most
        `service.http.inputs.MAX_REASON` characters); revoking again is a no-op."""
        record = None
        if REFERENCE_RE.match(reference):
            record = self._store.revoke_record(
                reference, principal.owner_id, reason, iso_z(self._clock.now())
            )
        if record is None:
            raise ServiceError(
                ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "none of your records has this reference"
            )
        return RevocationResult(
            service_reference=record.service_reference,
            status=RecordStatus.REVOKED,
            revoked_at=record.revoked_at,
        )
