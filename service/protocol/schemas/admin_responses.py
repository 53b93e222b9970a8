"""The success bodies of the admin API and phone pairing (PROTOCOL §8, spec "Admin").

Same policies as `responses.WireModel`. Secrets (`client_secret`, `encryption_key`) appear only
in the answer that creates them, once; `Overview` never holds a secret, a digest or key material.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import SerializerFunctionWrapHandler, WithJsonSchema, model_serializer

from service.protocol.vocabulary import KeyState

from .responses import Time, WireModel

__all__ = [
    "AdminClientCreated",
    "ClientDisabled",
    "ClientSummary",
    "IssuerCreated",
    "IssuerSummary",
    "KeyCreated",
    "KeyRetired",
    "KeySummary",
    "Overview",
    "PairedClient",
    "PairingOffer",
    "VerifierCreated",
    "VerifierSummary",
]


class IssuerCreated(WireModel):
    """A new issuer: its first client credential and first encryption key, shown once."""

    issuer_id: str
    client_id: str
    client_secret: str
    key_version: str
    encryption_key: str


class VerifierCreated(WireModel):
    """A new verifier (a front desk) and its client credential, shown once."""

    verifier_id: str
    client_id: str
    client_secret: str


class AdminClientCreated(WireModel):
    """The admin credential `init` creates (printed once by the CLI, never sent over HTTP)."""

    admin_client_id: str
    admin_client_secret: str


class KeyCreated(WireModel):
    """A rotated issuer key: the new version becomes the active one."""

    key_version: str
    encryption_key: str


class KeyRetired(WireModel):
    key_version: str
    status: Literal[KeyState.RETIRED]


class ClientDisabled(WireModel):
    client_id: str
    disabled: bool


class PairingOffer(WireModel):
    """A one-time link that gives a phone its own verifier credential (`service.domain.pairing`).
    `pair_url`'s fragment carries the code; it works once, within `expires_in` seconds."""

    pairing_code: str
    pair_url: str
    client_id: str
    verifier_name: str
    expires_at: Time
    expires_in: int


class PairedClient(WireModel):
    """A redeemed pairing: the phone's own new verifier client, its secret shown once."""

    client_id: str
    client_secret: str
    name: str


# --- the overview ---------------------------------------------------------------------------


class IssuerSummary(WireModel):
    issuer_id: str
    name: str
    created_at: Time
    records: int
    revoked: int
    unpinned: int | None = None
    """Payslips not revoked whose key the service has not noted yet (registered without a key
    version, never verified since): any of the issuer's keys may be theirs."""


class VerifierSummary(WireModel):
    verifier_id: str
    name: str
    created_at: Time


class ClientSummary(WireModel):
    """`role` is issuer, verifier or admin; `owner_id` the issuer's or verifier's id (`admin`
    for admin clients)."""

    client_id: str
    role: str
    owner_id: str
    name: str
    disabled: bool
    created_at: Time
    expires_at: Time | None = None
    """A paired phone's client stops signing in then (None: never)."""
    last_used_at: Time | None = None
    """When it last got a token, to the hour (None: not since this was recorded)."""


NullableTime = Annotated[
    str | None, WithJsonSchema({"type": ["string", "null"], "format": "date-time"})
]


class KeySummary(WireModel):
    """An issuer key version. `state` is a `KeyState` (active, live or retired), read as text
    like every documented value that may grow; `retired_at` is null until retirement, and is the
    one field on this wire sent as null rather than left out (it always was)."""

    key_version: str
    issuer_id: str
    state: str
    created_at: Time
    retired_at: NullableTime
    records: int | None = None
    """Payslips registered with this key that are not revoked: retiring the key makes them
    unverifiable (the Admin screen says how many before it does)."""

    @model_serializer(mode="wrap")
    def _send_null_retired_at(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        data.setdefault("retired_at", None)
        return data


class Overview(WireModel):
    """Issuers, verifiers, clients and keys with record counts; no secrets."""

    issuers: list[IssuerSummary]
    verifiers: list[VerifierSummary]
    clients: list[ClientSummary]
    keys: list[KeySummary]
    record_count: int
