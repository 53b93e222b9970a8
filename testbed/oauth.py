"""An access token the way every client gets one (spec: the client_credentials grant at
`/oauth/token`), for the tests and the benchmarks, so the grant's body is written once.

Imports only httpx, so benchmark scripts and subprocess helpers can use it too.
"""

from __future__ import annotations

from typing import Any

import httpx

from testbed import web


def token_body(client_id: str, secret: str, audience: str, **extra: str) -> dict[str, Any]:
    """The JSON body of a client_credentials grant (`extra`: `scope`, or a field a test adds)."""
    return {
        "grant_type": "client_credentials",
        "client_id": client_id,
        "client_secret": secret,
        "audience": audience,
        **extra,
    }


def fetch_token(
    url: str,
    client_id: str,
    secret: str,
    *,
    audience: str | None = None,
    http: httpx.Client | None = None,
    timeout: float = 30,
    **extra: str,
) -> str:
    """A token from the service at `url` (audience: `url` unless the service has another public
    URL). Anything but 200 fails with the service's answer in the message."""
    body = token_body(client_id, secret, audience or url, **extra)
    if http is None:
        reply = web.post(f"{url}/oauth/token", json=body, timeout=timeout)
    else:
        reply = http.post(f"{url}/oauth/token", json=body, timeout=timeout)
    if reply.status_code != 200:
        raise AssertionError(f"no token: {reply.status_code} {reply.text}")
    return str(reply.json()["access_token"])
