"""The public certificate authorities an HTTPS client trusts, loaded once per process.

httpx builds a new SSL context for every client made with `verify=True`, reading certifi's
bundle (or SSL_CERT_FILE / SSL_CERT_DIR) again: about 25 ms of CPU each time. The app makes a
client for every API client, health probe and moved service address, so every one of them shares
this context instead (httpx's own advice for many clients). An office certificate pinned in the
settings is a context of its own and passes through unchanged.

The clients that share it speak HTTP/1.1 and present no client certificate: httpcore sets the
context's ALPN list to ["http/1.1"] at every connection, the same value each time. A client with
`http2=True` or a certificate of its own must make its own context.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def public_trust() -> ssl.SSLContext:
    """httpx's own default (the environment's SSL_CERT_FILE or SSL_CERT_DIR, else certifi)."""
    return httpx.create_ssl_context(verify=True, trust_env=True)


def trust(verify: ssl.SSLContext | bool) -> ssl.SSLContext | bool:
    """`verify` as httpx takes it, with True meaning the shared public trust."""
    return public_trust() if verify is True else verify
