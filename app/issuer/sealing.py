"""Encrypting the PII text and writing the barcode texts (PROTOCOL §2, §3).

The issuer seals each payslip exactly once: a fresh CSPRNG IV per call (inside
`service.protocol.crypto.encrypt`), and the IV, tag and ciphertext of that one operation travel
together for ever after (the ciphertext in the barcode, IV and tag in the registration). So a
`SealedPii` is one immutable value, and nothing here can re-encrypt under an old IV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.protocol.barcode_text import (
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v2,
    scan_url_prefix,
)
from service.protocol.crypto import IV_BYTES, KEY_BYTES, TAG_BYTES, encrypt
from service.protocol.encoding import EncodingError, b64url_decode, b64url_encode, new_reference

__all__ = [
    "EncryptionKeyError",
    "SealedPii",
    "build_payload_v1",
    "build_payload_v2",
    "build_scan_url_v2",
    "decode_key",
    "encrypt_pii",
    "new_reference",
    "scan_url_prefix",
    "seal",
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


def encrypt_pii(text: str, key: bytes | str) -> tuple[bytes, bytes, bytes]:
    """AES-256-GCM of the UTF-8 PII text under a fresh IV: `(ciphertext, iv, tag)`.

    No associated data (PROTOCOL §2). Call it once per payslip; the result must be kept together.
    """
    sealed = encrypt(text.encode("utf-8"), decode_key(key))
    return sealed.ciphertext, sealed.iv, sealed.tag


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


def seal(text: str, key: bytes | str) -> SealedPii:
    """`encrypt_pii` as one value."""
    ciphertext, iv, tag = encrypt_pii(text, key)
    return SealedPii(ciphertext, iv, tag)
