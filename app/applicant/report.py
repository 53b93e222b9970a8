"""The applicant check as the CLI prints it: §10's JSON, or lines a person reads.

Sentences come from the problem table (:mod:`app.applicant.problems`); figures of a document
appear only when it is VERIFIED, and its employee name only in the JSON of a VERIFIED document.
"""

from __future__ import annotations

from typing import Any, TextIO

from app.applicant.documents import Document
from app.applicant.income import Income
from app.applicant.rules import SetCheck
from app.document.money import format_minor
from app.verify.presentation import long_date
from app.verify.verdicts import HEADLINES
from service.protocol.vocabulary import Verdict

SET_WORDS: dict[Verdict, tuple[str, str]] = {
    Verdict.VERIFIED: (
        "Every payslip is genuine and they fit together: one person, one employer, consecutive "
        "and recent.",
        "Accept these payslips.",
    ),
    Verdict.NOT_VERIFIED: (
        "These payslips do not prove the income of this person now.",
        "Do not accept them as they are.",
    ),
    Verdict.CANNOT_VERIFY: (
        "Not every payslip could be checked, so nothing is decided yet.",
        "Try again, or ask for the missing payslip.",
    ),
}
"""What the set's verdict means at the desk (the headline is the single check's)."""


def document_wire(doc: Document) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input": doc.input,
        "verdict": HEADLINES[doc.verdict] if doc.verdict else None,
    }
    if doc.service_reference is not None:
        out["service_reference"] = doc.service_reference
    if not doc.verified:
        out["code"] = doc.code or doc.reason
    p = doc.payslip
    out.update(
        payment_date=p.payment_date.isoformat() if p and p.payment_date else None,
        period_start=p.period_start.isoformat() if p and p.period_start else None,
        period_end=p.period_end.isoformat() if p and p.period_end else None,
        currency=p.currency if p else None,
        gross_minor=p.gross_minor if p else None,
        net_minor=p.net_minor if p else None,
    )
    if doc.verified and p is not None:
        out["employee_name"] = p.employee_name
    if doc.document is not None:
        out["document"] = doc.document.wire()
    return out


def set_wire(check: SetCheck) -> dict[str, Any]:
    """PROTOCOL §10's ``--json`` object."""
    income = check.income.income
    return {
        "verdict": check.headline,
        "documents": [document_wire(d) for d in check.documents],
        "problems": [p.wire() for p in check.problems],
        "income": income.wire() if income else None,
    }


def document_line(doc: Document, position: int) -> str:
    """One document's line, named as the problems name it ("#2 march.pdf")."""
    verdict = HEADLINES[doc.verdict] if doc.verdict else "NO CODE"
    name = f"#{position} {doc.label}"
    p = doc.payslip
    if p is None:
        return f"{name:<28} {verdict}"
    period = (f"{long_date(p.period_start.isoformat())} – " if p.period_start else "") + (
        long_date(p.period_end.isoformat()) if p.period_end else ""
    )
    paid = long_date(p.payment_date.isoformat()) if p.payment_date else "?"
    gross = format_minor(p.gross_minor, p.currency) if p.gross_minor is not None else "?"
    net = format_minor(p.net_minor, p.currency) if p.net_minor is not None else "?"
    return f"{name:<28} {verdict:<13} paid {paid}  period {period}  gross {gross}  net {net}"


def income_lines(income: Income) -> list[str]:
    money = income.money
    return [
        f"Per year   gross {money(income.gross_per_year_minor)}   net "
        f"{money(income.net_per_year_minor)}",
        f"Per month  gross {money(income.gross_per_month_minor)}   net "
        f"{money(income.net_per_month_minor)}",
        income.explanation(),
    ]


def print_set(check: SetCheck, out: TextIO) -> None:
    words, instruction = SET_WORDS[check.verdict]
    print(f"{check.headline}: {words} {instruction}", file=out)
    print("\nPayslips", file=out)
    for position, doc in enumerate(check.documents, start=1):
        print(f"  {document_line(doc, position)}", file=out)
    if check.problems:
        print("\nProblems", file=out)
        for problem in check.problems:
            print(f"  - {problem.message}", file=out)
    print("\nIncome (from the VERIFIED payslips only)", file=out)
    if check.income.income is None:
        print(f"  None proved: {check.income.why_none}", file=out)
    else:
        for line in income_lines(check.income.income):
            print(f"  {line}", file=out)
