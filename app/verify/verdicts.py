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

The verdict of every wire error code is the protocol's (``ErrorCode.verdict`` in
:mod:`service.protocol.errors`); this module adds only the words a desk worker reads, and the
app's own outcomes (VERIFIED, REVOKED, CONFLICTING_CODES and the API client's local codes).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.api.errors import ClientCode
from service.protocol.errors import ErrorCode
from service.protocol.vocabulary import Verdict

__all__ = [
    "EXIT_STATUS",
    "HEADLINES",
    "INPUT_PROBLEMS",
    "MEANINGS",
    "NOT_A_PAYSLIP_CODE",
    "RECORDABLE",
    "UNKNOWN",
    "AppOutcome",
    "InputProblem",
    "Meaning",
    "meaning_of",
    "plain_words",
    "standing",
]

HEADLINES: dict[Verdict, str] = {
    Verdict.VERIFIED: "VERIFIED",
    Verdict.NOT_VERIFIED: "NOT VERIFIED",
    Verdict.CANNOT_VERIFY: "CANNOT VERIFY",
}
"""The headline a desk worker reads for each verdict (the GUI, the kiosk, `app verify`)."""
EXIT_STATUS: dict[Verdict, int] = {
    Verdict.VERIFIED: 0,
    Verdict.NOT_VERIFIED: 1,
    Verdict.CANNOT_VERIFY: 2,
}
"""``python -m app verify`` exit status per verdict; bad input (no verdict) also exits 2."""
RECORDABLE = frozenset({Verdict.VERIFIED, Verdict.NOT_VERIFIED})
"""The verdicts a receipt (and so a verification record) can hold: the ones about the document.
CANNOT VERIFY says nothing about it, so there is nothing to prove."""

NOT_A_PAYSLIP_CODE = "That is not a payslip code: scan the QR badge on the payslip"


class AppOutcome(StrEnum):
    """The app's own outcomes of a check, beside the wire codes and the client's codes."""

    VERIFIED = "VERIFIED"
    REVOKED = "REVOKED"
    DOCUMENT_ALTERED = "DOCUMENT_ALTERED"
    """A genuine code on a page whose printed figures differ (PROTOCOL §13)."""
    CONFLICTING_CODES = "CONFLICTING_CODES"
    """A PDF whose metadata and printed code name different records (PROTOCOL §3)."""


class InputProblem(StrEnum):
    """Why an input got no verdict at all (nothing was sent for it)."""

    NOT_A_PAYSLIP_CODE = "NOT_A_PAYSLIP_CODE"
    NO_CODE_FOUND = "NO_CODE_FOUND"
    INPUT_UNREADABLE = "INPUT_UNREADABLE"


def standing(verified: bool) -> AppOutcome:
    """The one answer to "verified or revoked" for a result the service gave (a record it knows:
    active, or revoked by its payroll provider)."""
    return AppOutcome.VERIFIED if verified else AppOutcome.REVOKED


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


_WORDS: dict[ErrorCode, tuple[str, str]] = {
    # -- not verified: the protocol says these codes are about the document
    ErrorCode.DECRYPTION_FAILED: (
        "This code has been altered, or was not issued by a registered payroll provider.",
        _REJECT,
    ),
    ErrorCode.SERVICE_REFERENCE_NOT_FOUND: (
        "No payslip is registered under this code. It may be forged, or from another "
        "verification service.",
        _REJECT,
    ),
    ErrorCode.KEY_VERSION_UNAVAILABLE: (
        "The payroll provider has withdrawn the key of this payslip, so it can no longer be "
        "checked. Ask the employee for a newer payslip.",
        _REJECT,
    ),
    ErrorCode.VALIDATION_FAILED: (
        "The service found this payslip code damaged or malformed.",
        _REJECT,
    ),
    # -- cannot verify: the check itself failed
    ErrorCode.SERVICE_UNAVAILABLE: (
        "The verification service is temporarily unavailable.",
        _RETRY,
    ),
    ErrorCode.RATE_LIMITED: ("The verification service is busy.", _RETRY),
    ErrorCode.INTERNAL_ERROR: ("The verification service had an internal problem.", _SUPPORT),
    ErrorCode.UNAUTHORIZED: ("The service refused this desk's credentials.", _OPERATOR),
    ErrorCode.FORBIDDEN: ("This desk is not allowed to verify payslips.", _OPERATOR),
    ErrorCode.NOT_FOUND: (
        "The service address in the settings does not point at a verification service.",
        _OPERATOR,
    ),
    ErrorCode.METHOD_NOT_ALLOWED: (
        "The service address in the settings does not point at a verification service.",
        _OPERATOR,
    ),
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: (
        "This app and the service disagree on the protocol.",
        "Ask an operator to update the app.",
    ),
    ErrorCode.PAYLOAD_TOO_LARGE: ("The service refused this code as too large.", _SUPPORT),
    ErrorCode.CONFLICT: (
        "The service reported a conflict with an existing record.",
        _SUPPORT,
    ),
    ErrorCode.IV_REUSED: (
        "The service reported a conflict with an existing record.",
        _SUPPORT,
    ),
}
"""What each wire error code means at the desk, in plain words. The verdict is not here: it is
the protocol's, so the service's table and this one cannot disagree."""

_APP_OUTCOMES: dict[AppOutcome | ClientCode, Meaning] = {
    # -- the document is genuine and current
    AppOutcome.VERIFIED: Meaning(
        Verdict.VERIFIED,
        "This payslip matches the record its payroll provider registered.",
        _ACCEPT,
    ),
    # -- the document is not (or no longer) good
    AppOutcome.REVOKED: Meaning(
        Verdict.NOT_VERIFIED,
        "The payroll provider has revoked this payslip. Ask the employee for the current one.",
        _REJECT,
    ),
    AppOutcome.DOCUMENT_ALTERED: Meaning(
        Verdict.NOT_VERIFIED,
        "The printed figures differ from the registered payslip: this copy was altered.",
        _REJECT,
    ),
    AppOutcome.CONFLICTING_CODES: Meaning(
        Verdict.NOT_VERIFIED,
        "The PDF's hidden payslip data and its printed code name different payslips: the "
        "document has been changed.",
        _REJECT,
    ),
    # -- the API client's own codes: no usable answer, nothing is known about the document
    ClientCode.SERVICE_UNREACHABLE: Meaning(
        Verdict.CANNOT_VERIFY,
        "The verification service could not be reached.",
        "Try again. If it keeps happening, check the network.",
    ),
    ClientCode.INVALID_RESPONSE: Meaning(
        Verdict.CANNOT_VERIFY, "The service sent an answer this app does not understand.", _SUPPORT
    ),
    ClientCode.HTTP_ERROR: Meaning(
        Verdict.CANNOT_VERIFY, "The service refused the request in an unexpected way.", _OPERATOR
    ),
    ClientCode.API_ERROR: Meaning(
        Verdict.CANNOT_VERIFY, "Something went wrong while checking this payslip.", _SUPPORT
    ),
}

if set(_APP_OUTCOMES) != {*AppOutcome, *ClientCode}:  # checked at import, like the wire words
    raise RuntimeError("every app outcome and client code needs its meaning at the desk")

MEANINGS: dict[str, Meaning] = {
    **{code: meaning for code, meaning in _APP_OUTCOMES.items()},
    **{code: Meaning(code.verdict, *_WORDS[code]) for code in ErrorCode},
}
"""Every outcome code (the service's error codes of PROTOCOL §6, the API client's own codes, and
the app's VERIFIED / REVOKED / CONFLICTING_CODES) and what it means at the desk. Building it
fails at import if a wire code has no words."""

UNKNOWN = MEANINGS[ClientCode.API_ERROR]
"""A code this app does not know yet (a newer service): nothing is known about the payslip."""

INPUT_PROBLEMS: dict[str, str] = {
    InputProblem.NOT_A_PAYSLIP_CODE: NOT_A_PAYSLIP_CODE,
    InputProblem.NO_CODE_FOUND: "No payslip code was found. Hold the QR badge flat and well lit, "
    "or load the PDF.",
    InputProblem.INPUT_UNREADABLE: "This file could not be read.",
}
"""Inputs that get no verdict at all: nothing was sent to the service."""
if set(INPUT_PROBLEMS) != set(InputProblem):
    raise RuntimeError("every input problem needs its words")


def meaning_of(code: str | None) -> Meaning:
    """The meaning of an outcome code; unknown codes cannot verify (never "not verified")."""
    return MEANINGS.get(code or "", UNKNOWN)


def plain_words(code: str | None) -> str:
    """The plain words for any code, verdict or input problem."""
    if code in INPUT_PROBLEMS:
        return INPUT_PROBLEMS[code]
    return meaning_of(code).words
