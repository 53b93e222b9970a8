"""The issuer library's sealing names: one implementation, in `service.protocol.sealing`.

Re-exported here so `from app.issuer.sealing import seal` keeps working; the protocol package
is shared with the service's demo seeding and the test factories, so all three seal alike.
"""

from __future__ import annotations

from service.protocol.barcode_text import (
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v2,
    scan_url_prefix,
)
from service.protocol.encoding import new_reference
from service.protocol.sealing import EncryptionKeyError, SealedPii, decode_key, encrypt_pii, seal

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
