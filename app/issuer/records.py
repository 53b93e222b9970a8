"""Registration bodies, local validation, and issuing one payslip either way.

Two ways to issue (spec "Guidance on choosing"):

* self-managed: the issuer encrypts, registers the non-PII part with its own reference
  (registerNonPII) and renders the badge itself. The reference and the sealed PII are made once,
  before the first attempt (`prepare_self_managed`), and kept until the service has answered, so
  any resend is the same content and is answered `duplicate`, never a second record.
* service-managed: the issuer encrypts and sends the ciphertext (registerAndBuildBarcode); the
  service renders the badge. A lost response must be re-encrypted with a fresh IV, so that call is
  never replayed with old content.

Local validation uses the service's own validators, so the form and the importer report exactly
the field paths the service would, before anything leaves the machine.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from app.api import ApiClient
from app.api.errors import ClientCode, InvalidResponse
from service.documents.badge import BADGE_WIDTH, render_badge_png
from service.protocol.encoding import new_reference
from service.protocol.schemas import (
    FieldError,
    IssuerCreated,
    SchemaValidationError,
    canonical_json,
    validate_batch_record,
    validate_register_and_build,
    validate_register_non_pii,
)
from service.protocol.sealing import (
    SealedPii,
    build_and_register_record,
    decode_key,
    non_pii_record,
    seal,
)

__all__ = [
    "IssuedPayslip",
    "IssuerKey",
    "PreparedOnce",
    "PreparedPayslip",
    "build_and_register_record",
    "check_payslip",
    "issue_self_managed",
    "issue_service_managed",
    "non_pii_record",
    "prepare_self_managed",
    "register_prepared",
    "utc_now",
]

# Syntactically valid stand-ins, used only to validate a payslip before it is encrypted.
_PLACEHOLDER_IV = "A" * 16
_PLACEHOLDER_TAG = "A" * 22
_PLACEHOLDER_REF = "A" * 22


def utc_now() -> str:
    """`issued_at` for a payslip issued now: UTC, whole seconds, trailing `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class IssuerKey:
    """The issuer's encryption key and the key version to pin records to.

    The key never appears in a repr; it lives in memory (or the OS secret store), never in plain
    settings files.
    """

    encryption_key: bytes = field(repr=False)
    key_version: str | None = None
    issuer_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "encryption_key", decode_key(self.encryption_key))

    @classmethod
    def from_info(cls, info: Mapping[str, Any] | IssuerCreated) -> IssuerKey:
        """From onboarding output (`create-issuer`'s JSON, or the service's IssuerCreated answer
        such as the demo issuer): base64url key text."""
        if isinstance(info, IssuerCreated):
            info = info.wire()
        return cls(
            decode_key(str(info["encryption_key"])),
            info.get("key_version") or None,
            info.get("issuer_id") or None,
        )


def check_payslip(
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    issued_at: str | None = None,
    *,
    external_id: str | None = None,
) -> list[FieldError]:
    """Field errors the service would report for this payslip (empty when it is acceptable).

    Paths are relative to the record (`payslip_non_pii.gross_cents`, `issued_at`, `schema`).
    Messages say what is expected and never quote the input.
    """
    record: dict[str, Any] = {
        "schema": schema,
        "issued_at": issued_at if issued_at is not None else "2000-01-01T00:00:00Z",
        "payslip_non_pii": payslip_non_pii,
        "encryption_metadata": {"iv": _PLACEHOLDER_IV, "tag": _PLACEHOLDER_TAG},
        "service_reference": _PLACEHOLDER_REF,
    }
    if external_id is not None:
        record["external_id"] = external_id
    try:
        validate_batch_record(record)
    except SchemaValidationError as exc:
        return list(exc.field_errors)
    return []


@dataclass(frozen=True)
class IssuedPayslip:
    """A registered payslip and its badge.

    `payload` is the bare v2 payload for PDF metadata; `scan_url` the QR content (for
    service-managed ones the service's answer; None from a service that does not send it).
    """

    service_reference: str
    created: bool
    payload: str
    badge_png: bytes = field(repr=False)
    managed_by: Literal["issuer", "service"]
    scan_url: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PreparedPayslip:
    """A self-managed payslip sealed and referenced once, before the first attempt to send it.

    Keep it until registration succeeds: resending it is idempotent (spec idempotency rule 1).
    """

    reference: str
    sealed: SealedPii
    record: dict[str, Any] = field(repr=False)
    scan_base: str

    @property
    def payload(self) -> str:
        return self.sealed.payload_v2(self.reference)

    @property
    def scan_url(self) -> str:
        return self.sealed.scan_url(self.scan_base, self.reference)


def prepare_self_managed(
    key: IssuerKey,
    scan_base: str,
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    pii_text: str,
    issued_at: str | None = None,
    *,
    reference: str | None = None,
) -> PreparedPayslip:
    """Validate, seal and reference one payslip. Raises SchemaValidationError before encrypting
    anything when the payslip would be refused."""
    issued = issued_at or utc_now()
    ref = reference or new_reference()
    sealed = seal(pii_text, key.encryption_key)
    record = non_pii_record(
        schema, issued, payslip_non_pii, sealed, reference=ref, key_version=key.key_version
    )
    validate_register_non_pii(record)
    return PreparedPayslip(ref, sealed, record, scan_base)


class PreparedOnce:
    """The "prepare once, resend the same on retry" rule for issuing one payslip by hand.

    A self-managed payslip must be sealed and given its reference once, before the first attempt
    to send it: if the answer is lost and the user presses the button again, the very same
    reference, IV and tag go out and the service answers `duplicate`, never a second record.
    Any change to what would be sent (schema, payslip, employee text, key or scan address) makes
    a fresh one. The marker is a SHA-256 digest held in memory only, so no personal data is kept
    in a readable form beside the sealed payslip.
    """

    def __init__(self) -> None:
        self._marker: str | None = None
        self._prepared: PreparedPayslip | None = None

    @property
    def pending(self) -> bool:
        """True while a prepared payslip waits for the service's answer (a retry resends it)."""
        return self._prepared is not None

    def get(
        self,
        key: IssuerKey,
        scan_base: str,
        schema: str,
        payslip_non_pii: Mapping[str, Any],
        pii_text: str,
    ) -> PreparedPayslip:
        """The prepared payslip for these inputs: the kept one when nothing changed, else new.
        Raises SchemaValidationError (nothing kept) when the payslip would be refused."""
        marker = _marker(
            schema.encode(),
            canonical_json(dict(payslip_non_pii)).encode(),
            pii_text.encode(),
            key.encryption_key,
            (key.key_version or "").encode(),
            scan_base.encode(),
        )
        if self._prepared is None or self._marker != marker:
            self._prepared = None
            prepared = prepare_self_managed(key, scan_base, schema, payslip_non_pii, pii_text)
            self._marker, self._prepared = marker, prepared
        return self._prepared

    def forget(self) -> None:
        """After the service answered (or the form changed): the next attempt is a new payslip."""
        self._marker = None
        self._prepared = None


def _marker(*parts: bytes) -> str:
    """A SHA-256 digest of the parts, each preceded by its length, so no two different lists of
    parts run together into the same bytes."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def register_prepared(
    client: ApiClient, prepared: PreparedPayslip, *, badge_width: int = BADGE_WIDTH
) -> IssuedPayslip:
    """registerNonPII, then render the badge locally (the same renderer the service uses)."""
    reference, created = client.register_non_pii(prepared.record)
    if reference != prepared.reference:
        raise InvalidResponse(
            ClientCode.INVALID_RESPONSE, 200, "the service answered another reference"
        )
    return IssuedPayslip(
        service_reference=reference,
        created=created,
        payload=prepared.payload,
        badge_png=render_badge_png(prepared.scan_url, badge_width),
        managed_by="issuer",
        scan_url=prepared.scan_url,
    )


def issue_self_managed(
    client: ApiClient,
    key: IssuerKey,
    scan_base: str,
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    pii_text: str,
    issued_at: str | None = None,
    *,
    badge_width: int = BADGE_WIDTH,
) -> IssuedPayslip:
    """Encrypt locally, registerNonPII, render the badge locally."""
    prepared = prepare_self_managed(key, scan_base, schema, payslip_non_pii, pii_text, issued_at)
    return register_prepared(client, prepared, badge_width=badge_width)


def issue_service_managed(
    client: ApiClient,
    key: IssuerKey,
    schema: str,
    payslip_non_pii: Mapping[str, Any],
    pii_text: str,
    issued_at: str | None = None,
) -> IssuedPayslip:
    """Encrypt locally, registerAndBuildBarcode: the service renders the badge.

    Each call encrypts afresh, so calling it again after a lost response is the spec's remedy.
    """
    sealed = seal(pii_text, key.encryption_key)
    body = build_and_register_record(
        schema, issued_at or utc_now(), payslip_non_pii, sealed, key_version=key.key_version
    )
    validate_register_and_build(body)
    answer = client.register_and_build_barcode(body)
    reference = answer.service_reference
    try:
        png = base64.b64decode(answer.barcode.data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidResponse(
            ClientCode.INVALID_RESPONSE, 201, "the badge is not base64 data"
        ) from None
    if not png.startswith(b"\x89PNG"):
        raise InvalidResponse(ClientCode.INVALID_RESPONSE, 201, "the badge is not a PNG image")
    return IssuedPayslip(
        service_reference=reference,
        created=True,
        payload=sealed.payload_v2(reference),
        badge_png=png,
        managed_by="service",
        scan_url=answer.scan_url,  # None from a service older than issue 36
    )
