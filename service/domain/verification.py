"""verifyPayload: read the barcode, find the record, authenticate and decrypt, build the result.

The key choice follows PROTOCOL §2 exactly; an unpinned record is pinned to the first key that
authenticates so later verifications try one key only. The plaintext lives only inside this call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from service.domain.clients import usable_now
from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.keys import KeyRing
from service.domain.records import payslip_view
from service.domain.tokens import refuse_inactive_client
from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.crypto import AuthenticationFailed, decrypt
from service.protocol.encoding import b64url_decode
from service.protocol.errors import ErrorCode
from service.protocol.pii_text import parse_pii_text
from service.protocol.schemas import EmployeePii, VerificationResult, VerifyRequest
from service.protocol.vocabulary import KeyState, RecordStatus
from service.storage.port import Issuer, KeyVersion, Record, Store, StoreUnavailable

log = logging.getLogger("service.verification")


def _decryption_failed() -> ServiceError:
    return ServiceError(
        ErrorCode.DECRYPTION_FAILED,
        "the barcode's ciphertext does not authenticate for its record: it was altered or was "
        "not issued by the record's issuer",
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """How one verification ended: its result, or the refusal about the document."""

    service_reference: str
    issuer: Issuer | None = None
    result: VerificationResult | None = None
    refusal: ServiceError | None = None


class Verification:
    def __init__(self, store: Store, keys: KeyRing, clock: Clock) -> None:
        self._store = store
        self._keys = keys
        self._clock = clock

    def verify_request(
        self, request: VerifyRequest, client_id: str | None = None
    ) -> VerificationResult:
        return self.verify(request.barcode, client_id)

    def verify(self, barcode: str, client_id: str | None = None) -> VerificationResult:
        """`client_id`: the calling client, whose current state is read together with the record,
        its issuer and keys (one store read, one round trip on PostgreSQL) and refused when it
        is unknown or disabled (the token check left that to this read)."""
        checked = self.check(barcode, client_id)
        if checked.refusal is not None:
            raise checked.refusal
        assert checked.result is not None
        return checked.result

    def check(self, barcode: str, client_id: str | None = None) -> Checked:
        """`verify`, with a refusal about the document (unknown reference, altered, key
        withdrawn) returned rather than raised, together with what was read: a receipt records
        those too (service.domain.receipts). Bad input and a refused caller still raise."""
        try:
            payload = parse_barcode(barcode)
        except BarcodeTextError as exc:
            raise validation_failed("barcode", str(exc)) from None
        read = self._store.read_for_verification(payload.service_reference, client_id)
        if client_id is not None:
            refuse_inactive_client(usable_now(read.client, self._clock))
        record = read.record
        if record is None:
            return Checked(
                payload.service_reference,
                refusal=ServiceError(
                    ErrorCode.SERVICE_REFERENCE_NOT_FOUND,
                    "no payslip is registered under this reference",
                ),
            )
        try:
            plaintext = self._decrypt(record, payload.ciphertext, read.keys)
        except ServiceError as refusal:
            return Checked(record.service_reference, read.issuer, refusal=refusal)
        return Checked(
            record.service_reference,
            read.issuer,
            VerificationResult(
                verified=record.status == RecordStatus.ACTIVE,
                service_reference=record.service_reference,
                payslip=payslip_view(record, read.issuer),
                employee=EmployeePii.model_validate(parse_pii_text(plaintext)),
                decrypted_at=iso_z(self._clock.now()),
            ),
        )

    def _pin(self, service_reference: str, key_version: str) -> None:
        """Pinning only saves later verifications from trying every key, so it is best effort:
        a store that cannot write (a full disk) must not stop a verification that has already
        succeeded. An unwritten pin is simply tried again at the record's next verification."""
        try:
            self._store.pin_key(service_reference, key_version)
        except StoreUnavailable:
            log.warning("could not pin a record's key; it is tried again at its next verification")

    def _decrypt(self, record: Record, ciphertext: bytes, keys: Sequence[KeyVersion]) -> bytes:
        """`keys`: the record's issuer's keys and its pinned key, as read with the record."""
        iv, tag = b64url_decode(record.iv), b64url_decode(record.tag)
        if record.key_version:
            key = next((k for k in keys if k.key_version == record.key_version), None)
            if key is None or key.state == KeyState.RETIRED:
                raise ServiceError(
                    ErrorCode.KEY_VERSION_UNAVAILABLE,
                    "the key this payslip was encrypted with is retired",
                )
            try:
                return decrypt(ciphertext, iv, tag, self._keys.cipher(key))
            except AuthenticationFailed:
                raise _decryption_failed() from None
        candidates = self._keys.candidates(record.issuer_id, keys)
        for key in candidates:
            try:
                plaintext = decrypt(ciphertext, iv, tag, self._keys.cipher(key))
            except AuthenticationFailed:
                continue
            self._pin(record.service_reference, key.key_version)
            return plaintext
        if not candidates or self._keys.retired_key_was_live_at(
            record.issuer_id, record.registered_at, keys
        ):
            raise ServiceError(
                ErrorCode.KEY_VERSION_UNAVAILABLE,
                "no live key of the issuer decrypts this payslip; its key may have been retired",
            )
        raise _decryption_failed()
