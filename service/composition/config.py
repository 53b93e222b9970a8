"""Service configuration: URLs, limits and where the data lives (PROTOCOL §6, §9).

Defaults are generous so a desk, a pay run or a benchmark never meets them by accident; they
exist to stop abuse, and each can be changed through the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from service.composition.settings import read_settings
from service.domain.tokens import Audiences

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class BodyLimits:
    token: int = 8 * KIB
    verify: int = 32 * KIB
    single: int = 64 * KIB
    batch: int = 10 * MIB
    admin: int = 8 * KIB


@dataclass(frozen=True, slots=True)
class RateLimits:
    """`limits` library strings ("100/second;3000/minute"); None disables that limit."""

    per_ip: str | None = "200/second;6000/minute"
    per_client: str | None = "200/second;6000/minute"
    token_per_ip: str | None = "20/second;300/minute"

    @classmethod
    def from_env(cls) -> RateLimits:
        """PAYSLIP_RATE_LIMIT_IP / _CLIENT / _TOKEN_IP (service.composition.settings), read now."""
        settings = read_settings()
        return cls(
            per_ip=settings.rate_limit_ip,
            per_client=settings.rate_limit_client,
            token_per_ip=settings.rate_limit_token_ip,
        )


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    master_key: bytes
    public_url: str
    issuer_url: str
    verifier_url: str
    auth_url: str
    environment: str = "production"
    body_limits: BodyLimits = field(default_factory=BodyLimits)
    rate_limits: RateLimits = field(default_factory=RateLimits)
    max_concurrent_batches: int = 4
    token_ttl: int = 900
    instance_id: str = "local"
    """Names the instance whose workers share the concurrent-batch limit (one `serve`)."""
    admin_network: bool = False
    """Whether the admin API answers callers beyond this computer (`serve --admin-network`);
    by default it answers on loopback only (issue 37)."""

    @property
    def audiences(self) -> Audiences:
        return Audiences(self.issuer_url, self.verifier_url, self.auth_url)

    @property
    def scan_base(self) -> str:
        """The public verifier origin that scan URLs point at (PROTOCOL §3): scheme, host and
        port only. A verifier URL with a path (`https://h/verifier`) would otherwise give badges
        whose `/v/` is not at the root, which no reader, this service's included, accepts."""
        parts = urlsplit(self.verifier_url)
        if parts.scheme and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}"
        return self.verifier_url.rstrip("/")


def default_data_dir() -> Path:
    override = read_settings().data_dir
    if override:
        return override
    return Path(platformdirs.user_data_dir("payslip-verify", appauthor=False))
