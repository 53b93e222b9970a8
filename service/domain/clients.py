"""OAuth clients: creation with one-time secrets, and constant-time authentication.

Secrets are 256-bit random values, so they are stored as HMAC-SHA256 under an instance key rather
than with a slow password hash (PROTOCOL §7): the token endpoint stays fast and nothing is lost.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

from service.domain.clock import Clock, iso_z
from service.protocol.encoding import b64url_encode
from service.storage.port import Client, Store, StoreUnavailable

ROLE_SCOPES: dict[str, str] = {
    "issuer": "service:issuer",
    "verifier": "service:verifier",
    "admin": "service:admin",
}

IDENTITY_CACHE_SIZE = 10_000

log = logging.getLogger("service.clients")


class ClientRegistry:
    def __init__(self, store: Store, hmac_key: bytes, clock: Clock) -> None:
        self._store = store
        self._hmac_key = hmac_key
        self._clock = clock
        self._identities: dict[str, tuple[str, str]] = {}

    def create(
        self, role: str, owner_id: str, name: str, expires_at: str | None = None
    ) -> tuple[str, str]:
        """Returns (client_id, client_secret); the secret is never retrievable again.
        `expires_at`: when it stops signing in (a paired phone's, service.domain.pairing)."""
        client_id = f"{role[:3]}_{b64url_encode(secrets.token_bytes(12))}"
        secret = b64url_encode(secrets.token_bytes(32))
        while secret.startswith("-"):  # a leading '-' reads as an option on command lines
            secret = b64url_encode(secrets.token_bytes(32))
        self._store.add_client(
            Client(
                client_id=client_id,
                role=role,
                owner_id=owner_id,
                name=name,
                secret_hmac=self._digest(secret),
                created_at=iso_z(self._clock.now()),
                expires_at=expires_at,
            )
        )
        return client_id, secret

    def authenticate(self, client_id: str, secret: str) -> Client | None:
        """The enabled, unexpired client whose secret matches, else None (unknown, wrong,
        disabled or expired). Its use is recorded to the hour (`Client.last_used_at`, shown in
        Admin): one store write per client and hour, however often it asks for tokens."""
        client = self._store.get_client(client_id)
        expected = client.secret_hmac if client else self._digest("")
        ok = hmac.compare_digest(expected, self._digest(secret))
        now = iso_z(self._clock.now())
        if client is None or not ok or not client.usable(now):
            return None
        if (client.last_used_at or "")[:13] != now[:13]:
            try:
                self._store.touch_client(client.client_id, now)
            except StoreUnavailable:  # a full disk must not stop sign-ins; Admin's view waits
                log.warning("could not record a client's last use (store unavailable)")
        return client

    def active(self, client_id: str) -> Client | None:
        """The client when it exists, is enabled and has not expired; else None."""
        return usable_now(self._store.get_client(client_id), self._clock)

    def identity(self, client_id: str) -> tuple[str, str] | None:
        """(role, owner_id) of a client, which never change once it exists, remembered after
        the first read (None, not remembered, when it is unknown or disabled then). Whether it
        is disabled *now* is not part of this: the caller must read that in the same request
        (`Verification.verify` reads it with the record), so a client disabled through another
        host is still refused at once."""
        known = self._identities.get(client_id)
        if known is None:
            client = self.active(client_id)
            if client is None:
                return None
            if len(self._identities) >= IDENTITY_CACHE_SIZE:
                self._identities.clear()
            known = self._identities[client_id] = (client.role, client.owner_id)
        return known

    def _digest(self, secret: str) -> str:
        mac = hmac.new(self._hmac_key, secret.encode("utf-8"), hashlib.sha256)
        return mac.hexdigest()


def usable_now(client: Client | None, clock: Clock) -> Client | None:
    """`client` when it is enabled and unexpired now, else None: every check of a client read
    from the store (a token's, a verification's) goes through this, so an expired phone is
    refused as a disabled one is."""
    if client is None or not client.usable(iso_z(clock.now())):
        return None
    return client
