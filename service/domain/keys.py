"""Issuer encryption keys (PROTOCOL §2): versions, states and wrapping under the master key.

Raw key material exists only in memory for the moment it is used; the store sees it wrapped, and a
retired key's wrapped material is overwritten, so a retired version can never decrypt again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.protocol.crypto import AuthenticationFailed, cipher, new_key, unwrap_key, wrap_key
from service.protocol.encoding import b64url_decode, b64url_encode
from service.protocol.errors import ErrorCode
from service.protocol.vocabulary import KeyState
from service.storage.port import KeyVersion, Store

KEY_VERSION_RE = re.compile(
    r"^(?P<issuer>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(?P<n>[1-9][0-9]{0,5})$"
)


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key_version: str
    encryption_key: str
    """base64url of the 32 raw bytes; shown to the issuer once, never stored in clear."""


class KeyRing:
    def __init__(self, store: Store, master_key: bytes, clock: Clock) -> None:
        self._store = store
        self._master_key = master_key
        self._clock = clock
        self._ciphers: dict[str, tuple[str, AESGCM]] = {}

    def create_key(self, issuer_id: str) -> IssuedKey:
        """Add the issuer's next key version as active; the previous active one stays live."""
        existing = self._store.list_keys(issuer_id)
        number = max((k.number for k in existing), default=0) + 1
        key_version = f"{issuer_id}.{number}"
        raw = new_key()
        wrapped = wrap_key(raw, self._master_key, key_version)
        self._store.add_key(
            KeyVersion(
                key_version=key_version,
                issuer_id=issuer_id,
                number=number,
                state=KeyState.ACTIVE,
                wrapped=b64url_encode(wrapped),
                created_at=iso_z(self._clock.now()),
            ),
            demote_active=True,
        )
        return IssuedKey(key_version, b64url_encode(raw))

    def retire(self, key_version: str) -> KeyVersion:
        retired = self._store.retire_key(key_version, iso_z(self._clock.now()))
        if retired is None:
            raise ServiceError(ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "no such key version")
        return retired

    def check_registration_key(self, issuer_id: str, key_version: str | None) -> None:
        """A pinned key_version must be one of the caller's own, not retired (PROTOCOL §2)."""
        if key_version is None:
            return
        key = self._store.get_key(key_version)
        if key is None or key.issuer_id != issuer_id:
            raise validation_failed(
                "encryption_metadata.key_version", "is not a key version of this issuer"
            )
        if key.state == KeyState.RETIRED:
            raise validation_failed(
                "encryption_metadata.key_version", "this key version is retired; use the active one"
            )

    def registration_key_checker(self, issuer_id: str) -> Callable[[str | None], None]:
        """`check_registration_key` for one batch: each distinct key_version is read and judged
        once (a pay run names one key; a store read per record cost most of a batch's time).
        The batch is judged as of one moment, as if its records had come together."""
        verdicts: dict[str | None, ServiceError | None] = {}

        def check(key_version: str | None) -> None:
            if key_version not in verdicts:
                try:
                    self.check_registration_key(issuer_id, key_version)
                except ServiceError as error:
                    verdicts[key_version] = error
                else:
                    verdicts[key_version] = None
            known = verdicts[key_version]
            if known is not None:
                raise known.with_traceback(None)  # the same error again, no growing trace

        return check

    def _issuer_keys(
        self, issuer_id: str, known: Sequence[KeyVersion] | None
    ) -> Sequence[KeyVersion]:
        """The issuer's keys: from `known` (keys already read with the record), else the store."""
        if known is None:
            return self._store.list_keys(issuer_id)
        return [k for k in known if k.issuer_id == issuer_id]

    def candidates(
        self, issuer_id: str, known: Sequence[KeyVersion] | None = None
    ) -> list[KeyVersion]:
        """Non-retired keys, newest first: the active key is the likeliest to authenticate."""
        keys = [k for k in self._issuer_keys(issuer_id, known) if k.state != KeyState.RETIRED]
        return sorted(keys, key=lambda k: k.number, reverse=True)

    def retired_key_was_live_at(
        self, issuer_id: str, registered_at: str, known: Sequence[KeyVersion] | None = None
    ) -> bool:
        """Whether a key that is retired now was live when the record was registered (created at
        or before the registration, retired after it), so it may have been the one used
        (PROTOCOL §2). A key already retired at registration cannot have sealed the record.
        Timestamps share one fixed-width form (`iso_z`), so text order is time order; a
        retirement in the same millisecond as the registration counts as live, and a retired key
        with no recorded retirement time is assumed live, so doubt never reads as tampering."""
        return any(
            k.state == KeyState.RETIRED
            and k.created_at <= registered_at
            and (k.retired_at is None or k.retired_at >= registered_at)
            for k in self._issuer_keys(issuer_id, known)
        )

    def get(self, key_version: str) -> KeyVersion | None:
        return self._store.get_key(key_version)

    def cipher(self, key: KeyVersion) -> AESGCM:
        """The key's AES-GCM object, unwrapped once. The cache is keyed by the wrapped material,
        which retirement overwrites, so a retired key can never be served from it."""
        cached = self._ciphers.get(key.key_version)
        if cached is not None and cached[0] == key.wrapped:
            return cached[1]
        aead = cipher(self.unwrap(key))
        self._ciphers[key.key_version] = (key.wrapped, aead)
        return aead

    def unwrap(self, key: KeyVersion) -> bytes:
        if key.state == KeyState.RETIRED or not key.wrapped:
            raise ServiceError(ErrorCode.KEY_VERSION_UNAVAILABLE, "this key version is retired")
        try:
            return unwrap_key(b64url_decode(key.wrapped), self._master_key, key.key_version)
        except (AuthenticationFailed, ValueError) as exc:
            raise ServiceError(
                ErrorCode.SERVICE_UNAVAILABLE,
                "a stored key cannot be unwrapped with this instance's master key",
                retry_after=60,
            ) from exc
