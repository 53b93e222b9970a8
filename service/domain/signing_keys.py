"""The token signing keys: the current one, and the previous one for a while after a rotation.

A rotation (`python -m service admin rotate-signing-key`) makes a new Ed25519 key current. The
previous key keeps verifying the tokens it signed until they would have expired anyway (one token
lifetime), so a planned rotation signs nobody out; with `--drop-previous` (a key that may have
leaked) its tokens are refused at once. Both keys are published in the JWKS while they verify.

Receipts (PROTOCOL §11) are signed with keys of their own (service.domain.receipt_keys): a token
key that stops verifying tokens is gone from the JWKS, and cannot vouch for a receipt.

The keys live in the store, wrapped under the master key like every instance secret. A serving
process reads them again at most every REFRESH_SECONDS, so a rotation made by the CLI reaches
every running server and worker within that time, without a restart.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from service.domain.clock import Clock, iso_z
from service.domain.errors import MasterKeyMismatch
from service.protocol.crypto import AuthenticationFailed, unwrap_key, wrap_key
from service.protocol.encoding import b64url_decode, b64url_encode
from service.storage.port import Store

SIGNING_KEY_SETTING = "token_signing_key"
PREVIOUS_KEY_SETTING = "token_signing_key_previous"
PREVIOUS_UNTIL_SETTING = "token_signing_key_previous_until"
WATCHED = (SIGNING_KEY_SETTING, PREVIOUS_KEY_SETTING, PREVIOUS_UNTIL_SETTING)
REFRESH_SECONDS = 2.0


def instance_secret(store: Store, master_key: bytes, name: str) -> bytes:
    """A 32-byte instance secret, created once and stored only wrapped."""
    wrapped = store.get_setting(name)
    if wrapped is None:
        store.set_setting(name, _wrap(secrets.token_bytes(32), master_key, name))
        wrapped = store.get_setting(name)
        assert wrapped is not None
    return _unwrap(wrapped, master_key, name)


def _wrap(secret: bytes, master_key: bytes, name: str) -> str:
    return b64url_encode(wrap_key(secret, master_key, name))


def _unwrap(wrapped: str, master_key: bytes, name: str) -> bytes:
    try:
        return unwrap_key(b64url_decode(wrapped), master_key, name)
    except AuthenticationFailed:
        raise MasterKeyMismatch("the master key does not open this store's keys") from None


def kid_of(key: Ed25519PrivateKey) -> str:
    return b64url_encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))[:16]


@dataclass(frozen=True, slots=True)
class _Keys:
    current: Ed25519PrivateKey
    current_kid: str
    previous: Ed25519PublicKey | None
    previous_kid: str | None
    previous_until: str | None


class SigningKeys:
    def __init__(
        self,
        store: Store,
        master_key: bytes,
        clock: Clock,
        ttl: int,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._monotonic = monotonic  # how old a read is (the clock says when a key expires)
        self._store = store
        self._master = master_key
        self._clock = clock
        self._ttl = ttl
        self._lock = threading.Lock()
        self._seen = self._watched()
        self._keys = self._load()
        self._checked = monotonic()
        """When a re-read was last tried (a failed one is not retried for REFRESH_SECONDS)."""
        self._read_at = self._checked
        """When the keys were last read from the store successfully."""

    def current(self) -> tuple[str, Ed25519PrivateKey]:
        keys = self._fresh()
        return keys.current_kid, keys.current

    def public_key(self, kid: str, *, cached: bool = False) -> Ed25519PublicKey | None:
        """The key that verifies tokens with this `kid`, while it may. `cached`: as last read,
        without reading the store even when a refresh is due (for a thread that must not wait
        for the store; the next caller that may wait refreshes)."""
        keys = self._keys if cached else self._fresh()
        if kid == keys.current_kid:
            return keys.current.public_key()
        if kid == keys.previous_kid and self._previous_valid(keys):
            return keys.previous
        return None

    def recently_read(self) -> bool:
        """Whether the keys as last read were read within two refresh periods. A server's
        keeper re-reads them every half period, so on a server whose store answers they are at
        most that old, newer than a request thread's view (up to one period), and a token whose
        key they do not hold is refused as a request thread would refuse it. An older view (the
        store failing or slow) may lack a key rotated in since."""
        return self._monotonic() - self._read_at < 2 * REFRESH_SECONDS

    def published(self) -> list[tuple[str, Ed25519PublicKey]]:
        keys = self._fresh()
        found = [(keys.current_kid, keys.current.public_key())]
        if keys.previous is not None and keys.previous_kid and self._previous_valid(keys):
            found.append((keys.previous_kid, keys.previous))
        return found

    def rotate(self, drop_previous: bool = False) -> dict[str, str | None]:
        """Make a new key current; the old one verifies its tokens for one lifetime more, or
        not at all with `drop_previous`."""
        with self._lock:
            old = _unwrap(self._setting(SIGNING_KEY_SETTING), self._master, SIGNING_KEY_SETTING)
            new = secrets.token_bytes(32)
            until = (
                None if drop_previous else iso_z(self._clock.now() + timedelta(seconds=self._ttl))
            )
            self._store.set_setting(
                PREVIOUS_KEY_SETTING, _wrap(old, self._master, PREVIOUS_KEY_SETTING)
            )
            self._store.set_setting(PREVIOUS_UNTIL_SETTING, until or "")
            self._store.set_setting(
                SIGNING_KEY_SETTING, _wrap(new, self._master, SIGNING_KEY_SETTING)
            )
            keys = self._reread()  # under the same lock: no other read can answer for it
        previous = Ed25519PrivateKey.from_private_bytes(old)
        return {
            "kid": keys.current_kid,
            "previous_kid": kid_of(previous),
            "previous_valid_until": until,
        }

    def _previous_valid(self, keys: _Keys) -> bool:
        return bool(keys.previous_until) and iso_z(self._clock.now()) < str(keys.previous_until)

    def _setting(self, name: str) -> str:
        value = self._store.get_setting(name)
        assert value is not None
        return value

    def refresh(self) -> None:
        """Re-read the keys now: a server's keeper thread calls this every half period, so that
        the keys as last read (`cached=True`, the head check's) stay recent without a read on
        the thread that must not wait (service.hosting.keys_keeper)."""
        with self._lock:
            self._reread()

    def _fresh(self) -> _Keys:
        """The keys, re-read first when due. One thread re-reads at a time; the others go on
        with the keys as last read instead of queueing behind a read the store may hold for
        its whole timeout."""
        now = self._monotonic()
        if now - self._checked < REFRESH_SECONDS:
            return self._keys
        if not self._lock.acquire(blocking=False):
            return self._keys
        try:
            if now - self._checked >= REFRESH_SECONDS:
                return self._reread()
        finally:
            self._lock.release()
        return self._keys

    def _reread(self) -> _Keys:
        """Read the keys again (the caller holds the lock). The watched settings are read first
        and remembered only once the keys are loaded: a rotation landing during the load, or a
        load that fails half-way, leaves them different from what the store holds, so the next
        re-read loads again instead of keeping a mix."""
        self._checked = self._monotonic()
        seen = self._watched()
        if seen != self._seen:
            self._keys = self._load()
            self._seen = seen
        self._read_at = self._monotonic()  # only a read that succeeded is recent
        return self._keys

    def _watched(self) -> tuple[str | None, ...]:
        return tuple(self._store.get_setting(name) for name in WATCHED)

    def _load(self) -> _Keys:
        current = Ed25519PrivateKey.from_private_bytes(
            instance_secret(self._store, self._master, SIGNING_KEY_SETTING)
        )
        wrapped_previous = self._store.get_setting(PREVIOUS_KEY_SETTING)
        previous = previous_kid = None
        if wrapped_previous:
            old = Ed25519PrivateKey.from_private_bytes(
                _unwrap(wrapped_previous, self._master, PREVIOUS_KEY_SETTING)
            )
            previous, previous_kid = old.public_key(), kid_of(old)
        return _Keys(
            current,
            kid_of(current),
            previous,
            previous_kid,
            self._store.get_setting(PREVIOUS_UNTIL_SETTING) or None,
        )
