"""From an input reading to a verdict: the one verification pipeline the GUI and the CLI share.

Every outcome carries a *reason*, a key of the one table in :mod:`app.verify.verdicts`, which
decides its verdict and its plain words. Texts are classified once
(:func:`app.inputs.classify.classify`): a code typed, pasted or scanned arrives here as a
:class:`~app.inputs.classify.PayslipCode` (:func:`verify_code`); a reading's texts are sorted
once (:func:`found_codes`), and what is not a payslip code is refused before anything is sent: a
typo or a stray QR code gets no verdict (``state == "no_code"``). The code travels on in the
attempt (``Attempt.sent``), so a receipt of the same check needs no second read.

A PDF whose metadata and printed QR name different records is verified twice and reported as
not verified (PROTOCOL §3), whatever each half says on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from app.api.errors import ApiError, ClientCode, unreachable_words
from app.document.check import TEXT_CODE, check_image, check_pdf
from app.document.compare import DocumentCheck
from app.inputs import pdf_pages
from app.inputs.classify import PayslipCode, payslip_codes
from app.inputs.reading import InputReading
from app.verify.presentation import shows_payslip_data, withheld_result
from app.verify.verdicts import (
    EXIT_STATUS,
    INPUT_PROBLEMS,
    AppOutcome,
    InputProblem,
    Meaning,
    meaning_of,
    standing,
)
from service.protocol.schemas import ReceiptResult, VerificationResult
from service.protocol.vocabulary import Verdict

State = Verdict | Literal["no_code"]
"""How a check ended: its verdict, or ``"no_code"`` for an input that gets none."""


class Verifier(Protocol):
    def verify_payload(self, barcode: str) -> VerificationResult: ...


class ReceiptMaker(Protocol):
    """What makes a signed receipt of a check (PROTOCOL §11): the desk's API client."""

    def receipt(self, barcode: str) -> ReceiptResult: ...


@dataclass(frozen=True)
class Attempt:
    """One payload sent to the service: its result, or the error it got."""

    result: VerificationResult | None = None
    code: str | None = None
    request_id: str | None = None
    detail: str | None = None
    sent: PayslipCode | None = None
    """The payslip code this attempt sent (a receipt of the same check asks about it)."""


@dataclass(frozen=True)
class Outcome:
    """How one check ended. ``reason`` is a key of :data:`app.verify.verdicts.MEANINGS`, or of
    :data:`app.verify.verdicts.INPUT_PROBLEMS` when there is no verdict (``detail`` may then say
    more,
    e.g. which file could not be read)."""

    reason: str
    attempts: list[Attempt] = field(default_factory=list)
    disagreement: bool = False
    detail: str | None = None
    document: DocumentCheck | None = None
    """The document check (PROTOCOL §13) of a PDF or an image whose code verified."""
    compared: bool = True
    """False for a code given as text: no page to compare (the result says so)."""

    @property
    def document_words(self) -> str | None:
        """What the document check says, in one line; None when there was none to make."""
        if self.document is not None:
            return self.document.summary
        if not self.compared and self.verdict == Verdict.VERIFIED:
            return f"Compare the printed figures with these: {TEXT_CODE}."
        return None

    @property
    def state(self) -> State:
        if self.reason in INPUT_PROBLEMS:
            return "no_code"
        return self.meaning.verdict

    @property
    def verdict(self) -> Verdict | None:
        return None if self.reason in INPUT_PROBLEMS else self.meaning.verdict

    @property
    def meaning(self) -> Meaning:
        return meaning_of(self.reason)

    @property
    def headline(self) -> str:
        return "NOT A PAYSLIP CODE" if self.verdict is None else self.meaning.headline

    @property
    def explanation(self) -> str:
        if self.verdict is None:
            return self.detail or INPUT_PROBLEMS[self.reason]
        if self.reason == AppOutcome.DOCUMENT_ALTERED and self.document is not None:
            return " ".join(self.document.sentences())
        if (
            self.reason == ClientCode.SERVICE_UNREACHABLE
            and self.attempts
            and self.attempts[0].detail
        ):
            # How it failed and which address was tried ("refused", "did not answer in time").
            return self.attempts[0].detail
        return self.meaning.words

    @property
    def instruction(self) -> str:
        if self.verdict is None or (self.reason == AppOutcome.DOCUMENT_ALTERED and self.document):
            return ""  # the altered document's sentences end with what to do
        return self.meaning.instruction

    @property
    def exit_status(self) -> int:
        """``python -m app verify``: 0 verified, 1 not verified, 2 cannot verify or bad input."""
        return 2 if self.verdict is None else EXIT_STATUS[self.verdict]

    @property
    def result(self) -> VerificationResult | None:
        """The result to show: the first one the service returned."""
        return next((a.result for a in self.attempts if a.result is not None), None)

    @property
    def code(self) -> str | None:
        """The first error code the service (or the client) reported, if any; DOCUMENT_ALTERED
        for a genuine code on an altered page."""
        if self.reason == AppOutcome.DOCUMENT_ALTERED:
            return self.reason
        return next((a.code for a in self.attempts if a.code), None)

    @property
    def sent(self) -> PayslipCode | None:
        """The payslip code of the first attempt: what a verification record is made of."""
        return next((a.sent for a in self.attempts if a.sent is not None), None)

    @property
    def request_id(self) -> str | None:
        return next((a.request_id for a in self.attempts if a.request_id), None)

    def as_json(self) -> dict[str, Any]:
        """The CLI's --json output: for VERIFIED the result itself (plus the verdict); for any
        other verdict only what `app.verify.presentation.shows_payslip_data` lets every output show
        (reason, reference, status, issuer), for each code of a disagreeing PDF too; the code
        and the verdict when the check failed."""
        verdict = self.meaning.headline if self.verdict else None
        if self.disagreement:
            return {
                "verified": False,
                "verdict": verdict,
                "reason": AppOutcome.CONFLICTING_CODES,
                "results": [
                    withheld_result(a.result) if a.result else {"code": a.code}
                    for a in self.attempts
                ],
            }
        document = {} if self.document is None else {"document": self.document.wire()}
        if self.result is not None:
            if shows_payslip_data(self.verdict):
                return {**self.result.wire(), "verdict": verdict, **document}
            code = {"code": self.reason} if self.reason == AppOutcome.DOCUMENT_ALTERED else {}
            withheld = withheld_result(self.result)
            return {**withheld, "verdict": verdict, "reason": self.reason, **code, **document}
        return {
            "verdict": verdict,
            "code": self.code or self.reason,
            "request_id": self.request_id,
        }


def attempt(client: Verifier, code: PayslipCode) -> Attempt:
    try:
        return Attempt(result=client.verify_payload(code.text), sent=code)
    except ApiError as exc:
        return Attempt(
            code=exc.code,
            request_id=exc.request_id,
            detail=unreachable_words(exc) or exc.message,
            sent=code,
        )


def reason_of(first: Attempt) -> str:
    """The table key for one service answer."""
    if first.result is None:
        return first.code or ClientCode.API_ERROR
    return standing(first.result.verified)


def found_codes(payloads: list[str]) -> list[PayslipCode] | Outcome:
    """The payslip codes among one input's texts (each classified once), or the no-verdict
    outcome when there is none."""
    if not payloads:
        return Outcome(InputProblem.NO_CODE_FOUND)
    return payslip_codes(payloads) or Outcome(InputProblem.NOT_A_PAYSLIP_CODE)


def verify_codes(client: Verifier, codes: list[PayslipCode], disagreement: bool = False) -> Outcome:
    """Send each code (at least one) and say how the check ended."""
    attempts = [attempt(client, code) for code in codes]
    if disagreement:
        return Outcome(AppOutcome.CONFLICTING_CODES, attempts, disagreement=True)
    return Outcome(reason_of(attempts[0]), attempts)


def verify_code(client: Verifier, code: PayslipCode) -> Outcome:
    """A code given as text (typed, pasted, scanned): no page to compare."""
    return replace(verify_codes(client, [code]), compared=False)


def verify_payloads(client: Verifier, payloads: list[str], disagreement: bool = False) -> Outcome:
    """Verify the payslip codes among ``payloads``; texts that are none are never sent."""
    found = found_codes(payloads)
    return found if isinstance(found, Outcome) else verify_codes(client, found, disagreement)


def verify_found(client: Verifier, codes: list[PayslipCode], reading: InputReading) -> Outcome:
    """Verify the codes found in ``reading``, then compare its page(s) with the result."""
    return with_document_check(verify_codes(client, codes, reading.disagreement), reading)


def verify_reading(client: Verifier, reading: InputReading) -> Outcome:
    found = found_codes(reading.payloads)
    return found if isinstance(found, Outcome) else verify_found(client, found, reading)


def with_document_check(outcome: Outcome, reading: InputReading) -> Outcome:
    """``outcome`` with the document check of the page(s) it was read from (PROTOCOL §13): a
    VERIFIED code on an altered page becomes NOT VERIFIED, ``DOCUMENT_ALTERED``. A code given as
    text has no page; a result that is not VERIFIED is not compared."""
    if reading.kind == "text":
        return replace(outcome, compared=False)
    result = outcome.result
    if not needs_document_check(outcome, reading) or result is None or reading.data is None:
        pdf_pages.release_kept(reading.data)  # the reading's document: no check will take it
        return outcome
    if reading.kind == "pdf":
        document = check_pdf(reading.data, result)
    else:
        document = check_image(reading.data, result)
    reason = AppOutcome.DOCUMENT_ALTERED if document.status == "altered" else outcome.reason
    return replace(outcome, reason=reason, document=document)


def needs_document_check(outcome: Outcome, reading: InputReading) -> bool:
    """Whether ``reading``'s page(s) are compared with ``outcome``'s result: a PDF or an image
    whose code verified. The screens say "Checking the document…" while it runs, since the
    verdict may still change (an altered page is NOT VERIFIED)."""
    return (
        reading.kind != "text"
        and outcome.reason == AppOutcome.VERIFIED
        and outcome.result is not None
        and reading.data is not None
    )
