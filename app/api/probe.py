"""Does a saved address answer? One short health request, told in words that name the address.

A saved issuer or desk address that has gone stale (a service moved, a laptop changed network)
must be reported when the screen opens, not after a payslip waited half a minute. The probe
sends no credentials: `GET /healthz` only.
"""

from __future__ import annotations

import ssl

import httpx

from app.api.errors import UNREACHABLE_WORDS
from app.api.exchange import connect_kind, origin
from app.api.trust import trust

PROBE_CONNECT = 2.0
PROBE_TIMEOUT = 4.0


def probe(url: str, verify: ssl.SSLContext | bool = True) -> str | None:
    """None when `url` answers its health check; else one sentence naming the address."""
    address = origin(url.rstrip("/"))
    kind = "no_answer"
    try:
        with httpx.Client(verify=trust(verify), follow_redirects=False, trust_env=True) as http:
            resp = http.get(
                url.rstrip("/") + "/healthz",
                timeout=httpx.Timeout(PROBE_TIMEOUT, connect=PROBE_CONNECT),
            )
    except httpx.ConnectError as exc:
        kind = connect_kind(exc)
    except httpx.TimeoutException:
        kind = "no_answer"
    except httpx.HTTPError:
        kind = "network"
    except ValueError:  # not a URL httpx can use at all
        return f"The saved address {url} is not a web address."
    else:
        if resp.status_code == 200:
            return None
        return (
            f"Something answers at {address}, but it is not a payslip verification service "
            f"(HTTP {resp.status_code}). Check the address."
        )
    return UNREACHABLE_WORDS[kind].format(address=address)
