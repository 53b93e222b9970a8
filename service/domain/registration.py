"""The three registration operations (spec + PROTOCOL §2, §3, §6).

The boundary validates a request completely before it gets here (`service.http.inputs`); the
store then applies the uniqueness rules atomically. A batch is the exception by design: its
envelope is validated at the boundary, each record here, because a bad record is that record's
result, never the request's (PROTOCOL §6). registerAndBuildBarcode authenticates the submitted
ciphertext and renders the badge before it stores anything, so a rejected request leaves no
record behind and its ciphertext is dropped with the request.
"""

from __future__ import annotations

import base64
from typing import Any

from service.documents.badge import BadgeError, render_badge_png
from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.keys import KeyRing
from service.domain.records import new_record
from service.domain.tokens import Principal
from service.domain.validation import schema_failure
from service.protocol import schemas
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.crypto import AuthenticationFailed, decrypt
from service.protocol.encoding import (
    EncodingError,
    b64url_decode,
    b64url_tail_is_canonical,
    new_reference,
)
from service.protocol.errors import ErrorCode
from service.protocol.schemas import (
    Barcode,
    BarcodeResult,
    BatchResult,
    RegistrationResult,
)
from service.protocol.vocabulary import BatchItemStatus
from service.storage.port import AddOutcome, AddStatus, Record, Store


def _check_encoding(request: schemas.PayslipRecord) -> None:
    """IV and tag must be canonical base64url: two spellings of one IV would defeat the
    one-IV-per-issuer rule. Their schema has checked the alphabet and length already."""
    meta = request.encryption_metadata
    for name, value in (("iv", meta.iv), ("tag", meta.tag)):
        if not b64url_tail_is_canonical(value):
            raise validation_failed(
                f"encryption_metadata.{name}", "is not canonical unpadded base64url"
            )


def _echo(item: dict[str, Any]) -> dict[str, str]:
    """What a batch result repeats from its record, when the record carried it as text."""
    return {
        name: value
        for name in ("service_reference", "external_id")
        if isinstance(value := item.get(name), str)
    }


def _refused(echo: dict[str, str], error: ServiceError) -> dict[str, str]:
    return {"status": BatchItemStatus.ERROR, **echo, "code": error.code, "detail": error.detail}


_CONFLICT = ServiceError(
    ErrorCode.CONFLICT,
    "this reference is already registered with different data; the first record is kept",
)
_IV_REUSED = ServiceError(
    ErrorCode.IV_REUSED, "this IV was already used by this issuer; encrypt again with a fresh IV"
)


class Registration:
    def __init__(self, store: Store, keys: KeyRing, clock: Clock, scan_base: str) -> None:
        self._store = store
        self._keys = keys
        self._clock = clock
        self._scan_base = scan_base

    @property
    def scan_base(self) -> str:
        return self._scan_base

    def register_non_pii(
        self, principal: Principal, request: schemas.RegisterNonPiiRequest
    ) -> tuple[RegistrationResult, bool]:
        """The result, and whether a record was stored now (201) rather than found (200)."""
        _check_encoding(request)
        self._keys.check_registration_key(
            principal.owner_id, request.encryption_metadata.key_version
        )
        reference = request.service_reference or new_reference()
        record = new_record(request, reference, principal.owner_id, self._now())
        outcome = self._store.add_records([record])[0]
        status = self._own(outcome, principal)
        if status is AddStatus.CONFLICT:
            raise _CONFLICT
        if status is AddStatus.IV_REUSED:
            raise _IV_REUSED
        return RegistrationResult(service_reference=reference), status is AddStatus.CREATED

    def register_batch(self, principal: Principal, request: schemas.BatchEnvelope) -> BatchResult:
        # Results are plain dicts until the end: one validation of the whole list costs half
        # of 1000 BatchResultItem constructions.
        results: list[dict[str, str] | None] = []
        echoes: list[dict[str, str]] = []
        pending: list[tuple[int, Record]] = []
        now = self._now()
        check_key = self._keys.registration_key_checker(principal.owner_id)
        for index, item in enumerate(request.records):
            echo = _echo(item)
            echoes.append(echo)
            try:
                record = schemas.validate_batch_record(item)
                _check_encoding(record)
                check_key(record.encryption_metadata.key_version)
            except schemas.SchemaValidationError as exc:
                results.append(_refused(echo, schema_failure(exc)))
                continue
            except ServiceError as exc:
                results.append(_refused(echo, exc))
                continue
            results.append(None)
            pending.append(
                (index, new_record(record, record.service_reference, principal.owner_id, now))
            )
        outcomes = self._store.add_records([record for _, record in pending]) if pending else []
        for (index, _), outcome in zip(pending, outcomes, strict=True):
            status = self._own(outcome, principal)
            if status is AddStatus.CREATED or status is AddStatus.DUPLICATE:
                results[index] = {"status": status.value, **echoes[index]}
            else:
                error = _CONFLICT if status is AddStatus.CONFLICT else _IV_REUSED
                results[index] = _refused(echoes[index], error)
        return BatchResult.model_validate({"results": results})

    def register_and_build(
        self, principal: Principal, request: schemas.RegisterAndBuildRequest
    ) -> BarcodeResult:
        _check_encoding(request)
        meta = request.encryption_metadata
        self._keys.check_registration_key(principal.owner_id, meta.key_version)
        try:
            ciphertext = b64url_decode(request.encrypted_pii)
        except EncodingError:
            raise validation_failed(
                "encrypted_pii", "is not canonical unpadded base64url"
            ) from None
        key_version = self._authenticating_key(principal.owner_id, meta, ciphertext)
        reference = new_reference()
        scan_url = build_scan_url_v2(self._scan_base, reference, ciphertext)
        payload = build_payload_v2(reference, ciphertext)
        try:
            png = render_badge_png(scan_url)
        except BadgeError as exc:
            raise validation_failed("encrypted_pii", str(exc)) from None
        del ciphertext
        record = new_record(request, reference, principal.owner_id, self._now(), key_version)
        outcome = self._store.add_records([record])[0]
        if outcome.status is AddStatus.IV_REUSED:
            raise _IV_REUSED
        if outcome.status is not AddStatus.CREATED:
            raise ServiceError(
                ErrorCode.INTERNAL_ERROR, "a fresh reference collided; send the request again"
            )
        return BarcodeResult(
            service_reference=reference,
            barcode=Barcode(format="png", data=base64.b64encode(png).decode("ascii")),
            scan_url=scan_url,
            payload=payload,
        )

    def _authenticating_key(
        self, issuer_id: str, meta: schemas.EncryptionMetadata, ciphertext: bytes
    ) -> str:
        """Decrypt once to prove the ciphertext is the issuer's; the plaintext is dropped."""
        iv, tag = b64url_decode(meta.iv), b64url_decode(meta.tag)
        pinned = meta.key_version
        keys = [self._keys.get(pinned)] if pinned else self._keys.candidates(issuer_id)
        for key in keys:
            if key is None:
                continue
            try:
                decrypt(ciphertext, iv, tag, self._keys.cipher(key))
            except AuthenticationFailed:
                continue
            return key.key_version
        raise validation_failed(
            "encrypted_pii",
            "does not authenticate with this issuer's key, IV and tag; encrypt with the active "
            "key and send that operation's IV and tag",
        )

    @staticmethod
    def _own(outcome: AddOutcome, principal: Principal) -> AddStatus:
        """Another issuer's reference is a CONFLICT that reveals nothing about that record."""
        record = outcome.record
        if outcome.status is AddStatus.DUPLICATE and (
            record is None or record.issuer_id != principal.owner_id
        ):
            return AddStatus.CONFLICT
        return outcome.status

    def _now(self) -> str:
        return iso_z(self._clock.now())
