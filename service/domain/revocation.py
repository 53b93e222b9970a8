"""Record revocation (PROTOCOL §6): an issuer withdraws one of its own payslips."""

from __future__ import annotations

from typing import Any

from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.tokens import Principal
from service.protocol.barcode_text import REFERENCE_RE
from service.protocol.errors import ErrorCode
from service.storage.port import Store

MAX_REASON = 500


class Revocation:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def revoke(self, principal: Principal, reference: str, body: object) -> dict[str, Any]:
        reason = self._reason(body)
        record = None
        if REFERENCE_RE.match(reference):
            record = self._store.revoke_record(
                reference, principal.owner_id, reason, iso_z(self._clock.now())
            )
        if record is None:
            raise ServiceError(
                ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "none of your records has this reference"
            )
        return {
            "service_reference": record.service_reference,
            "status": "revoked",
            "revoked_at": record.revoked_at,
        }

    @staticmethod
    def _reason(body: object) -> str | None:
        if body is None:
            return None
        if not isinstance(body, dict):
            raise validation_failed("", "the body must be a JSON object")
        unknown = sorted(set(body) - {"reason"})
        if unknown:
            raise validation_failed(unknown[0], "is not a known field")
        reason = body.get("reason")
        if reason is None:
            return None
        if not isinstance(reason, str) or len(reason) > MAX_REASON:
            raise validation_failed("reason", f"must be text of at most {MAX_REASON} characters")
        return reason
