"""Pairing a phone: a one-time link that gives the phone its own verifier credential.

An admin asks for a pairing for an enabled verifier client. The answer is a link to the phone
page whose fragment carries `<pairing_id>.<secret>`; the fragment never reaches a server, so the
secret travels only inside the QR, the phone's address bar and the body of the one redemption
request. Redeeming it, once and before it expires, creates a *new* verifier client for the same
verifier, named for the phone: the phone stores that credential, never the desk's, so disabling
the phone's client in Admin stops that phone alone and at once.

Rules, in one place:
- the secret is 256 random bits, stored only as HMAC-SHA256 (like client secrets, PROTOCOL §7);
- a pairing lives `PAIRING_TTL_SECONDS` and is removed by the redemption that uses it, atomically
  in the store, so two phones racing for one link cannot both win;
- redemption fails alike for an unknown, used, expired or mistyped code (nothing to probe), and
  when the source client has been disabled since the link was made;
- the phone's client expires `days` after the redemption (`PHONE_DAYS` unless the admin asked
  for another number, 1 to `MAX_PHONE_DAYS`): then it is refused as a disabled one is, and the
  phone must be paired again.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from service.domain.clients import ClientRegistry
from service.domain.clock import Clock, iso_z
from service.domain.errors import ServiceError, validation_failed
from service.protocol.encoding import b64url_encode
from service.protocol.errors import ErrorCode
from service.protocol.schemas import PairedClient, PairingOffer
from service.protocol.schemas.access import MAX_PHONE_DAYS, PHONE_DAYS
from service.storage.port import Pairing, Store

PAIRING_TTL_SECONDS = 600
"""Ten minutes: time to walk a phone over to the screen, short enough that a photographed QR is
soon worthless (and it is single use anyway)."""

PAIR_PATH = "/v/pair"
"""The page's pairing address; the code follows in the fragment. `pair` can never be a
reference (those are 22 characters) nor a v1 payload (those start with a digit and `|`)."""

_CODE_RE = re.compile(r"^([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$")
_ORIGIN_RE = re.compile(r"^https?://[^/?#\s]+/?$")
MAX_PHONE_NAME = 60


def _not_redeemable() -> ServiceError:
    return ServiceError(
        ErrorCode.UNAUTHORIZED,
        "this pairing link is unknown, already used or expired; ask for a new one",
        oauth_error="invalid_grant",
    )


class Pairings:
    def __init__(
        self,
        store: Store,
        clients: ClientRegistry,
        hmac_key: bytes,
        clock: Clock,
        scan_base: str,
        ttl: int = PAIRING_TTL_SECONDS,
    ) -> None:
        self._store = store
        self._clients = clients
        self._hmac_key = hmac_key
        self._clock = clock
        self._scan_base = scan_base.rstrip("/")
        self._ttl = ttl

    def create(
        self, client_id: str, public_url: str | None = None, days: int | None = None
    ) -> PairingOffer:
        """A new one-time pairing for an enabled verifier client. `public_url` overrides the
        instance's scan base (the offline CLI does not know the server's address); `days`: how
        long the phone's client will sign in (`PHONE_DAYS` when None)."""
        if not client_id:
            raise validation_failed("client_id", "is required")
        if days is not None and (
            isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_PHONE_DAYS
        ):
            raise validation_failed("days", f"must be a whole number from 1 to {MAX_PHONE_DAYS}")
        if public_url is not None and not _ORIGIN_RE.match(public_url):
            raise validation_failed("public_url", "must be an http(s) origin such as https://host")
        client = self._clients.active(client_id)
        if client is None:
            raise ServiceError(
                ErrorCode.SERVICE_REFERENCE_NOT_FOUND, "no such enabled client; check the client id"
            )
        if client.role != "verifier":
            raise validation_failed("client_id", "must be a verifier client")
        now = self._clock.now()
        self._store.purge_pairings(iso_z(now))
        pairing_id = b64url_encode(secrets.token_bytes(12))
        secret = b64url_encode(secrets.token_bytes(32))
        expires = now + timedelta(seconds=self._ttl)
        self._store.add_pairing(
            Pairing(
                pairing_id=pairing_id,
                client_id=client.client_id,
                secret_hmac=self._digest(secret),
                created_at=iso_z(now),
                expires_at=iso_z(expires),
                client_days=days or PHONE_DAYS,
            )
        )
        code = f"{pairing_id}.{secret}"
        base = (public_url or self._scan_base).rstrip("/")
        return PairingOffer(
            pairing_code=code,
            pair_url=f"{base}{PAIR_PATH}#{code}",
            client_id=client.client_id,
            verifier_name=client.name,
            expires_at=iso_z(expires),
            expires_in=self._ttl,
        )

    def redeem(self, pairing_code: str, device_name: object = None) -> PairedClient:
        """Use a pairing code once: a new verifier client for the phone, its secret shown once.
        `device_name` is whatever the phone offered; unusable text becomes "phone"."""
        match = _CODE_RE.match(pairing_code.strip())
        if match is None:
            raise validation_failed("pairing_code", "is not a pairing code")
        device = _device_name(device_name)
        pairing = self._store.take_pairing(match.group(1), self._digest(match.group(2)))
        if pairing is None or pairing.expires_at <= iso_z(self._clock.now()):
            raise _not_redeemable()
        source = self._clients.active(pairing.client_id)
        if source is None:
            raise _not_redeemable()
        now = self._clock.now()
        name = f"{source.name} · {device} paired {iso_z(now)[:10]}"
        lasts = timedelta(days=pairing.client_days or PHONE_DAYS)
        new_id, new_secret = self._clients.create(
            "verifier", source.owner_id, name, expires_at=iso_z(now + lasts)
        )
        return PairedClient(client_id=new_id, client_secret=new_secret, name=name)

    def _digest(self, secret: str) -> str:
        return hmac.new(self._hmac_key, secret.encode("ascii"), hashlib.sha256).hexdigest()


def _device_name(value: object) -> str:
    """A short label the phone offers for itself ("phone" when absent or unusable)."""
    if not isinstance(value, str):
        return "phone"
    clean = "".join(c for c in value.strip() if c.isprintable())[:MAX_PHONE_NAME].strip()
    return clean or "phone"
