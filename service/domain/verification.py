"""verifyPayload: read the barcode, find the record, authenticate and decrypt, build the result.

The key choice follows PROTOCOL §2 exactly; an unpinned record is pinned to the first key that
authenticates so later verifications try one key only. The plaintext lives only inside this call.
"""

from __future__ import annotations

import logging

from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.keys import KeyRing
from service.domain.records import payslip_view
from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.crypto import AuthenticationFailed, decrypt
from service.protocol.encoding import b64url_decode
from service.protocol.errors import ErrorCode
from service.protocol.pii_text import parse_pii_text
from service.protocol.schemas import EmployeePii, VerificationResult, VerifyRequest
from service.storage.port import Record, Store, StoreUnavailable

log = logging.getLogger("service.verification")


def _decryption_failed() -> ServiceError:
    return ServiceError(
        ErrorCode.DECRYPTION_FAILED,
        "the barcode's ciphertext does not authenticate for its record: it was altered or was "
        "not issued by the record's issuer",
    )


class Verification:
    def __init__(self, store: Store, keys: KeyRing, clock: Clock) -> None:
        self._store = store
        self._keys = keys
        self._clock = clock

    def verify_request(self, request: VerifyRequest) -> VerificationResult:
        return self.verify(request.barcode)

    def verify(self, barcode: str) -> VerificationResult:
        try:
            payload = parse_barcode(barcode)
        except BarcodeTextError as exc:
            raise validation_failed("barcode", str(exc)) from None
        record = self._store.get_record(payload.service_reference)
        if record is None:
            raise ServiceError(
                ErrorCode.SERVICE_REFERENCE_NOT_FOUND,
                "no payslip is registered under this reference",
            )
        plaintext = self._decrypt(record, payload.ciphertext)
        return VerificationResult(
            verified=record.status == "active",
            service_reference=record.service_reference,
            payslip=payslip_view(record, self._store.get_issuer(record.issuer_id)),
            employee=EmployeePii.model_validate(parse_pii_text(plaintext)),
            decrypted_at=iso_z(self._clock.now()),
        )

    def _pin(self, service_reference: str, key_version: str) -> None:
        """Pinning only saves later verifications from trying every key, so it is best effort:
        a store that cannot write (a full disk) must not stop a verification that has already
        succeeded. An unwritten pin is simply tried again at the record's next verification."""
        try:
            self._store.pin_key(service_reference, key_version)
        except StoreUnavailable:
            log.warning("could not pin a record's key; it is tried again at its next verification")

    def _decrypt(self, record: Record, ciphertext: bytes) -> bytes:
        iv, tag = b64url_decode(record.iv), b64url_decode(record.tag)
        if record.key_version:
            key = self._keys.get(record.key_version)
            if key is None or key.state == "retired":
                raise ServiceError(
                    ErrorCode.KEY_VERSION_UNAVAILABLE,
                    "the key this payslip was encrypted with is retired",
                )
            try:
                return decrypt(ciphertext, iv, tag, self._keys.cipher(key))
            except AuthenticationFailed:
                raise _decryption_failed() from None
        candidates = self._keys.candidates(record.issuer_id)
        for key in candidates:
            try:
                plaintext = decrypt(ciphertext, iv, tag, self._keys.cipher(key))
            except AuthenticationFailed:
                continue
            self._pin(record.service_reference, key.key_version)
            return plaintext
        if not candidates or self._keys.retired_key_was_live_at(
            record.issuer_id, record.registered_at
        ):
            raise ServiceError(
                ErrorCode.KEY_VERSION_UNAVAILABLE,
                "no live key of the issuer decrypts this payslip; its key may have been retired",
            )
        raise _decryption_failed()
