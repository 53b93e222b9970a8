"""`python -m service admin pair-verifier --client-id ID [--public-url URL] [--days N]`.

Prints the pairing as one JSON object (PROTOCOL §9) and, when stderr is a terminal, the QR code
to scan with the phone. The link's fragment holds a one-time secret that expires in minutes
(service.domain.pairing); nothing else is shown or kept.
"""

from __future__ import annotations

import sys
from typing import Any

import segno

from service.composition.settings import read_settings
from service.domain.pairing import Pairings
from service.hosting.network_address import loopback_warning

PUBLIC_URL_ENV = "PAYSLIP_PUBLIC_URL"


def pair_verifier(
    pairings: Pairings, client_id: str, public_url: str | None, days: int | None = None
) -> dict[str, Any]:
    """`days`: how long the phone's client signs in (the domain's default and range)."""
    base = public_url or read_settings().public_url
    offer = pairings.create(client_id, base, days)
    if base is None:
        print(
            "note: the link uses the default address; pass --public-url (the address phones "
            f"reach this service at) or set {PUBLIC_URL_ENV}",
            file=sys.stderr,
        )
    warning = loopback_warning(offer.pair_url, "this pairing link")
    if warning:
        print(warning, file=sys.stderr)
    if sys.stderr.isatty():
        segno.make(offer.pair_url, error="m").terminal(out=sys.stderr, compact=True)
        print(f"Scan within {offer.expires_in // 60} minutes; it works once.", file=sys.stderr)
    return offer.wire()
