"""The set rules of PROTOCOL §10: one decision about several payslips of one person.

:func:`check_set` takes the documents in input order (each already checked as a single verify
checks it) and returns the set's verdict, its problems in a fixed order (per document first,
then across documents, neighbours in pay order, then recency), and the income it proves.
Comparisons between payslips use VERIFIED documents only, each reference once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import pairwise

from app.applicant.documents import Document, Payslip
from app.applicant.income import IncomeResult, income_of
from app.applicant.problems import DECIDING, NO_INCOME_BECAUSE, Check, Problem
from app.document.money import format_minor
from app.document.names import name_words, same_name
from app.verify.presentation import long_date
from app.verify.verdicts import HEADLINES, INPUT_PROBLEMS, AppOutcome, InputProblem, meaning_of
from service.protocol.vocabulary import Verdict

DEFAULT_MAX_AGE_DAYS = 45


@dataclass(frozen=True)
class SetCheck:
    verdict: Verdict
    documents: tuple[Document, ...]
    problems: tuple[Problem, ...]
    income: IncomeResult

    @property
    def headline(self) -> str:
        return HEADLINES[self.verdict]


def _short(day: date | None) -> str:
    return long_date(day.isoformat()) if day else "an unknown date"


def financial_year(day: date, country: str | None) -> int | None:
    """The year a financial year starts in: AU 1 July, NZ 1 April; None for other schemas."""
    start_month = {"au": 7, "nz": 4}.get(country or "")
    if start_month is None:
        return None
    return day.year if day.month >= start_month else day.year - 1


def name_of(docs: Sequence[Document], index: int) -> str:
    """How a sentence names a document: its position in the list and its input ("#2 march.pdf"),
    so two payslips paid on one day, or two files of one name, are still told apart."""
    return f"#{index + 1} {docs[index].label}"


def _per_document(docs: Sequence[Document]) -> list[Problem]:
    problems: list[Problem] = []
    for index, doc in enumerate(docs):
        if doc.verdict is None:
            why = doc.detail or INPUT_PROBLEMS.get(
                doc.reason, INPUT_PROBLEMS[InputProblem.NOT_A_PAYSLIP_CODE]
            )
            named = name_of(docs, index)
            problems.append(Problem.of(Check.NOT_A_PAYSLIP, (index,), doc=named, why=why))
        elif doc.reason == AppOutcome.DOCUMENT_ALTERED and doc.document is not None:
            why = " ".join(doc.document.sentences())
            named = name_of(docs, index)
            problems.append(Problem.of(Check.DOCUMENT_ALTERED, (index,), doc=named, why=why))
        elif doc.verdict == Verdict.NOT_VERIFIED:
            why = meaning_of(doc.reason).words
            named = name_of(docs, index)
            problems.append(Problem.of(Check.NOT_VERIFIED, (index,), doc=named, why=why))
        elif doc.verdict == Verdict.CANNOT_VERIFY:
            why = meaning_of(doc.code or doc.reason).words
            named = name_of(docs, index)
            problems.append(Problem.of(Check.CANNOT_VERIFY, (index,), doc=named, why=why))
    return problems


def _duplicates(docs: Sequence[Document]) -> list[Problem]:
    seen: dict[str, list[int]] = {}
    for index, doc in enumerate(docs):
        if doc.service_reference is not None:
            seen.setdefault(doc.service_reference, []).append(index)
    return [
        Problem.of(Check.DUPLICATE, tuple(ids), docs=" and ".join(name_of(docs, i) for i in ids))
        for ids in seen.values()
        if len(ids) > 1
    ]


def _verified(docs: Sequence[Document]) -> list[tuple[int, Payslip]]:
    """(index, payslip) of the VERIFIED documents, the first of each reference only."""
    seen: set[str | None] = set()
    out: list[tuple[int, Payslip]] = []
    for index, doc in enumerate(docs):
        if doc.verified and doc.payslip is not None and doc.service_reference not in seen:
            seen.add(doc.service_reference)
            out.append((index, doc.payslip))
    return out


def _odd_ones(
    verified: list[tuple[int, Payslip]], key: Callable[[Payslip], Hashable | None]
) -> tuple[Hashable | None, list[tuple[int, Payslip]]]:
    """The most common key (ties: the earliest input) and the documents whose key differs;
    documents without a key take no part."""
    keyed = [(i, p, key(p)) for i, p in verified if key(p) is not None]
    if not keyed:
        return None, []
    counts = Counter(k for _, _, k in keyed)
    best = max(counts.values())
    common = next(k for _, _, k in keyed if counts[k] == best)
    return common, [(i, p) for i, p, k in keyed if k != common]


def _employees(docs: Sequence[Document], verified: list[tuple[int, Payslip]]) -> list[Problem]:
    def words(p: Payslip) -> frozenset[str] | None:
        return (
            name_words(p.employee_name) if p.employee_name and name_words(p.employee_name) else None
        )

    common, odd = _odd_ones(verified, words)
    if not odd:
        return []
    other = next(p.employee_name for _, p in verified if words(p) == common)
    return [
        Problem.of(
            Check.DIFFERENT_EMPLOYEE,
            (i,),
            doc=name_of(docs, i),
            paid=_short(p.payment_date),
            name=p.employee_name,
            other=other,
        )
        for i, p in odd
    ]


def _applicant(
    docs: Sequence[Document], verified: list[tuple[int, Payslip]], applicant: str
) -> list[Problem]:
    return [
        Problem.of(
            Check.NAME_MISMATCH,
            (i,),
            doc=name_of(docs, i),
            paid=_short(p.payment_date),
            name=p.employee_name or "no one",
            applicant=applicant,
        )
        for i, p in verified
        if not (p.employee_name and same_name(p.employee_name, applicant))
    ]


def _employers(docs: Sequence[Document], verified: list[tuple[int, Payslip]]) -> list[Problem]:
    problems: list[Problem] = []
    common, odd = _odd_ones(verified, lambda p: p.issuer_id)
    names = {p.issuer_id: p.issuer_name for _, p in verified}
    for i, p in odd:
        problems.append(
            Problem.of(
                Check.DIFFERENT_EMPLOYER,
                (i,),
                doc=name_of(docs, i),
                paid=_short(p.payment_date),
                employer=p.issuer_name,
                other=names[str(common)],
            )
        )
    flagged = {i for i, _ in odd}
    common_abn, odd_abn = _odd_ones(verified, lambda p: p.employer_abn)
    for i, p in odd_abn:
        if i not in flagged:
            problems.append(
                Problem.of(
                    Check.DIFFERENT_EMPLOYER,
                    (i,),
                    doc=name_of(docs, i),
                    paid=_short(p.payment_date),
                    employer=f"the employer with ABN {p.employer_abn}",
                    other=f"ABN {common_abn}",
                )
            )
    return problems


def _neighbours(docs: Sequence[Document], verified: list[tuple[int, Payslip]]) -> list[Problem]:
    """gap, overlap and ytd_mismatch between payslips next to each other in pay order."""
    ordered = sorted(
        verified,
        key=lambda ip: (ip[1].period_end or date.max, ip[1].payment_date or date.max, ip[0]),
    )
    problems: list[Problem] = []
    for (i, before), (j, after) in pairwise(ordered):
        gap = False
        if before.period_end and after.period_start:
            if after.period_start > before.period_end + timedelta(days=1):
                gap = True
                problems.append(
                    Problem.of(
                        Check.GAP,
                        (i, j),
                        previous=_paid(docs, i),
                        next=_paid(docs, j),
                        first_missing=_short(before.period_end + timedelta(days=1)),
                        last_missing=_short(after.period_start - timedelta(days=1)),
                        previous_end=_short(before.period_end),
                        next_start=_short(after.period_start),
                    )
                )
            elif after.period_start <= before.period_end:
                problems.append(
                    _between(
                        docs,
                        Check.OVERLAP,
                        (i, before),
                        (j, after),
                        next_start=_short(after.period_start),
                        previous_end=_short(before.period_end),
                    )
                )
        if not gap and _ytd_differs(before, after):
            assert after.ytd_gross_minor is not None
            expected = (before.ytd_gross_minor or 0) + (after.gross_minor or 0)
            problems.append(
                _between(
                    docs,
                    Check.YTD_MISMATCH,
                    (i, before),
                    (j, after),
                    shown=format_minor(after.ytd_gross_minor, after.currency),
                    expected=format_minor(expected, after.currency),
                )
            )
    return problems


def _paid(docs: Sequence[Document], index: int) -> str:
    """A document's name and the day it was paid: "#2 march.pdf (paid 27 Nov 2026)"."""
    payslip = docs[index].payslip
    return f"{name_of(docs, index)} (paid {_short(payslip.payment_date if payslip else None)})"


def _between(
    docs: Sequence[Document],
    check: Check,
    previous: tuple[int, Payslip],
    following: tuple[int, Payslip],
    **words: str,
) -> Problem:
    """A problem between two payslips next to each other in pay order; its sentence names each
    by position, input and the day it was paid (`previous`, `next`)."""
    i, j = previous[0], following[0]
    return Problem.of(check, (i, j), previous=_paid(docs, i), next=_paid(docs, j), **words)


def _ytd_differs(before: Payslip, after: Payslip) -> bool:
    """Both carry YTD gross, in one currency and one financial year by payment date, and the
    later YTD is not the earlier plus the later pay."""
    if before.ytd_gross_minor is None or after.ytd_gross_minor is None:
        return False
    if after.gross_minor is None or before.currency != after.currency:
        return False
    if before.payment_date is None or after.payment_date is None:
        return False
    if before.country != after.country:
        return False
    year = financial_year(before.payment_date, before.country)
    if year is None or year != financial_year(after.payment_date, after.country):
        return False
    return after.ytd_gross_minor != before.ytd_gross_minor + after.gross_minor


def _stale(
    docs: Sequence[Document], verified: list[tuple[int, Payslip]], today: date, limit: int
) -> list[Problem]:
    dated = [(p.payment_date, i) for i, p in verified if p.payment_date is not None]
    if not dated:
        return []
    latest, index = max(dated)
    days = (today - latest).days
    if days <= limit:
        return []
    return [
        Problem.of(
            Check.STALE,
            (index,),
            days=days,
            doc=name_of(docs, index),
            paid=_short(latest),
            limit=limit,
        )
    ]


def set_verdict(docs: Sequence[Document], problems: Sequence[Problem]) -> Verdict:
    not_verified = any(d.verdict == Verdict.NOT_VERIFIED for d in docs)
    if not_verified or any(p.check in DECIDING for p in problems):
        return Verdict.NOT_VERIFIED
    if docs and all(d.verified for d in docs) and not problems:
        return Verdict.VERIFIED
    return Verdict.CANNOT_VERIFY


def check_set(
    documents: Sequence[Document],
    *,
    today: date,
    applicant_name: str | None = None,
    max_age_days: int = DEFAULT_MAX_AGE_DAYS,
) -> SetCheck:
    """The set's verdict, problems and income. ``today`` is the desk's local date."""
    docs = tuple(documents)
    verified = _verified(docs)
    problems = _per_document(docs) + _duplicates(docs) + _employees(docs, verified)
    if applicant_name is not None and applicant_name.strip():
        problems += _applicant(docs, verified, applicant_name.strip())
    problems += _employers(docs, verified) + _neighbours(docs, verified)
    problems += _stale(docs, verified, today, max_age_days)
    verdict = set_verdict(docs, problems)
    return SetCheck(verdict, docs, tuple(problems), _income(docs, verdict, problems))


def _income(
    docs: Sequence[Document], verdict: Verdict, problems: Sequence[Problem]
) -> IncomeResult:
    """PROTOCOL §10: only a VERIFIED set proves income. Otherwise none, and why in words: two
    people's pay averaged, or pays with one missing, is no one's income."""
    if verdict == Verdict.VERIFIED:
        return income_of(docs)
    deciding = [p for p in problems if p.check in DECIDING] or list(problems)
    if not deciding:
        return IncomeResult(None, "No payslip is VERIFIED, so no income is proved.")
    because = NO_INCOME_BECAUSE[deciding[0].check]
    return IncomeResult(
        None,
        f"Income is shown only when the payslips are VERIFIED together; here {because}.",
    )
