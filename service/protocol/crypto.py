"""AES-256-GCM as the protocol uses it (PROTOCOL §2).

The tag travels apart from the ciphertext (in `encryption_metadata`), so the helpers here take and
return it separately. No associated data is used for payslip PII; key wrapping binds the key
version as associated data so a wrapped key cannot be swapped onto another version.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_BYTES = 32
IV_BYTES = 12
TAG_BYTES = 16


class AuthenticationFailed(Exception):
    """The ciphertext and tag do not authenticate under the key and IV."""


@dataclass(frozen=True, slots=True)
class Sealed:
    ciphertext: bytes
    iv: bytes
    tag: bytes


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def encrypt(plaintext: bytes, key: bytes, aad: bytes | None = None) -> Sealed:
    """Encrypt under a fresh CSPRNG IV; every call draws a new one, so IVs are never reused."""
    iv = secrets.token_bytes(IV_BYTES)
    sealed = AESGCM(key).encrypt(iv, plaintext, aad)
    return Sealed(ciphertext=sealed[:-TAG_BYTES], iv=iv, tag=sealed[-TAG_BYTES:])


def cipher(key: bytes) -> AESGCM:
    """A reusable AES-GCM object: building one costs more than decrypting a payslip."""
    if len(key) != KEY_BYTES:
        raise AuthenticationFailed("wrong key length")
    return AESGCM(key)


def decrypt(
    ciphertext: bytes, iv: bytes, tag: bytes, key: bytes | AESGCM, aad: bytes | None = None
) -> bytes:
    if isinstance(key, bytes) and len(key) != KEY_BYTES:
        raise AuthenticationFailed("wrong key length")
    if len(iv) != IV_BYTES or len(tag) != TAG_BYTES:
        raise AuthenticationFailed("wrong IV or tag length")
    aead = AESGCM(key) if isinstance(key, bytes) else key
    try:
        return aead.decrypt(iv, ciphertext + tag, aad)
    except InvalidTag as exc:
        raise AuthenticationFailed("ciphertext does not authenticate") from exc


def wrap_key(key: bytes, master_key: bytes, key_version: str) -> bytes:
    """Wrap an issuer key as iv || ciphertext || tag, bound to its key version."""
    sealed = encrypt(key, master_key, key_version.encode("utf-8"))
    return sealed.iv + sealed.ciphertext + sealed.tag


def unwrap_key(wrapped: bytes, master_key: bytes, key_version: str) -> bytes:
    iv, body, tag = wrapped[:IV_BYTES], wrapped[IV_BYTES:-TAG_BYTES], wrapped[-TAG_BYTES:]
    return decrypt(body, iv, tag, master_key, key_version.encode("utf-8"))
