"""The domain's composition: one object holding every service, built from a store and secrets.

Instance secrets (the token signing key and the client-secret HMAC key) live in the store wrapped
under the master key; they are created on first use, so `init` and a fresh demo instance need no
separate step.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from service.domain.admin import Admin
from service.domain.clients import ClientRegistry
from service.domain.clock import Clock
from service.domain.errors import MasterKeyMismatch
from service.domain.keys import KeyRing
from service.domain.pairing import Pairings
from service.domain.registration import Registration
from service.domain.revocation import Revocation
from service.domain.tokens import Audiences, TokenService
from service.domain.verification import Verification
from service.protocol.crypto import AuthenticationFailed, unwrap_key, wrap_key
from service.protocol.encoding import b64url_decode, b64url_encode
from service.storage.port import Store

SIGNING_KEY_SETTING = "token_signing_key"


@dataclass(frozen=True, slots=True)
class Domain:
    store: Store
    keys: KeyRing
    clients: ClientRegistry
    tokens: TokenService
    registration: Registration
    verification: Verification
    revocation: Revocation
    admin: Admin
    pairings: Pairings


def _instance_secret(store: Store, master_key: bytes, name: str) -> bytes:
    """A 32-byte instance secret, created once and stored only wrapped."""
    wrapped = store.get_setting(name)
    if wrapped is None:
        store.set_setting(name, b64url_encode(wrap_key(secrets.token_bytes(32), master_key, name)))
        wrapped = store.get_setting(name)
        assert wrapped is not None
    try:
        return unwrap_key(b64url_decode(wrapped), master_key, name)
    except AuthenticationFailed:
        raise MasterKeyMismatch("the master key does not open this store's keys") from None


def holds_instance(store: Store) -> bool:
    """Whether the store already belongs to an instance (its signing key exists)."""
    return store.get_setting(SIGNING_KEY_SETTING) is not None


def build_domain(
    store: Store,
    master_key: bytes,
    clock: Clock,
    audiences: Audiences,
    environment: str,
    scan_base: str,
    token_ttl: int = 900,
) -> Domain:
    signing_key = Ed25519PrivateKey.from_private_bytes(
        _instance_secret(store, master_key, SIGNING_KEY_SETTING)
    )
    public = signing_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    kid = b64url_encode(public)[:16]
    clients = ClientRegistry(store, _instance_secret(store, master_key, "client_hmac_key"), clock)
    keys = KeyRing(store, master_key, clock)
    tokens = TokenService(signing_key, kid, audiences, environment, clients, clock, token_ttl)
    return Domain(
        store=store,
        keys=keys,
        clients=clients,
        tokens=tokens,
        registration=Registration(store, keys, clock, scan_base),
        verification=Verification(store, keys, clock),
        revocation=Revocation(store, clock),
        admin=Admin(store, keys, clients, clock),
        pairings=Pairings(
            store,
            clients,
            _instance_secret(store, master_key, "pairing_hmac_key"),
            clock,
            scan_base,
        ),
    )
