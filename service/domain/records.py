"""Turning a validated registration into a stored Record, and a stored Record into a result.

The fingerprint is what idempotency compares (PROTOCOL §6): the canonical JSON of exactly the
fields a retry must repeat byte for byte (`PayslipRecord.idempotency_content`). It covers the IV
and tag, never the ciphertext, which the service never sees for registerNonPII and never keeps for
registerAndBuildBarcode.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from service.protocol.schemas import IssuerRef, PayslipRecord, PayslipView
from service.storage.port import Issuer, Record


def canonical(obj: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8. orjson: the stdlib encoder was a fifth of a 1000-record
    batch's time."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def fingerprint(content: dict[str, Any]) -> str:
    """SHA-256 of the canonical idempotency content (see the module docstring)."""
    return hashlib.sha256(canonical(content)).hexdigest()


def new_record(
    request: PayslipRecord,
    reference: str,
    issuer_id: str,
    registered_at: str,
    key_version: str | None = None,
) -> Record:
    """The record to store for a validated registration, its payslip exactly as sent.
    `key_version` overrides the submitted one when the service itself chose the key."""
    content = request.idempotency_content()
    return Record(
        service_reference=reference,
        issuer_id=issuer_id,
        schema=content["schema"],
        issued_at=content["issued_at"],
        payslip_non_pii=content["payslip_non_pii"],
        iv=content["iv"],
        tag=content["tag"],
        key_version=key_version or content["key_version"],
        fingerprint=fingerprint(content),
        registered_at=registered_at,
    )


def payslip_view(record: Record, issuer: Issuer | None) -> PayslipView:
    """The `payslip` object of a verification result (spec + PROTOCOL §6)."""
    return PayslipView(
        schema=record.schema,
        issued_at=record.issued_at,
        payslip_non_pii=record.payslip_non_pii,
        status=record.status,
        issuer=IssuerRef(issuer_id=record.issuer_id, name=issuer.name if issuer else ""),
        registered_at=record.registered_at,
        revoked_at=record.revoked_at or None,
    )
