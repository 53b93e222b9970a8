"""Clients that issue (one payslip, a pay run, Admin) and must fail fast when nothing answers.

Issuing keeps a long deadline for a slow answer (a 1000-record pay run), but a service that does
not answer at all is reported within 5 s, as "refused" or "did not answer", naming the address
(app.api.errors.UNREACHABLE_WORDS), instead of after half a minute of retries (issue 27).
"""

from __future__ import annotations

from typing import Any

from app.api.client import ApiClient

ISSUE_CONNECT_TIMEOUT = 2.0
ISSUE_UNREACHABLE_AFTER = 4.0
"""Issuing (one payslip, a pay run's start, Admin) says "cannot be reached" within 5 s: a
connection gets 2 s and the whole call gives up after 4 s without any answer, while a service
that does answer keeps the full deadline for a slow pay run (issue 27)."""


def issuer_client(
    url: str, client_id: str, secret: str, *, deadline: float = 30.0, **options: Any
) -> ApiClient:
    """An issuer's (or admin's) client that reports an unreachable service within 5 s."""
    return ApiClient(
        options.pop("auth_url", None) or url,
        client_id,
        secret,
        issuer_url=url,
        verifier_url=url,
        deadline=deadline,
        connect_timeout=ISSUE_CONNECT_TIMEOUT,
        unreachable_after=ISSUE_UNREACHABLE_AFTER,
        **options,
    )
