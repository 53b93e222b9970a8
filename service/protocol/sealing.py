"""Sealing one payslip and building its registration records (PROTOCOL §2, §3).

One implementation for everyone who seals: the issuer library (app/issuer), the service's demo
seeding and the test factories. A copy of this elsewhere could drift from the protocol (say, send
the tag inside the ciphertext, or forget the key version) and the tests would then prove only that
the copy agrees with the service.

A payslip is sealed exactly once: a fresh CSPRNG IV per call (inside `crypto.encrypt`), and the
IV, tag and ciphertext of that one operation travel together for ever after (the ciphertext in the
barcode, IV and tag in the registration). So a `SealedPii` is one immutable value, and nothing here
can re-encrypt under an old IV.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.protocol.barcode_text import build_payload_v1, build_payload_v2, build_scan_url_v2
from service.protocol.crypto import IV_BYTES, KEY_BYTES, TAG_BYTES, encrypt
from service.protocol.encoding import EncodingError, b64url_decode, b64url_encode

__all__ = [
    "EncryptionKeyError",
    "SealedPii",
    "build_and_register_record",
    "decode_key",
    "encrypt_pii",
    "non_pii_record",
    "seal",
    "seal_bytes",
]


class EncryptionKeyError(ValueError):
    """The issuer encryption key is not 32 bytes of base64url. The message never shows the key."""


def decode_key(key: bytes | str) -> bytes:
    """The 32-byte AES key from raw bytes or the base64url text onboarding hands out."""
    if isinstance(key, str):
        try:
            key = b64url_decode(key.strip())
        except EncodingError:
            raise EncryptionKeyError("the encryption key is not base64url text") from None
    if len(key) != KEY_BYTES:
        raise EncryptionKeyError(f"the encryption key must be {KEY_BYTES} bytes (AES-256)")
    return key


@dataclass(frozen=True, slots=True)
class SealedPii:
    """One encryption of one payslip's PII: what the barcode and the registration carry."""

    ciphertext: bytes
    iv: bytes
    tag: bytes

    def __post_init__(self) -> None:
        if len(self.iv) != IV_BYTES or len(self.tag) != TAG_BYTES or not self.ciphertext:
            raise ValueError("not an AES-GCM IV/tag/ciphertext triple")

    def __repr__(self) -> str:
        # Ciphertext is not plaintext, but it is the employee's sealed data: keep it out of logs.
        return f"SealedPii(<{len(self.ciphertext)} bytes>)"

    @property
    def iv_b64(self) -> str:
        return b64url_encode(self.iv)

    @property
    def tag_b64(self) -> str:
        return b64url_encode(self.tag)

    @property
    def ciphertext_b64(self) -> str:
        """`encrypted_pii` for registerAndBuildBarcode."""
        return b64url_encode(self.ciphertext)

    def encryption_metadata(self, key_version: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"iv": self.iv_b64, "tag": self.tag_b64}
        if key_version:
            meta["key_version"] = key_version
        return meta

    def payload_v2(self, reference: str) -> str:
        """The bare payload for PDF metadata (`2|ref|BASE32`)."""
        return build_payload_v2(reference, self.ciphertext)

    def payload_v1(self, reference: str) -> str:
        """The legacy payload (`1|ref|base64url`), for readers that predate version 2."""
        return build_payload_v1(reference, self.ciphertext)

    def scan_url(self, scan_base: str, reference: str) -> str:
        """The QR content: `<scan_base>/v/<ref>#2.<BASE32>`; `scan_base` is the verifier's
        public origin, the same one the service uses for its own badges."""
        return build_scan_url_v2(scan_base, reference, self.ciphertext)


def seal_bytes(plaintext: bytes, key: bytes | str) -> SealedPii:
    """AES-256-GCM of `plaintext` under a fresh IV, no associated data (PROTOCOL §2).

    Issuers seal text (`seal`); bytes are for readers' tests, which must also meet plaintexts
    that are not UTF-8.
    """
    sealed = encrypt(plaintext, decode_key(key))
    return SealedPii(sealed.ciphertext, sealed.iv, sealed.tag)


def seal(text: str, key: bytes | str) -> SealedPii:
    """The UTF-8 PII text sealed under a fresh IV. Call it once per payslip."""
    return seal_bytes(text.encode("utf-8"), key)


def encrypt_pii(text: str, key: bytes | str) -> tuple[bytes, bytes, bytes]:
    """`seal` as a `(ciphertext, iv, tag)` tuple; the three must be kept together."""
    sealed = seal(text, key)
    return sealed.ciphertext, sealed.iv, sealed.tag


def _record(
    schema: str,
    issued_at: str,
    payslip_non_pii: Mapping[str, Any],
    sealed: SealedPii,
    key_version: str | None,
) -> dict[str, Any]:
    return {
        "schema": schema,
        "issued_at": issued_at,
        "payslip_non_pii": copy.deepcopy(dict(payslip_non_pii)),
        "encryption_metadata": sealed.encryption_metadata(key_version),
    }


def non_pii_record(
    schema: str,
    issued_at: str,
    payslip_non_pii: Mapping[str, Any],
    sealed: SealedPii,
    *,
    reference: str,
    key_version: str | None = None,
    external_id: str | None = None,
) -> dict[str, Any]:
    """A registerNonPII body (or, with `external_id`, a batch record): the issuer's own
    reference, the IV and tag; the ciphertext stays with the issuer."""
    record = _record(schema, issued_at, payslip_non_pii, sealed, key_version)
    record["service_reference"] = reference
    if external_id is not None:
        record["external_id"] = external_id
    return record


def build_and_register_record(
    schema: str,
    issued_at: str,
    payslip_non_pii: Mapping[str, Any],
    sealed: SealedPii,
    *,
    key_version: str | None = None,
) -> dict[str, Any]:
    """A registerAndBuildBarcode body: the ciphertext rides along, no reference is sent."""
    record = _record(schema, issued_at, payslip_non_pii, sealed, key_version)
    record["encrypted_pii"] = sealed.ciphertext_b64
    return record
