"""Checking a verification receipt (PROTOCOL §11) and saying what it proves, in words.

A receipt is a compact JWS signed by the verification service. It is checked with the service's
published keys (a JWKS: a saved file, or fetched from the service) and a standard JOSE library
(PyJWT): never by trusting the receipt's own `iss`, since anyone can write any URL there.

Three outcomes, as `python -m app receipt check` exits: genuine (0), altered or not a receipt
(1: the signature fails, the header is not a receipt's, or the claims are not a receipt's), and
cannot check (2: no published receipt key has the receipt's `kid`, the key was revoked after a
leak, or the keys cannot be had). Qt-free: the CLI, the verify screen and the record PDF all use
it.

Only a receipt key (`kid` starting `receipt-`) vouches for a receipt: the JWKS also lists the
access-token keys, and a token key (leaked, or dropped as suspect) must never make a receipt
genuine. A revoked receipt key is refused whatever the receipt's `iat`: whoever holds the leaked
key writes any date they like, so a genuine receipt from before the leak and a forgery look the
same (PROTOCOL §11).
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx
import jwt
from pydantic import ValidationError

from app.api.trust import public_trust
from app.inputs.classify import JWS_FORM, looks_like_receipt, receipts_in
from app.inputs.reading import InputReading
from app.verify.presentation import long_date, money
from app.verify.verdicts import HEADLINES, meaning_of, standing
from service.protocol.schemas import RECEIPT_TYPE, ReceiptClaims
from service.protocol.vocabulary import RecordStatus, Verdict

JWKS_PATH = "/.well-known/jwks.json"
RECEIPT_KID_PREFIX = "receipt-"
"""Receipt keys' kids (service.domain.receipt_keys.KID_PREFIX: the wire word, not imported so
that the app's allow-list of service imports stays what it is)."""
REVOKED_KEY = (
    "The key that signed this receipt was revoked after a leak; a genuine receipt from before "
    "the leak cannot be told from a forgery: verify the payslip again."
)

State = Literal["genuine", "altered", "cannot_check"]
EXIT_STATUS: dict[State, int] = {"genuine": 0, "altered": 1, "cannot_check": 2}


class ReceiptError(Exception):
    """The receipt or the keys cannot be had; the message is one plain line."""


def receipt_in(payloads: list[str]) -> str | None:
    """The first receipt among the texts one input yielded (a record's QR, a .jws file)."""
    return next((p.strip() for p in payloads if looks_like_receipt(p)), None)


def receipts_on(reading: InputReading | None) -> list[str]:
    """Every receipt one read input holds, its PDF's pages too (an applicant's record carries
    one per payslip, and a reading keeps only the first text of a page)."""
    if reading is None:
        return []
    pages = reading.pdf.page_payloads if reading.pdf is not None else []
    return receipts_in([*reading.payloads, *pages])


@dataclass(frozen=True)
class ReceiptCheck:
    state: State
    reason: str
    """Why, in one plain sentence."""
    claims: ReceiptClaims | None = None
    """The claims, only when the receipt is genuine."""

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.state]


def check_receipt(receipt: str, jwks: dict[str, Any]) -> ReceiptCheck:
    """Check `receipt` against the published keys `jwks` (a JWKS object)."""
    text = receipt.strip()
    if not JWS_FORM.match(text):
        return ReceiptCheck("altered", "This is not a verification receipt.")
    try:
        header = jwt.get_unverified_header(text)
    except jwt.PyJWTError:
        return ReceiptCheck("altered", "This receipt is damaged: its header cannot be read.")
    if header.get("typ") != RECEIPT_TYPE or header.get("alg") != "EdDSA":
        return ReceiptCheck("altered", "This is a signed token, but not a verification receipt.")
    kid = header.get("kid")
    entry = _entry(jwks, kid)
    if entry is not None and "revoked_at" in entry:
        return ReceiptCheck("cannot_check", REVOKED_KEY)
    key = _key(entry)
    if key is None:
        return ReceiptCheck(
            "cannot_check",
            "None of the keys given was used to sign this receipt: check it against the keys "
            "of the service that made it.",
        )
    try:
        claims = jwt.decode(
            text,
            key,
            algorithms=["EdDSA"],
            options={"require": ["iss", "iat", "jti"], "verify_iat": False},
        )
    except jwt.InvalidSignatureError:
        return ReceiptCheck(
            "altered", "The signature does not match: this receipt was altered or forged."
        )
    except jwt.PyJWTError:
        return ReceiptCheck("altered", "This receipt is damaged or incomplete.")
    try:
        parsed = ReceiptClaims.model_validate(claims)
    except ValidationError:
        return ReceiptCheck("altered", "This receipt's contents are not a receipt's.")
    return ReceiptCheck("genuine", "The verification service signed this receipt.", parsed)


def _entry(jwks: dict[str, Any], kid: object) -> dict[str, Any] | None:
    """The published receipt key named `kid`; None for any other (a token key included)."""
    if not isinstance(kid, str) or not kid.startswith(RECEIPT_KID_PREFIX):
        return None
    for entry in jwks.get("keys", []) if isinstance(jwks, dict) else []:
        if isinstance(entry, dict) and entry.get("kid") == kid:
            return entry
    return None


def _key(entry: dict[str, Any] | None) -> Any:
    if entry is None:
        return None
    try:
        return jwt.PyJWK.from_dict(entry, algorithm="EdDSA").key
    except jwt.PyJWTError:
        return None


def load_jwks(source: str, verify: ssl.SSLContext | None = None) -> dict[str, Any]:
    """A JWKS from a file, a JWKS URL, or a service's base URL (its well-known JWKS). `verify`:
    the trust this desk gives that service (an office certificate pinned by its fingerprint,
    app.api.pinning), as for every other call to it; by default the public authorities'."""
    if source.startswith(("http://", "https://")):
        url = source if source.rstrip("/").endswith(".json") else source.rstrip("/") + JWKS_PATH
        trust = verify or public_trust()
        try:
            reply = httpx.get(url, timeout=10, follow_redirects=True, verify=trust)
        except httpx.HTTPError:
            raise ReceiptError(f"the service's keys could not be fetched from {url}") from None
        if reply.status_code != 200:
            raise ReceiptError(f"{url} answered {reply.status_code}, not the service's keys")
        text = reply.text
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise ReceiptError(f"{Path(source).name} cannot be read") from None
    try:
        jwks = json.loads(text)
    except ValueError:
        raise ReceiptError("the keys given are not a JWKS (JSON)") from None
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise ReceiptError("the keys given are not a JWKS (no list of keys)")
    return jwks


# --- in words ---------------------------------------------------------------------------------


def verdict_words(claims: ReceiptClaims) -> tuple[str, str]:
    """The verdict the receipt records (VERIFIED / NOT VERIFIED) and why, in plain words."""
    known = claims.verified or claims.status == RecordStatus.REVOKED  # a record it knows
    meaning = meaning_of(standing(claims.verified) if known else claims.status)
    verdict = Verdict.VERIFIED if claims.verified else Verdict.NOT_VERIFIED
    return HEADLINES[verdict], meaning.words


def made_at(claims: ReceiptClaims) -> str:
    """When the check was made, in this computer's time zone."""
    moment = datetime.fromtimestamp(claims.iat, UTC).astimezone()
    return moment.strftime("%-d %b %Y %H:%M %Z").strip()


def claim_lines(claims: ReceiptClaims) -> list[tuple[str, str]]:
    """Every claim a reader needs, labelled, in reading order (no codes for people)."""
    headline, words = verdict_words(claims)
    lines = [("Verdict", f"{headline}: {words}"), ("Checked on", made_at(claims))]
    lines.append(("Verifier client", claims.verifier))
    if claims.issuer is not None:
        lines.append(("Issuer", claims.issuer.name or claims.issuer.id))
    if claims.sub:
        lines.append(("Reference", claims.sub))
    payslip = claims.payslip
    if payslip is not None:
        if payslip.period_end:
            start = payslip.period_start
            end = long_date(payslip.period_end)
            lines.append(("Pay period", f"{long_date(start)} – {end}" if start else end))
        if payslip.payment_date:
            lines.append(("Payment date", long_date(payslip.payment_date)))
        currency = payslip.currency or ""
        for label, value in (("Gross pay", payslip.gross), ("Net pay", payslip.net)):
            if value is not None:
                lines.append((label, money(value, currency, cents=isinstance(value, int))))
    if claims.employee_name:
        lines.append(("Employee", claims.employee_name))
    lines.append(("Service", claims.iss))
    if claims.env != "production":
        lines.append(("Environment", claims.env))
    lines.append(("Receipt id", claims.jti))
    return lines
