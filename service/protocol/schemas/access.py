"""The token and pairing request bodies, as documented (PROTOCOL §7, §9).

Documentation models only, like `BatchRequest`: the token endpoint reads its parameters by the
rules of RFC 6749 (JSON or form encoding, unknown parameters ignored, errors named by OAuth's
error values), and pairing redemption is checked where its body is read
(`service.http.inputs.pairing_redemption`), both with their own messages. These models give the
OpenAPI document the shapes those checks accept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .common import ClosedModel


class TokenRequest(BaseModel):
    """PROTOCOL §7: JSON or form-encoded; unknown parameters are ignored. The client id and
    secret may come as HTTP Basic credentials instead (RFC 6749 §2.3.1), never in both places.
    `audience` is the base URL of the API the token is for (`servers` of this document)."""

    model_config = ConfigDict(extra="ignore")

    grant_type: Literal["client_credentials"]
    client_id: str = Field(min_length=1, max_length=256)
    client_secret: str = Field(min_length=1, max_length=256)
    audience: str = Field(min_length=1, max_length=2048)
    scope: Literal["service:issuer", "service:verifier", "service:admin"] | None = None


class PairingRedeemRequest(ClosedModel):
    """A phone's one-time pairing code (the fragment of its pairing link)."""

    pairing_code: str = Field(pattern=r"^[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$")
    device_name: str | None = Field(default=None, max_length=60)


PHONE_DAYS = 90
"""How long a paired phone's client signs in unless the pairing asks otherwise: the phone keeps
its secret in the browser, so a lost or sold phone must not stay a verifier for ever."""
MAX_PHONE_DAYS = 3650


class PairingRequest(ClosedModel):
    """An admin's pairing request (no body, or an empty object, asks for the defaults). `days`:
    how long the phone's client signs in after the phone uses the link (default 90)."""

    days: int | None = Field(default=None, ge=1, le=MAX_PHONE_DAYS)
