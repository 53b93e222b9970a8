"""The three registration operations (spec + PROTOCOL §2, §3, §6).

Validation happens first and completely; the store then applies the uniqueness rules atomically.
registerAndBuildBarcode authenticates the submitted ciphertext and renders the badge before it
stores anything, so a rejected request leaves no record behind and its ciphertext is dropped with
the request.
"""

from __future__ import annotations

import base64
from typing import Any

from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.domain.keys import KeyRing
from service.domain.records import new_record
from service.domain.tokens import Principal
from service.domain.validation import schema_failure
from service.protocol import schemas
from service.protocol.badge import BadgeError, render_badge_png
from service.protocol.barcode_text import build_scan_url_v2
from service.protocol.crypto import AuthenticationFailed, decrypt
from service.protocol.encoding import (
    EncodingError,
    b64url_decode,
    is_canonical_b64url,
    new_reference,
)
from service.protocol.errors import ErrorCode
from service.storage.port import AddOutcome, AddStatus, Record, Store


def _fields(request: schemas.PayslipRecord) -> dict[str, Any]:
    """The validated request as plain JSON values, exactly as sent (see records.new_record)."""
    meta = request.encryption_metadata
    for name, value in (("iv", meta.iv), ("tag", meta.tag)):
        if not is_canonical_b64url(value):
            raise validation_failed(
                f"encryption_metadata.{name}", "is not canonical unpadded base64url"
            )
    fields: dict[str, Any] = {
        "schema": request.schema_id,
        "issued_at": request.issued_at,
        "payslip_non_pii": request.payslip_non_pii_json(),
        "encryption_metadata": {"iv": meta.iv, "tag": meta.tag, "key_version": meta.key_version},
    }
    declared = type(request).model_fields  # a missing attribute costs pydantic an exception
    for optional in ("service_reference", "encrypted_pii"):
        extra: object = getattr(request, optional) if optional in declared else None
        if extra is not None:
            fields[optional] = extra
    return fields


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

    def register_non_pii(self, principal: Principal, body: object) -> tuple[str, bool]:
        """Returns (service_reference, created)."""
        try:
            request = schemas.validate_register_non_pii(body)
        except schemas.SchemaValidationError as exc:
            raise schema_failure(exc) from None
        fields = _fields(request)
        self._keys.check_registration_key(
            principal.owner_id, fields["encryption_metadata"].get("key_version")
        )
        reference = fields.get("service_reference") or new_reference()
        record = new_record(fields, reference, principal.owner_id, self._now())
        outcome = self._store.add_records([record])[0]
        status = self._own(outcome, principal)
        if status is AddStatus.CONFLICT:
            raise _CONFLICT
        if status is AddStatus.IV_REUSED:
            raise _IV_REUSED
        return reference, status is AddStatus.CREATED

    def register_batch(self, principal: Principal, body: object) -> list[dict[str, Any]]:
        try:
            items = schemas.validate_batch_envelope(body)
        except schemas.SchemaValidationError as exc:
            raise schema_failure(exc) from None
        results: list[dict[str, Any]] = []
        pending: list[tuple[int, Record]] = []
        now = self._now()
        for index, item in enumerate(items):
            result: dict[str, Any] = {"status": "error"}
            reference = item.get("service_reference")
            if isinstance(reference, str):
                result["service_reference"] = reference
            external_id = item.get("external_id")
            if isinstance(external_id, str):
                result["external_id"] = external_id
            results.append(result)
            try:
                fields = _fields(schemas.validate_batch_record(item))
                self._keys.check_registration_key(
                    principal.owner_id, fields["encryption_metadata"].get("key_version")
                )
            except schemas.SchemaValidationError as exc:
                self._mark_error(result, schema_failure(exc))
                continue
            except ServiceError as exc:
                self._mark_error(result, exc)
                continue
            pending.append(
                (index, new_record(fields, fields["service_reference"], principal.owner_id, now))
            )
        outcomes = self._store.add_records([record for _, record in pending]) if pending else []
        for (index, _), outcome in zip(pending, outcomes, strict=True):
            status = self._own(outcome, principal)
            result = results[index]
            if status is AddStatus.CREATED:
                result["status"] = "created"
            elif status is AddStatus.DUPLICATE:
                result["status"] = "duplicate"
            else:
                self._mark_error(result, _CONFLICT if status is AddStatus.CONFLICT else _IV_REUSED)
        return results

    def register_and_build(self, principal: Principal, body: object) -> dict[str, Any]:
        try:
            request = schemas.validate_register_and_build(body)
        except schemas.SchemaValidationError as exc:
            raise schema_failure(exc) from None
        fields = _fields(request)
        meta = fields["encryption_metadata"]
        self._keys.check_registration_key(principal.owner_id, meta.get("key_version"))
        try:
            ciphertext = b64url_decode(fields["encrypted_pii"])
        except EncodingError:
            raise validation_failed(
                "encrypted_pii", "is not canonical unpadded base64url"
            ) from None
        key_version = self._authenticating_key(principal.owner_id, meta, ciphertext)
        reference = new_reference()
        try:
            png = render_badge_png(build_scan_url_v2(self._scan_base, reference, ciphertext))
        except BadgeError as exc:
            raise validation_failed("encrypted_pii", str(exc)) from None
        del ciphertext
        record = new_record(fields, reference, principal.owner_id, self._now(), key_version)
        outcome = self._store.add_records([record])[0]
        if outcome.status is AddStatus.IV_REUSED:
            raise _IV_REUSED
        if outcome.status is not AddStatus.CREATED:
            raise ServiceError(
                ErrorCode.INTERNAL_ERROR, "a fresh reference collided; send the request again"
            )
        return {
            "service_reference": reference,
            "barcode": {"format": "png", "data": base64.b64encode(png).decode("ascii")},
        }

    def _authenticating_key(self, issuer_id: str, meta: dict[str, Any], ciphertext: bytes) -> str:
        """Decrypt once to prove the ciphertext is the issuer's; the plaintext is dropped."""
        iv, tag = b64url_decode(meta["iv"]), b64url_decode(meta["tag"])
        pinned = meta.get("key_version")
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

    @staticmethod
    def _mark_error(result: dict[str, Any], error: ServiceError) -> None:
        result["status"] = "error"
        result["code"] = error.code
        result["detail"] = error.detail

    def _now(self) -> str:
        return iso_z(self._clock.now())
