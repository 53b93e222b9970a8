"""Text encodings of binary values on the wire (PROTOCOL §1).

Both encodings are unpadded, so every decoder here is strict: a value with padding, a character
outside the alphabet or non-canonical trailing bits is rejected rather than silently repaired,
because a lenient decoder would let two different texts name the same bytes.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets

B64URL_RE = re.compile(r"^[A-Za-z0-9_-]*$")
BASE32_RE = re.compile(r"^[A-Z2-7]*$")


_BASE32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BASE32_VALUES = {c: i for i, c in enumerate(_BASE32_ALPHABET)}
_TO_BASE32HEX = str.maketrans(_BASE32_ALPHABET, "0123456789ABCDEFGHIJKLMNOPQRSTUV")
_B64URL_VALUES = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
}


def _unused_bits_zero(text: str, bits_per_char: int, values: dict[str, int]) -> bool:
    """Canonical text leaves the bits past the last whole byte zero; two texts that differ only
    there would otherwise name the same bytes."""
    unused = (bits_per_char * len(text)) % 8
    return not (text and unused and values[text[-1]] & ((1 << unused) - 1))


def _check_unused_bits(text: str, bits_per_char: int, values: dict[str, int]) -> None:
    if not _unused_bits_zero(text, bits_per_char, values):
        raise EncodingError("non-canonical encoding")


class EncodingError(ValueError):
    """A text is not a canonical encoding of any byte string."""


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def is_canonical_b64url(text: str) -> bool:
    """Cheaper than decoding when only canonical form matters: a test, not a raise and catch."""
    if len(text) % 4 == 1 or not B64URL_RE.match(text):
        return False
    return _unused_bits_zero(text, 6, _B64URL_VALUES)


def b64url_tail_is_canonical(text: str) -> bool:
    """`is_canonical_b64url` for text already known to be base64url characters of a valid length
    (a validated IV or tag): only the unused bits are left to test. Registration runs it twice
    per record of a batch, so it skips the regex the schema has already applied."""
    return _unused_bits_zero(text, 6, _B64URL_VALUES)


def b64url_decode(text: str) -> bytes:
    if not B64URL_RE.match(text) or len(text) % 4 == 1:
        raise EncodingError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise EncodingError("not unpadded base64url") from exc
    _check_unused_bits(text, 6, _B64URL_VALUES)
    return data


def base32_encode(data: bytes) -> str:
    return base64.b32encode(data).rstrip(b"=").decode("ascii")


def base32_decode(text: str) -> bytes:
    """Decoded through `int(..., 32)`: the standard library's b32decode is pure Python and cost
    more than the rest of a verification for a 3 kB ciphertext."""
    if not BASE32_RE.match(text) or len(text) % 8 in (1, 3, 6):
        raise EncodingError("not unpadded upper-case Base32")
    _check_unused_bits(text, 5, _BASE32_VALUES)
    if not text:
        return b""
    bits = 5 * len(text)
    value = int(text.translate(_TO_BASE32HEX), 32) >> (bits % 8)
    return value.to_bytes(bits // 8, "big")


def new_reference() -> str:
    """A server-made service_reference: 16 CSPRNG bytes, 22 base64url characters."""
    return b64url_encode(secrets.token_bytes(16))
