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


class EncodingError(ValueError):
    """A text is not a canonical encoding of any byte string."""


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    if not B64URL_RE.match(text) or len(text) % 4 == 1:
        raise EncodingError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise EncodingError("not unpadded base64url") from exc
    if b64url_encode(data) != text:
        raise EncodingError("non-canonical base64url")
    return data


def base32_encode(data: bytes) -> str:
    return base64.b32encode(data).rstrip(b"=").decode("ascii")


def base32_decode(text: str) -> bytes:
    if not BASE32_RE.match(text) or len(text) % 8 in (1, 3, 6):
        raise EncodingError("not unpadded upper-case Base32")
    try:
        data = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError) as exc:
        raise EncodingError("not unpadded upper-case Base32") from exc
    if base32_encode(data) != text:
        raise EncodingError("non-canonical Base32")
    return data


def new_reference() -> str:
    """A server-made service_reference: 16 CSPRNG bytes, 22 base64url characters."""
    return b64url_encode(secrets.token_bytes(16))
