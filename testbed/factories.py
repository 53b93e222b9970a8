"""Builders for test records: real AES-GCM encryption with an issuer's key, synthetic data only.

Sealing and record building are the protocol's own (`service.protocol.sealing`), the same code the
issuer library and the demo use, so the tests exercise what issuers send."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pypdf import PdfWriter

from service.protocol.crypto import TAG_BYTES
from service.protocol.encoding import b64url_decode, new_reference
from service.protocol.pii_text import build_pii_text
from service.protocol.schemas import VerificationResult
from service.protocol.sealing import (
    SealedPii,
    build_and_register_record,
    non_pii_record,
    seal_bytes,
)

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
    """A registerNonPII body and the one sealing it carries (IV and tag in the body)."""

    body: dict[str, Any]
    pii: SealedPii
    pii_text: str

    @property
    def ciphertext(self) -> bytes:
        return self.pii.ciphertext

    @property
    def reference(self) -> str:
        return str(self.body["service_reference"])

    @property
    def payload(self) -> str:
        return self.pii.payload_v2(self.reference)

    def scan_url(self, base: str = "https://verify.example.test") -> str:
        return self.pii.scan_url(base, self.reference)


def sealed_payslip(
    key_b64: str,
    template: dict[str, Any],
    plaintext: str | bytes,
    *,
    reference: str | None = None,
    key_version: str | None = None,
) -> Sealed:
    """`template` (schema, issued_at, payslip_non_pii) registered as sealing `plaintext` under
    the issuer's key; bytes that are not UTF-8 are for readers' raw-text tests."""
    raw = plaintext if isinstance(plaintext, bytes) else plaintext.encode("utf-8")
    return _registered(template, seal_bytes(raw, key_b64), raw, reference, key_version)


def sealed_with_iv(
    key_b64: str,
    iv: bytes,
    plaintext: bytes,
    template: dict[str, Any] = AU_V1,
    *,
    reference: str | None = None,
) -> Sealed:
    """Sealed under a chosen IV, which an issuer must never do (the protocol's sealing always
    draws a fresh one): only for tests of the service's IV rules."""
    out = AESGCM(b64url_decode(key_b64)).encrypt(iv, plaintext, None)
    pii = SealedPii(out[:-TAG_BYTES], iv, out[-TAG_BYTES:])
    return _registered(template, pii, plaintext, reference, None)


def _registered(
    template: dict[str, Any],
    pii: SealedPii,
    plaintext: bytes,
    reference: str | None,
    key_version: str | None,
) -> Sealed:
    body = non_pii_record(
        template["schema"],
        template["issued_at"],
        template["payslip_non_pii"],
        pii,
        reference=reference or new_reference(),
        key_version=key_version,
    )
    return Sealed(body, pii, plaintext.decode("utf-8", errors="replace"))


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
    return sealed_payslip(
        key_b64, SCHEMAS[schema], text, reference=reference, key_version=key_version
    )


def build_body(sealed: Sealed) -> dict[str, Any]:
    """The registerAndBuildBarcode body for the same sealing (no reference, with ciphertext);
    schema, issued_at and payslip are read from `sealed.body`, so a test may change them."""
    body = sealed.body
    return build_and_register_record(
        body["schema"],
        body["issued_at"],
        body["payslip_non_pii"],
        sealed.pii,
        key_version=body["encryption_metadata"].get("key_version"),
    )


def blank_pdf(pages: int = 1) -> bytes:
    """A payslip PDF to stamp: `pages` empty A4 pages."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(595, 842)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def verification_result(
    non_pii: dict[str, Any], employee: dict[str, Any] | None = None
) -> VerificationResult:
    """A verifyPayload answer for an active AU v1 payslip with `non_pii` (as the service
    sends it), for code that reads results without a service."""
    return VerificationResult.model_validate(
        {
            "verified": True,
            "service_reference": "A" * 22,
            "decrypted_at": "2026-11-21T10:00:00Z",
            "employee": employee or {},
            "payslip": {
                "schema": "au.payslip.v1",
                "issued_at": "2026-11-13T09:00:00Z",
                "status": "active",
                "registered_at": "2026-11-13T09:00:01Z",
                "issuer": {"issuer_id": "i-1", "name": "Demo Payroll"},
                "payslip_non_pii": non_pii,
            },
        }
    )
