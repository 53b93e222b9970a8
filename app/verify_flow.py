"""From an input reading to a verdict: the one verification pipeline the GUI and the CLI share.

A PDF whose metadata and printed QR name different records is verified twice and reported as
not verified (PROTOCOL §3), whatever each half says on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from app.api_errors import ApiError
from app.inputs.reading import InputReading
from app.presentation import error_message

State = Literal["verified", "not_verified", "error"]

_NOT_GENUINE = frozenset(
    {
        "DECRYPTION_FAILED",
        "SERVICE_REFERENCE_NOT_FOUND",
        "KEY_VERSION_UNAVAILABLE",
        "VALIDATION_FAILED",
    }
)
"""Codes that say something about the document itself, not about the desk or the network."""


class Verifier(Protocol):
    def verify_payload(self, barcode: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Attempt:
    """One payload sent to the service: its result, or the error it got."""

    result: dict[str, Any] | None = None
    code: str | None = None
    request_id: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Outcome:
    state: State
    headline: str
    explanation: str
    attempts: list[Attempt] = field(default_factory=list)
    disagreement: bool = False

    @property
    def result(self) -> dict[str, Any] | None:
        """The result to show: the first one the service returned."""
        return next((a.result for a in self.attempts if a.result is not None), None)

    @property
    def code(self) -> str | None:
        return next((a.code for a in self.attempts if a.code), None)

    @property
    def request_id(self) -> str | None:
        return next((a.request_id for a in self.attempts if a.request_id), None)

    def as_json(self) -> dict[str, Any]:
        """The CLI's --json output: the result itself, or every result for a disagreeing PDF."""
        if self.disagreement:
            return {
                "verified": False,
                "reason": "CONFLICTING_CODES",
                "results": [a.result if a.result else {"code": a.code} for a in self.attempts],
            }
        if self.result is not None:
            return self.result
        return {"code": self.code, "request_id": self.request_id}


def attempt(client: Verifier, payload: str) -> Attempt:
    try:
        return Attempt(result=client.verify_payload(payload))
    except ApiError as exc:
        return Attempt(code=exc.code, request_id=exc.request_id, detail=exc.message)


def verify_payloads(client: Verifier, payloads: list[str], disagreement: bool = False) -> Outcome:
    if not payloads:
        return Outcome("error", "NO CODE FOUND", error_message("NO_CODE_FOUND"))
    attempts = [attempt(client, p) for p in payloads]
    if disagreement:
        return Outcome(
            "not_verified",
            "NOT VERIFIED",
            error_message("CONFLICTING_CODES"),
            attempts,
            disagreement=True,
        )
    first = attempts[0]
    if first.result is None:
        if first.code in _NOT_GENUINE:
            return Outcome("not_verified", "NOT VERIFIED", error_message(first.code), attempts)
        return Outcome("error", "CANNOT VERIFY", error_message(first.code), attempts)
    if first.result.get("verified"):
        return Outcome(
            "verified", "VERIFIED", "This payslip matches its registered record.", attempts
        )
    return Outcome(
        "not_verified",
        "NOT VERIFIED",
        "The payroll provider has revoked this payslip. Ask the employee for the current one.",
        attempts,
    )


def verify_reading(client: Verifier, reading: InputReading) -> Outcome:
    return verify_payloads(client, reading.payloads, reading.disagreement)
