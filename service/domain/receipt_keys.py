"""The receipt signing keys (PROTOCOL §11), kept apart from the access-token keys.

A receipt never expires, so the key that signed it must stay published for as long as anyone may
check it; an access-token key lives for a rotation or two. Sharing one key made every dropped
token key (possibly leaked: that is why it was dropped) a key that still "proved" receipts of any
date. Here receipts get keys of their own (`kid` starting `receipt-`), and the JWKS says of each
whether it may still be trusted:

- `current`: signs new receipts. One per instance, made on first use.
- `retired` (`admin rotate-receipt-key`): still checks the receipts it signed; its private half
  is destroyed, so it can never sign again.
- `revoked` (`admin revoke-receipt-key --kid KID`, after a leak): still published, with
  `revoked_at`, so that a checker can say *why* it refuses every receipt under it: a genuine
  receipt from before the leak cannot be told from a forgery made with the leaked key, whatever
  its `iat` says. A revoked current key is replaced in the same write.

All of it is one setting, wrapped under the master key like every instance secret: someone who
can write the database but lacks the master key cannot add a key of their own to the JWKS (nor
un-revoke one). Every change is a compare-and-set on that setting (`Store.replace_setting`), so a
rotation and a revocation made at once, by two processes, never lose one another. Signing reads
the setting on every receipt (a comparison with the text last unwrapped, which is cached): a
revocation is obeyed by every server and worker from the next receipt on, without a refresh period
during which a revoked key would still sign.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from service.domain.clock import Clock
from service.domain.errors import MasterKeyMismatch, ServiceError
from service.protocol.crypto import AuthenticationFailed, unwrap_key, wrap_key
from service.protocol.encoding import b64url_decode, b64url_encode
from service.protocol.errors import ErrorCode
from service.protocol.vocabulary import ReceiptKeyState
from service.storage.port import Store, StoreUnavailable

RECEIPT_KEYS_SETTING = "receipt_keys"
KID_PREFIX = "receipt-"
_ATTEMPTS = 100
"""Compare-and-set rounds before giving up: each lost round means another writer succeeded."""


@dataclass(frozen=True, slots=True)
class ReceiptKey:
    """One receipt key as published (never its private half)."""

    kid: str
    public: Ed25519PublicKey
    state: ReceiptKeyState
    created_at: int
    retired_at: int | None = None
    revoked_at: int | None = None
    """Unix time of the revocation (PROTOCOL §11: the JWKS entry's `revoked_at`)."""

    def jwk(self) -> dict[str, Any]:
        entry: dict[str, Any] = jwt.algorithms.OKPAlgorithm.to_jwk(self.public, as_dict=True)
        entry.update({"kid": self.kid, "use": "sig", "alg": "EdDSA", "key_ops": ["verify"]})
        if self.revoked_at is not None:
            entry["revoked_at"] = self.revoked_at
        return entry


@dataclass(frozen=True, slots=True)
class _State:
    keys: tuple[ReceiptKey, ...]
    signer: Ed25519PrivateKey | None
    """The current key's private half; None when there is no current key yet."""


_Change = tuple[list[ReceiptKey], Ed25519PrivateKey | None]
"""A change's outcome: every key, and the current one's private half."""


def _raw_public(key: Ed25519PublicKey) -> str:
    return b64url_encode(key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def receipt_kid(key: Ed25519PublicKey) -> str:
    return KID_PREFIX + _raw_public(key)[:16]


class ReceiptKeys:
    def __init__(self, store: Store, master_key: bytes, clock: Clock) -> None:
        self._store = store
        self._master = master_key
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: str | None = None
        self._state = _State((), None)

    # --- reading --------------------------------------------------------------------------
    def signer(self) -> tuple[str, Ed25519PrivateKey]:
        """The current key (made on first use), as the store says now."""
        state = self._read()
        if state.signer is None:  # another process may make it first: then that one is kept
            self._change(
                lambda keys, signer: (keys, signer) if signer else self._with_new_current(keys)
            )
            state = self._read()
        assert state.signer is not None
        return receipt_kid(state.signer.public_key()), state.signer

    def published(self) -> list[ReceiptKey]:
        """Every receipt key there ever was, oldest first (PROTOCOL §11)."""
        return list(self._read().keys)

    def jwks(self) -> list[dict[str, Any]]:
        return [key.jwk() for key in self.published()]

    # --- changes --------------------------------------------------------------------------
    def rotate(self) -> dict[str, Any]:
        """A new current key; the old one is retired (checks its receipts, signs no more)."""
        now = self._now()
        retired: list[str] = []

        def change(keys: list[ReceiptKey], signer: Ed25519PrivateKey | None) -> _Change:
            retired[:] = [k.kid for k in keys if k.state == ReceiptKeyState.CURRENT]
            kept = [
                replace(k, state=ReceiptKeyState.RETIRED, retired_at=now)
                if k.state == ReceiptKeyState.CURRENT
                else k
                for k in keys
            ]
            return self._with_new_current(kept)

        after = self._change(change)
        return {"kid": _current_kid(after), "retired_kids": retired}

    def revoke(self, kid: str) -> dict[str, Any]:
        """Mark `kid` revoked (a repeat keeps the first time); a revoked current key is
        replaced by a new one in the same write."""
        now = self._now()

        def change(keys: list[ReceiptKey], signer: Ed25519PrivateKey | None) -> _Change:
            found = next((k for k in keys if k.kid == kid), None)
            if found is None:
                raise ServiceError(
                    ErrorCode.NOT_FOUND,
                    "no receipt key has this kid; `admin list-receipt-keys` shows them",
                )
            was_current = found.state == ReceiptKeyState.CURRENT
            revoked = replace(
                found,
                state=ReceiptKeyState.REVOKED,
                revoked_at=found.revoked_at if found.revoked_at is not None else now,
            )
            kept = [revoked if k.kid == kid else k for k in keys]
            return self._with_new_current(kept) if was_current else (kept, signer)

        after = self._change(change)
        revoked = next(k for k in after.keys if k.kid == kid)
        return {
            "kid": kid,
            "status": str(ReceiptKeyState.REVOKED),
            "revoked_at": revoked.revoked_at,
            "current_kid": _current_kid(after),
        }

    def listing(self) -> dict[str, Any]:
        """Every receipt key, for `admin list-receipt-keys` (never key material)."""
        return {
            "receipt_keys": [
                {
                    "kid": k.kid,
                    "status": str(k.state),
                    "created_at": k.created_at,
                    "retired_at": k.retired_at,
                    "revoked_at": k.revoked_at,
                }
                for k in self.published()
            ]
        }

    # --- the setting ----------------------------------------------------------------------
    def _with_new_current(self, keys: list[ReceiptKey]) -> _Change:
        private = Ed25519PrivateKey.generate()
        public = private.public_key()
        fresh = ReceiptKey(receipt_kid(public), public, ReceiptKeyState.CURRENT, self._now())
        return [*keys, fresh], private

    def _now(self) -> int:
        return int(self._clock.now().timestamp())

    def _change(
        self, change: Callable[[list[ReceiptKey], Ed25519PrivateKey | None], _Change]
    ) -> _State:
        """Apply `change(keys, signer) -> (keys, signer)` by compare-and-set, again from a fresh
        read whenever another writer got there first; the state this change wrote."""
        for _ in range(_ATTEMPTS):
            wrapped = self._store.get_setting(RECEIPT_KEYS_SETTING)
            state = self._parse(wrapped)
            keys, signer = change(list(state.keys), state.signer)
            written = _State(tuple(keys), signer)
            new = self._wrap(written)
            if self._store.replace_setting(RECEIPT_KEYS_SETTING, wrapped, new):
                return written  # what this change wrote (another may have followed already)
        raise StoreUnavailable("the receipt keys kept changing under this change; try again")

    def _read(self) -> _State:
        wrapped = self._store.get_setting(RECEIPT_KEYS_SETTING)
        with self._lock:
            if wrapped != self._seen:
                self._state = self._parse(wrapped)
                self._seen = wrapped
            return self._state

    def _parse(self, wrapped: str | None) -> _State:
        if not wrapped:
            return _State((), None)
        try:
            plain = unwrap_key(b64url_decode(wrapped), self._master, RECEIPT_KEYS_SETTING)
        except AuthenticationFailed:
            raise MasterKeyMismatch("the master key does not open this store's keys") from None
        doc = json.loads(plain)
        keys = tuple(
            ReceiptKey(
                kid=str(entry["kid"]),
                public=Ed25519PublicKey.from_public_bytes(b64url_decode(entry["public"])),
                state=ReceiptKeyState(entry["state"]),
                created_at=int(entry["created_at"]),
                retired_at=entry.get("retired_at"),
                revoked_at=entry.get("revoked_at"),
            )
            for entry in doc["keys"]
        )
        private = doc.get("signer")
        signer = Ed25519PrivateKey.from_private_bytes(b64url_decode(private)) if private else None
        return _State(keys, signer)

    def _wrap(self, state: _State) -> str:
        current = [k for k in state.keys if k.state == ReceiptKeyState.CURRENT]
        assert len(current) <= 1 and (state.signer is None) == (not current)
        doc: dict[str, Any] = {
            "keys": [
                {
                    "kid": k.kid,
                    "public": _raw_public(k.public),
                    "state": str(k.state),
                    "created_at": k.created_at,
                    "retired_at": k.retired_at,
                    "revoked_at": k.revoked_at,
                }
                for k in state.keys
            ]
        }
        if state.signer is not None:  # only the current key's private half is ever kept
            doc["signer"] = b64url_encode(state.signer.private_bytes_raw())
        plain = json.dumps(doc, separators=(",", ":")).encode("ascii")
        return b64url_encode(wrap_key(plain, self._master, RECEIPT_KEYS_SETTING))


def _current_kid(state: _State) -> str | None:
    return next((k.kid for k in state.keys if k.state == ReceiptKeyState.CURRENT), None)
