"""Three verdicts, one meaning each, and the one table that maps every outcome code to them.

A front-desk worker must decide in two seconds whether to accept a payslip, so every way a check
can end is reduced to one of three verdicts, each with a single instruction:

* VERIFIED: accept. The code decrypted and matches an active registered record.
* NOT VERIFIED: do not accept. Something is wrong with the *document* (revoked, altered or
  forged, unknown reference, a PDF whose metadata and printed code disagree, a withdrawn key).
* CANNOT VERIFY: nothing is known about the document; the check itself failed (service
  unreachable or slow, busy, broken, or this desk is set up wrongly). Try again.

Text that is not a payslip code at all (a typo, a file path, another QR code) gets no verdict:
it is refused locally and never sent, so a typing mistake is never presented as a forgery.

The GUI, the kiosk and ``python -m app verify`` (exit status 0/1/2 and its JSON) all read this
table; the README shows it. Qt-free on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["verified", "not_verified", "cannot_verify"]

HEADLINES: dict[Verdict, str] = {
    "verified": "VERIFIED",
    "not_verified": "NOT VERIFIED",
    "cannot_verify": "CANNOT VERIFY",
}
EXIT_STATUS: dict[Verdict, int] = {"verified": 0, "not_verified": 1, "cannot_verify": 2}
"""``python -m app verify`` exit status per verdict; bad input (no verdict) also exits 2."""

NOT_A_PAYSLIP_CODE = "That is not a payslip code: scan the QR badge on the payslip"

_ACCEPT = "Accept this payslip."
_REJECT = "Do not accept this payslip."
_RETRY = "Try again in a moment."
_OPERATOR = "Ask an operator to check this desk's settings."
_SUPPORT = "Try again. If it happens again, contact support."


@dataclass(frozen=True)
class Meaning:
    """What one outcome code means to the person at the desk."""

    verdict: Verdict
    words: str
    """Why, in plain words (no codes)."""
    instruction: str
    """The one thing to do now."""

    @property
    def headline(self) -> str:
        return HEADLINES[self.verdict]


MEANINGS: dict[str, Meaning] = {
    # -- the document is genuine and current
    "VERIFIED": Meaning(
        "verified", "This payslip matches the record its payroll provider registered.", _ACCEPT
    ),
    # -- the document is not (or no longer) good
    "REVOKED": Meaning(
        "not_verified",
        "The payroll provider has revoked this payslip. Ask the employee for the current one.",
        _REJECT,
    ),
    "DECRYPTION_FAILED": Meaning(
        "not_verified",
        "This code has been altered, or was not issued by a registered payroll provider.",
        _REJECT,
    ),
    "SERVICE_REFERENCE_NOT_FOUND": Meaning(
        "not_verified",
        "No payslip is registered under this code. It may be forged, or from another "
        "verification service.",
        _REJECT,
    ),
    "KEY_VERSION_UNAVAILABLE": Meaning(
        "not_verified",
        "The payroll provider has withdrawn the key of this payslip, so it can no longer be "
        "checked. Ask the employee for a newer payslip.",
        _REJECT,
    ),
    "VALIDATION_FAILED": Meaning(
        "not_verified", "The service found this payslip code damaged or malformed.", _REJECT
    ),
    "CONFLICTING_CODES": Meaning(
        "not_verified",
        "The PDF's hidden payslip data and its printed code name different payslips: the "
        "document has been changed.",
        _REJECT,
    ),
    # -- the check itself failed: nothing is known about the document
    "SERVICE_UNREACHABLE": Meaning(
        "cannot_verify",
        "The verification service did not answer in time.",
        "Try again. If it keeps happening, check the network.",
    ),
    "SERVICE_UNAVAILABLE": Meaning(
        "cannot_verify", "The verification service is temporarily unavailable.", _RETRY
    ),
    "RATE_LIMITED": Meaning("cannot_verify", "The verification service is busy.", _RETRY),
    "INTERNAL_ERROR": Meaning(
        "cannot_verify", "The verification service had an internal problem.", _SUPPORT
    ),
    "INVALID_RESPONSE": Meaning(
        "cannot_verify", "The service sent an answer this app does not understand.", _SUPPORT
    ),
    "UNAUTHORIZED": Meaning(
        "cannot_verify", "The service refused this desk's credentials.", _OPERATOR
    ),
    "FORBIDDEN": Meaning(
        "cannot_verify", "This desk is not allowed to verify payslips.", _OPERATOR
    ),
    "NOT_FOUND": Meaning(
        "cannot_verify",
        "The service address in the settings does not point at a verification service.",
        _OPERATOR,
    ),
    "METHOD_NOT_ALLOWED": Meaning(
        "cannot_verify",
        "The service address in the settings does not point at a verification service.",
        _OPERATOR,
    ),
    "HTTP_ERROR": Meaning(
        "cannot_verify", "The service refused the request in an unexpected way.", _OPERATOR
    ),
    "UNSUPPORTED_MEDIA_TYPE": Meaning(
        "cannot_verify",
        "This app and the service disagree on the protocol.",
        "Ask an operator to update the app.",
    ),
    "PAYLOAD_TOO_LARGE": Meaning(
        "cannot_verify", "The service refused this code as too large.", _SUPPORT
    ),
    "CONFLICT": Meaning(
        "cannot_verify", "The service reported a conflict with an existing record.", _SUPPORT
    ),
    "IV_REUSED": Meaning(
        "cannot_verify", "The service reported a conflict with an existing record.", _SUPPORT
    ),
    "API_ERROR": Meaning(
        "cannot_verify", "Something went wrong while checking this payslip.", _SUPPORT
    ),
}
"""Every outcome code (the service's error codes of PROTOCOL §6, the API client's own codes, and
the app's VERIFIED / REVOKED / CONFLICTING_CODES) and what it means at the desk."""

UNKNOWN = MEANINGS["API_ERROR"]
"""A code this app does not know yet (a newer service): nothing is known about the payslip."""

INPUT_PROBLEMS: dict[str, str] = {
    "NOT_A_PAYSLIP_CODE": NOT_A_PAYSLIP_CODE,
    "NO_CODE_FOUND": "No payslip code was found. Hold the QR badge flat and well lit, "
    "or load the PDF.",
    "INPUT_UNREADABLE": "This file could not be read.",
}
"""Inputs that get no verdict at all: nothing was sent to the service."""


def meaning_of(code: str | None) -> Meaning:
    """The meaning of an outcome code; unknown codes cannot verify (never "not verified")."""
    return MEANINGS.get(code or "", UNKNOWN)


def plain_words(code: str | None) -> str:
    """The plain words for any code, verdict or input problem."""
    if code in INPUT_PROBLEMS:
        return INPUT_PROBLEMS[code]
    return meaning_of(code).words
