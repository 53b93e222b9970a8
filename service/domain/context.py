"""The domain's composition: one object holding every service, built from a store and secrets.

Instance secrets (the token signing keys, see service/domain/signing_keys.py, the receipt keys,
service/domain/receipt_keys.py, and the HMAC keys
for client secrets and pairing codes) live in the store wrapped under the master key; they are
created on first use, so `init` and a fresh demo instance need no separate step.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.admin import Admin
from service.domain.clients import ClientRegistry
from service.domain.clock import Clock
from service.domain.keys import KeyRing
from service.domain.pairing import Pairings
from service.domain.receipt_keys import ReceiptKeys
from service.domain.receipts import Receipts
from service.domain.registration import Registration
from service.domain.revocation import Revocation
from service.domain.signing_keys import SIGNING_KEY_SETTING, SigningKeys, instance_secret
from service.domain.tokens import Audiences, TokenService
from service.domain.verification import Verification
from service.storage.port import Store

__all__ = ["SIGNING_KEY_SETTING", "Domain", "build_domain", "holds_instance"]


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
    signing: SigningKeys
    receipt_keys: ReceiptKeys
    receipts: Receipts


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
    signing = SigningKeys(store, master_key, clock, token_ttl)
    clients = ClientRegistry(store, instance_secret(store, master_key, "client_hmac_key"), clock)
    keys = KeyRing(store, master_key, clock)
    tokens = TokenService(signing, audiences, environment, clients, clock, token_ttl)
    verification = Verification(store, keys, clock)
    receipt_keys = ReceiptKeys(store, master_key, clock)
    return Domain(
        store=store,
        keys=keys,
        clients=clients,
        tokens=tokens,
        registration=Registration(store, keys, clock, scan_base),
        verification=verification,
        revocation=Revocation(store, clock),
        admin=Admin(store, keys, clients, clock),
        signing=signing,
        receipt_keys=receipt_keys,
        receipts=Receipts(verification, receipt_keys, clock, audiences.verifier_url, environment),
        pairings=Pairings(
            store,
            clients,
            instance_secret(store, master_key, "pairing_hmac_key"),
            clock,
            scan_base,
        ),
    )
