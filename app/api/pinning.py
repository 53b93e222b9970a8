"""A desk that trusts exactly one certificate: the office service's, named by its fingerprint.

On an office network the service usually has a certificate no public authority signed (the app
makes one itself the first time it serves the network, app.shell.office_tls). A desk therefore
cannot check it the usual way, and must not skip the check either: whoever answers at the
office address would then receive the desk's secret. So the desk is given the certificate's
SHA-256 fingerprint with its address and sign-in, and its connections accept that certificate
and no other. The check runs inside the TLS handshake (`SSLContext.sslsocket_class`), before
`wrap_socket` returns, so not one byte of a request, let alone a secret, is sent to a server
whose certificate is another; the connection fails with :class:`FingerprintMismatch` instead.

The fingerprint is the SHA-256 of the certificate's DER bytes, the value browsers' certificate
viewers and ``openssl x509 -noout -fingerprint -sha256`` show; it is written for people in
groups of four hex digits (:func:`fingerprint_words`) and read back in any of those spellings.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import ssl
from typing import Any

__all__ = [
    "FingerprintMismatch",
    "fingerprint_of_der",
    "fingerprint_words",
    "normalize_fingerprint",
    "pinned_context",
    "pinned_options",
]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class FingerprintMismatch(ssl.SSLCertVerificationError):
    """The server showed a certificate other than the pinned one."""


def fingerprint_of_der(der: bytes) -> str:
    """The SHA-256 fingerprint of a DER certificate, 64 lowercase hex digits."""
    return hashlib.sha256(der).hexdigest()


def fingerprint_words(fingerprint: str) -> str:
    """`3F2A 9C41 …`: sixteen groups of four, easy to read aloud and compare by eye."""
    value = fingerprint.upper()
    return " ".join(value[i : i + 4] for i in range(0, len(value), 4))


def normalize_fingerprint(text: str) -> str | None:
    """The 64 hex digits in `text` (colons, spaces, a `SHA256:` or `sha256 Fingerprint=` prefix
    and case ignored), or None when it is not a SHA-256 fingerprint."""
    cleaned = text.strip().lower()
    for prefix in ("sha256 fingerprint=", "sha-256", "sha256:", "sha256"):
        if cleaned.startswith(prefix):
            cleaned = cleaned[len(prefix) :]
    digits = re.sub(r"[\s:\-]", "", cleaned)
    return digits if _HEX64.match(digits) else None


def pinned_context(fingerprint: str) -> ssl.SSLContext:
    """A TLS 1.2+ client context that completes a handshake only with the certificate whose
    SHA-256 fingerprint is `fingerprint` (any spelling `normalize_fingerprint` reads). The name
    and the issuer are not checked: the pin is stronger than both."""
    found = normalize_fingerprint(fingerprint)
    if found is None:
        raise ValueError("not a SHA-256 certificate fingerprint (64 hex digits)")
    pin: str = found
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # replaced by the pin, checked below before any data

    class PinnedSocket(ssl.SSLSocket):
        def do_handshake(self, *args: Any, **kwargs: Any) -> None:
            super().do_handshake(*args, **kwargs)
            der = self.getpeercert(binary_form=True)
            seen = fingerprint_of_der(der) if der else ""
            if not hmac.compare_digest(seen, pin):
                self.close()
                raise FingerprintMismatch(
                    "the server's certificate is not the one this desk was given (its SHA-256 "
                    "fingerprint differs)"
                )

    context.sslsocket_class = PinnedSocket
    return context


def pinned_options(fingerprint: str) -> dict[str, Any]:
    """ApiClient options for a service on another computer: its certificate pinned by
    `fingerprint` (a desk's, a payroll computer's); the public authorities' check without one."""
    return {"verify": pinned_context(fingerprint)} if fingerprint else {}
