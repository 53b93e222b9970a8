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
    Check.NOT_A_PAYSLIP: "{doc} holds no payslip code: {why}",
    Check.NOT_VERIFIED: "{doc} is NOT VERIFIED: {why}",
    Check.DOCUMENT_ALTERED: "{doc} is NOT VERIFIED: {why}",
    Check.CANNOT_VERIFY: "{doc} could not be checked: {why}",
    Check.DUPLICATE: "{docs} are the same payslip, given more than once.",
    Check.DIFFERENT_EMPLOYEE: "{doc}, paid on {paid}, names {name}, not {other} as the other "
    "payslips do.",
    Check.NAME_MISMATCH: "{doc}, paid on {paid}, names {name}, not the applicant {applicant}.",
    Check.DIFFERENT_EMPLOYER: "{doc}, paid on {paid}, is from {employer}, not {other} as the "
    "other payslips are.",
    Check.GAP: "A payslip is missing between {previous} and {next}: no payslip covers "
    "{first_missing} to {last_missing} (the pay periods jump from {previous_end} to "
    "{next_start}).",
    Check.OVERLAP: "{previous} and {next} cover the same days: their pay periods overlap from "
    "{next_start} to {previous_end}.",
    Check.YTD_MISMATCH: "The year-to-date gross on {next} is {shown}, but {previous} and this pay "
    "make {expected}.",
    Check.STALE: "The latest payslip is {days} days old ({doc}, paid on {paid}); ask for one from "
    "the last {limit} days.",
}
"""The sentence of each check; ``str.format`` fields are filled by :mod:`app.applicant.rules`.
A document is named by its position in the list and its input (``doc``, ``previous``, ``next``:
"#2 march.pdf"), never by its payment date alone: two payslips can share one."""

NO_INCOME_BECAUSE: dict[Check, str] = {
    Check.NOT_A_PAYSLIP: "an input holds no payslip code, so the set is not complete",
    Check.NOT_VERIFIED: "a payslip is NOT VERIFIED, and the set with it proves nothing",
    Check.DOCUMENT_ALTERED: "a payslip's printed figures were altered, and the set with it "
    "proves nothing",
    Check.CANNOT_VERIFY: "not every payslip could be checked",
    Check.DUPLICATE: "a payslip was given more than once, so the set is not what it seems",
    Check.DIFFERENT_EMPLOYEE: "the payslips name different people, and an average of two "
    "people's pay is no one's income",
    Check.NAME_MISMATCH: "a payslip does not name the applicant, so its pay is not theirs",
    Check.DIFFERENT_EMPLOYER: "the payslips are from different employers, so they are not the "
    "pay of one job",
    Check.GAP: "a payslip is missing, so the pays shown may not be the whole income",
    Check.OVERLAP: "the pay periods overlap, so some days would be counted twice",
    Check.YTD_MISMATCH: "the year-to-date figures do not add up, so the pays shown may not be "
    "the whole income",
    Check.STALE: "the latest payslip is too old to show the income now",
}
"""Why a set that is not VERIFIED shows no income (PROTOCOL §10: income only from a VERIFIED
set), by its first problem; the desk reads this instead of a figure."""

_MISSING = [check for check in Check if check not in SENTENCES or check not in NO_INCOME_BECAUSE]
if _MISSING:  # pragma: no cover - a programming error, caught by any import
    raise RuntimeError(f"no sentence or no-income reason for {_MISSING}")

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
