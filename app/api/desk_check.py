"""Before a desk says "connected": does its address answer, and do its id and secret sign in?

"Connect this desk" used to save whatever was typed and show a green light; a wrong secret then
surfaced as CANNOT VERIFY in front of the first customer. Here the address is probed, a token is
fetched with the given credentials, and a failure names the part that is wrong: the address, the
client id or the secret. The service answers a wrong id and a wrong secret alike (it does not
tell strangers which ids exist), so the words say which to check first.
"""

from __future__ import annotations

import ssl

from app.api.client import SCOPE_VERIFIER, ApiClient
from app.api.errors import (
    ApiError,
    EndpointNotFound,
    Forbidden,
    ServiceUnreachable,
    Unauthorized,
    unreachable_words,
)
from app.api.pinning import normalize_fingerprint, pinned_context
from app.api.probe import probe
from service.hosting.network_address import is_loopback_url

DESK_ID_PREFIX = "ver_"


def desk_problem(
    url: str, client_id: str, secret: str, timeout: float = 4.0, fingerprint: str = ""
) -> str | None:
    """None when the desk can sign in at `url`; else one sentence naming the part to fix.
    `fingerprint`: the office certificate's, when given: only that certificate is spoken to
    (app.api.pinning), so a secret never reaches another."""
    if url.startswith("http://") and not is_loopback_url(url):
        return (
            "Service address: with http:// this desk's secret and every verdict would cross the "
            "network in clear. Use the https:// address from Admin → Add front desk (with its "
            "certificate fingerprint)."
        )
    verify: ssl.SSLContext | bool = True
    if fingerprint:
        if normalize_fingerprint(fingerprint) is None:
            return (
                "Certificate fingerprint: it is 64 hex digits (0-9, A-F). Copy it again from "
                "Admin → Add front desk, or leave it empty for a service with a public certificate."
            )
        verify = pinned_context(fingerprint)
    problem = probe(url, verify)
    if problem is not None:
        return f"Service address: {problem}"
    if not client_id.startswith(DESK_ID_PREFIX):
        return (
            f"Desk client id: “{client_id}” is not a front desk's id (those start with "
            f"{DESK_ID_PREFIX}). Copy it again from Admin → Front desks."
        )
    with ApiClient(
        url, client_id, secret, verifier_url=url, timeout=timeout, deadline=timeout, verify=verify
    ) as client:
        try:
            client.check_sign_in(SCOPE_VERIFIER)
        except Unauthorized:
            return (
                "Desk secret: the service does not accept this secret for this desk client id. "
                "Copy the secret again in full; if it is right, check the client id (the desk "
                "may have been disabled in Admin)."
            )
        except Forbidden as exc:
            if "audience" in exc.message:
                return (
                    f"Service address: {url} is not the address this service was set up with. "
                    "Use the office address shown on its Service screen."
                )
            return "Desk client id: this client may not verify payslips (it is not a front desk)."
        except EndpointNotFound:
            return f"Service address: something answers at {url}, but not this service."
        except ServiceUnreachable as exc:
            return f"Service address: {unreachable_words(exc) or 'it did not answer.'}"
        except ApiError as exc:
            return f"The service refused the sign-in ({exc.code}). Try again, or ask support."
    return None
