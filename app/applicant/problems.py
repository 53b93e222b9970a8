"""Every problem an applicant's set of payslips can have, and its plain sentence: one table.

The names are PROTOCOL §10's (they are the ``check`` of the JSON); the sentences are what the
front desk reads, one per problem, filled in with dates, labels and names. Like the verdict
table (:mod:`app.verify.verdicts`), building the table fails at import if a check has no sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Check(StrEnum):
    NOT_A_PAYSLIP = "not_a_payslip"
    NOT_VERIFIED = "not_verified"
    DOCUMENT_ALTERED = "document_altered"
    CANNOT_VERIFY = "cannot_verify"
    DUPLICATE = "duplicate"
    DIFFERENT_EMPLOYEE = "different_employee"
    NAME_MISMATCH = "name_mismatch"
    DIFFERENT_EMPLOYER = "different_employer"
    GAP = "gap"
    OVERLAP = "overlap"
    YTD_MISMATCH = "ytd_mismatch"
    STALE = "stale"


SENTENCES: dict[Check, str] = {
    Check.NOT_A_PAYSLIP: "{label} holds no payslip code: {why}",
    Check.NOT_VERIFIED: "{label} is NOT VERIFIED: {why}",
    Check.DOCUMENT_ALTERED: "{label} is NOT VERIFIED: {why}",
    Check.CANNOT_VERIFY: "{label} could not be checked: {why}",
    Check.DUPLICATE: "{labels} are the same payslip, given more than once.",
    Check.DIFFERENT_EMPLOYEE: "The payslip paid on {paid} names {name}, not {other} as the other "
    "payslips do.",
    Check.NAME_MISMATCH: "The payslip paid on {paid} names {name}, not the applicant {applicant}.",
    Check.DIFFERENT_EMPLOYER: "The payslip paid on {paid} is from {employer}, not {other} as the "
    "other payslips are.",
    Check.GAP: "A payslip is missing: no payslip covers {first_missing} to {last_missing} (the pay "
    "periods jump from {previous_end} to {next_start}).",
    Check.OVERLAP: "The payslips paid on {previous_paid} and {next_paid} cover the same days: "
    "their pay periods overlap from {next_start} to {previous_end}.",
    Check.YTD_MISMATCH: "The year-to-date gross on the payslip paid on {next_paid} is {shown}, "
    "but the one paid on {previous_paid} and this pay make {expected}.",
    Check.STALE: "The latest payslip is {days} days old (paid on {paid}); ask for one from the "
    "last {limit} days.",
}
"""The sentence of each check; ``str.format`` fields are filled by :mod:`app.applicant.rules`."""

_MISSING = [check for check in Check if check not in SENTENCES]
if _MISSING:  # pragma: no cover - a programming error, caught by any import
    raise RuntimeError(f"no sentence for {_MISSING}")

DECIDING: frozenset[Check] = frozenset(Check) - {Check.CANNOT_VERIFY, Check.NOT_A_PAYSLIP}
"""Checks whose failure makes the set NOT VERIFIED; the other two leave it CANNOT VERIFY."""


@dataclass(frozen=True)
class Problem:
    """One failed check: the §10 name, its sentence, and the documents it is about (indexes into
    the set's documents, which are in input order)."""

    check: Check
    message: str
    documents: tuple[int, ...]

    @classmethod
    def of(cls, check: Check, documents: tuple[int, ...], **fields: Any) -> Problem:
        return cls(check, SENTENCES[check].format(**fields), documents)

    def wire(self) -> dict[str, Any]:
        return {
            "check": self.check.value,
            "message": self.message,
            "documents": list(self.documents),
        }
