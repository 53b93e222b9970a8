"""Builders for test records: real AES-GCM encryption with an issuer's key, synthetic data only."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2
from service.protocol.crypto import encrypt
from service.protocol.encoding import b64url_decode, b64url_encode, new_reference
from service.protocol.pii_text import build_pii_text

AU_V1: dict[str, Any] = {
    "schema": "au.payslip.v1",
    "issued_at": "2026-11-13T09:00:00Z",
    "payslip_non_pii": {
        "period_start": "2026-10-30",
        "period_end": "2026-11-12",
        "payment_date": "2026-11-13",
        "currency": "AUD",
        "gross_cents": 384615,
        "paygw_cents": 78200,
        "net_cents": 306415,
        "ytd_gross_cents": 3461535,
        "ytd_paygw_cents": 703800,
    },
}

NZ_V1: dict[str, Any] = {
    "schema": "nz.payslip.v1",
    "issued_at": "2026-11-13T09:00:00.250Z",
    "payslip_non_pii": {
        "period_start": "2026-11-01",
        "period_end": "2026-11-14",
        "payment_date": "2026-11-14",
        "currency": "NZD",
        "gross_cents": 320000,
        "paye_cents": 54025,
        "net_cents": 265975,
        "tax_code": "M SL",
    },
}

AU_V2: dict[str, Any] = {
    "schema": "au.payslip.v2",
    "issued_at": "2026-11-13T09:00:00Z",
    "payslip_non_pii": {
        "period_end": "2026-11-12",
        "payment_date": "2026-11-13",
        "currency": "JPY",
        "gross": "384615",
        "paygw": "78200",
        "net": "306415",
    },
}

NZ_V2: dict[str, Any] = {
    "schema": "nz.payslip.v2",
    "issued_at": "2026-11-13T09:00:00Z",
    "payslip_non_pii": {
        "period_end": "2026-11-14",
        "payment_date": "2026-11-14",
        "currency": "NZD",
        "gross": "3200.00",
        "paye": "540.25",
        "net": "2659.75",
    },
}

SCHEMAS = {
    "au.payslip.v1": AU_V1,
    "nz.payslip.v1": NZ_V1,
    "au.payslip.v2": AU_V2,
    "nz.payslip.v2": NZ_V2,
}

MARKER_NAME = "Zebedee Quxworth-Marker"
MARKER_ACCOUNT = "98765432109"

PII_FIELDS: dict[str, dict[str, str]] = {
    "P1": {
        "employee_name": MARKER_NAME,
        "position": "Analyst",
        "department": "Finance",
        "employer_abn": "51824753556",
        "bsb": "062-000",
        "account_number": MARKER_ACCOUNT,
        "account_name": "Z Quxworth",
    },
    "P2": {
        "employee_name": MARKER_NAME,
        "position": "Analyst",
        "department": "",
        "employer_abn": "51824753556",
        "bsb": "062-000",
        "account_number": MARKER_ACCOUNT,
        "account_name": "Z Quxworth",
        "address": "1 Test St, Testville NSW 2000",
    },
    "AU2": {
        "employee_name": MARKER_NAME,
        "position": "Analyst",
        "department": "Finance",
        "employer_identity": "Example Employer Pty Ltd",
        "bsb": "062-000",
        "account_number": MARKER_ACCOUNT,
        "account_name": "Z Quxworth",
        "address": "1 Test St, Testville NSW 2000",
    },
    "NZ2": {
        "employee_name": MARKER_NAME,
        "ird_number": "123-456-789",
        "position": "Analyst",
        "department": "Finance",
        "employer_name": "Example NZ Ltd",
        "account_number": MARKER_ACCOUNT,
        "account_name": "Z Quxworth",
        "address": "2 Test Rd, Te Aro, Wellington 6011",
    },
}


@dataclass(frozen=True)
class Sealed:
    body: dict[str, Any]
    ciphertext: bytes
    pii_text: str

    @property
    def reference(self) -> str:
        return str(self.body["service_reference"])

    @property
    def payload(self) -> str:
        return build_payload_v2(self.reference, self.ciphertext)

    def scan_url(self, base: str = "https://verify.example.test") -> str:
        return build_scan_url_v2(base, self.reference, self.ciphertext)


def sealed_record(
    key_b64: str,
    schema: str = "au.payslip.v1",
    pii_format: str = "AU2",
    *,
    reference: str | None = None,
    key_version: str | None = None,
    pii_text: str | None = None,
) -> Sealed:
    """A registerNonPII body with its ciphertext, encrypted under the issuer's key."""
    text = pii_text if pii_text is not None else build_pii_text(pii_format, PII_FIELDS[pii_format])
    sealed = encrypt(text.encode("utf-8"), b64url_decode(key_b64))
    body = copy.deepcopy(SCHEMAS[schema])
    body["service_reference"] = reference or new_reference()
    meta: dict[str, Any] = {"iv": b64url_encode(sealed.iv), "tag": b64url_encode(sealed.tag)}
    if key_version:
        meta["key_version"] = key_version
    body["encryption_metadata"] = meta
    return Sealed(body, sealed.ciphertext, text)


def build_body(sealed: Sealed) -> dict[str, Any]:
    """The registerAndBuildBarcode body for the same encryption (no reference, with ciphertext)."""
    body = {k: v for k, v in sealed.body.items() if k != "service_reference"}
    body["encrypted_pii"] = b64url_encode(sealed.ciphertext)
    return body
