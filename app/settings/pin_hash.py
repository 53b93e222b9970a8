"""The kiosk PIN's stored form: scrypt, a memory-hard KDF from the standard library.

A PIN has few possible values (10,000 for four digits), so whoever copies settings.json can try
them all offline; only the cost of one try protects it. PBKDF2 at 100,000 rounds cost 26 ms of one
core here: every 4-digit PIN in under 5 minutes. scrypt with N=2^17, r=8, p=2 costs about 1 s of
CPU and 128 MiB of memory per try (measured, docs/decisions.md 2026-11-29): all 4-digit PINs take
about 3 hours per core, and the memory makes GPUs and ASICs little faster than a CPU. The desk
pays that second once per PIN entry; the dialog's lock-out still limits guesses at the desk.

Stored as ``scrypt$n=<N>,r=<r>,p=<p>$<salt hex>$<key hex>``. The older ``<salt>$<pbkdf2 hex>``
still verifies, and :func:`needs_upgrade` says when a stored hash is weaker than today's, so
the next right entry re-hashes it (Settings.check_pin).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

__all__ = ["SCRYPT_N", "SCRYPT_P", "SCRYPT_R", "hash_pin", "needs_upgrade", "verify_pin"]

SCRYPT_N = 2**17
SCRYPT_R = 8
SCRYPT_P = 2
MAX_N = 2**20
"""A stored hash asking for more (1 GiB and up) is refused rather than run: a damaged or
hostile settings file must not make the desk allocate gigabytes."""
LEGACY_ROUNDS = 100_000

_SCRYPT = re.compile(r"^scrypt\$n=(\d+),r=(\d+),p=(\d+)\$([0-9a-f]{32})\$([0-9a-f]{64})$")


def _scrypt(pin: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        pin.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=128 * n * r + 2**20, dklen=32
    )


def hash_pin(pin: str) -> str:
    salt = secrets.token_bytes(16)
    key = _scrypt(pin, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt$n={SCRYPT_N},r={SCRYPT_R},p={SCRYPT_P}${salt.hex()}${key.hex()}"


def verify_pin(pin: str, stored: str) -> bool:
    """True when `pin` matches `stored` (either form), compared in constant time. A malformed
    hash, or one whose cost is out of bounds, matches nothing."""
    match = _SCRYPT.match(stored)
    if match is not None:
        n, r, p = (int(match.group(i)) for i in (1, 2, 3))
        if not (2 <= n <= MAX_N and n & (n - 1) == 0 and 1 <= r <= 32 and 1 <= p <= 16):
            return False
        key = _scrypt(pin, bytes.fromhex(match.group(4)), n, r, p)
        return hmac.compare_digest(key.hex(), match.group(5))
    salt, sep, digest = stored.partition("$")
    if not sep or stored.startswith("scrypt$"):
        return False
    legacy = hashlib.pbkdf2_hmac("sha256", pin.encode(), salt.encode(), LEGACY_ROUNDS).hex()
    return hmac.compare_digest(legacy, digest)


def needs_upgrade(stored: str) -> bool:
    """True for a PBKDF2 hash, or scrypt at a lower cost than today's."""
    match = _SCRYPT.match(stored)
    if match is None:
        return True
    n, r, p = (int(match.group(i)) for i in (1, 2, 3))
    return n * r * p < SCRYPT_N * SCRYPT_R * SCRYPT_P or n * r < SCRYPT_N * SCRYPT_R
