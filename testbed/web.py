"""The tests' plain HTTP calls, sharing the app's one TLS trust.

`httpx.get(...)`, `httpx.post(...)` and `httpx.Client()` each build a new SSL context, reading
certifi's certificates again (about 25 ms of CPU): over the suite's thousands of calls that was
about a tenth of its CPU. These take the same arguments and share `app.api.trust.public_trust`.
A call that needs its own trust (a pinned certificate, `verify=False`) uses httpx directly.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpx

from app.api.trust import public_trust


def client(**options: Any) -> httpx.Client:
    return httpx.Client(verify=public_trust(), **options)


def request(method: str, url: str, **options: Any) -> httpx.Response:
    return httpx.request(method, url, verify=public_trust(), **options)


def get(url: str, **options: Any) -> httpx.Response:
    return request("GET", url, **options)


def post(url: str, **options: Any) -> httpx.Response:
    return request("POST", url, **options)


def pinned_client_context(cert_file: Path | str) -> ssl.SSLContext:
    """A test's client for a service on loopback: trust exactly that service's certificate (it is
    not issued for 127.0.0.1, so the name is not checked; the certificate is pinned)."""
    context = ssl.create_default_context(cafile=str(cert_file))
    context.check_hostname = False
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context
