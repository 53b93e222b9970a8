"""The applicant check's typed input: one :class:`Document` per payslip code checked.

Built from the app's own verification outcome (:class:`app.verify.flow.Outcome`, the same one a
single check shows), so a document in a set has exactly the verdict it would have alone. A
document that is not VERIFIED keeps no employee data at all (PROTOCOL §10): it is dropped here,
when the document is made, so no later rule, message or screen can show it by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from app.document.compare import DocumentCheck
from app.document.money import minor_amount
from app.verify.flow import Outcome
from app.verify.presentation import format_abn
from app.verify.verdicts import RECORDABLE
from service.protocol.schemas import VerificationResult
from service.protocol.vocabulary import Verdict

Country = Literal["au", "nz"]


def _date(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value)) if value is not None else None
    except ValueError:
        return None


def _frequency(non_pii: dict[str, Any]) -> str | None:
    """``pay_frequency`` (AU) or ``pay_cycle`` (NZ, free text in v2) as a §10 frequency word."""
    raw = non_pii.get("pay_frequency") or non_pii.get("pay_cycle")
    if not isinstance(raw, str):
        return None
    return "_".join(raw.strip().lower().replace("-", " ").split()) or None


@dataclass(frozen=True)
class Payslip:
    """What the rules read of one registered payslip. Amounts are in minor units."""

    schema: str
    issuer_id: str
    issuer_name: str
    payment_date: date | None
    period_start: date | None
    period_end: date | None
    currency: str
    gross_minor: int | None
    net_minor: int | None
    ytd_gross_minor: int | None = None
    pay_frequency: str | None = None
    employee_name: str | None = None
    """Only on a VERIFIED document."""
    employer_abn: str | None = None
    """Only on a VERIFIED document: ``employer_abn``, or an AU2 ``employer_identity`` that is an
    ABN (11 digits), without spaces."""

    @property
    def country(self) -> Country | None:
        """Whose financial year applies: AU 1 July - 30 June, NZ 1 April - 31 March."""
        prefix = self.schema.split(".", 1)[0]
        return prefix if prefix in ("au", "nz") else None  # type: ignore[return-value]


def payslip_of(result: VerificationResult, *, with_employee: bool) -> Payslip:
    view = result.payslip
    non_pii = view.payslip_non_pii
    name = abn = None
    if with_employee:
        employee = result.employee
        name = employee.employee_name
        identity = employee.employer_abn or employee.employer_identity or ""
        grouped = format_abn(identity)
        abn = grouped.replace(" ", "") if grouped else None
    return Payslip(
        schema=view.schema_id,
        issuer_id=view.issuer.issuer_id,
        issuer_name=view.issuer.name,
        payment_date=_date(non_pii.get("payment_date")),
        period_start=_date(non_pii.get("period_start")),
        period_end=_date(non_pii.get("period_end")),
        currency=str(non_pii.get("currency", "")),
        gross_minor=minor_amount(non_pii, "gross"),
        net_minor=minor_amount(non_pii, "net"),
        ytd_gross_minor=minor_amount(non_pii, "ytd_gross"),
        pay_frequency=_frequency(non_pii),
        employee_name=name,
        employer_abn=abn,
    )


@dataclass(frozen=True)
class Document:
    """One payslip code of the set (or one input that held none), in input order."""

    input_index: int
    """Which input it came from (0-based); a PDF with several payslips gives several documents."""
    input: str
    """The input as given: a file path or the code text."""
    label: str
    """What a sentence calls it: the file name, "code 3", "badge 2"."""
    verdict: Verdict | None
    """None when the input held no payslip code (nothing was sent)."""
    reason: str
    """The outcome's key in :mod:`app.verify.verdicts` (or an input problem's)."""
    service_reference: str | None = None
    code: str | None = None
    detail: str | None = None
    """For an input with no code: which file, and why (plain words)."""
    payslip: Payslip | None = None
    """Its payslip facts, only when VERIFIED (a revoked payslip's figures are not shown)."""
    document: DocumentCheck | None = field(default=None, repr=False)
    """The document check of the page it was read from (PROTOCOL §13), if any."""
    barcode: str | None = field(default=None, repr=False, compare=False)
    """The payslip code checked, kept only to ask the service for this document's receipt
    (the set's verification record); only on a VERIFIED or NOT VERIFIED document of one code.
    Never in the JSON, a sentence or the log."""

    @property
    def verified(self) -> bool:
        return self.verdict == Verdict.VERIFIED


def document_of(
    index: int, given: str, label: str, outcome: Outcome, barcode: str | None = None
) -> Document:
    """The document for one verified input (one group of codes of it); ``barcode`` is the code
    it was verified from, kept when the verdict is one a receipt can record."""
    verified = outcome.verdict == Verdict.VERIFIED
    recordable = outcome.verdict in RECORDABLE and not outcome.disagreement
    result = outcome.result
    return Document(
        input_index=index,
        input=given,
        label=label,
        verdict=outcome.verdict,
        reason=outcome.reason,
        service_reference=result.service_reference if result is not None else None,
        code=None if verified else (outcome.code or outcome.reason),
        detail=outcome.detail if outcome.verdict is None else None,
        payslip=payslip_of(result, with_employee=True) if verified and result else None,
        barcode=barcode if recordable else None,
        document=outcome.document,
    )


def unreadable(index: int, given: str, label: str, reason: str, detail: str) -> Document:
    """An input with no payslip code: a file that cannot be read or holds none, or text that is
    no payslip code."""
    return Document(index, given, label, None, reason, detail=detail)
