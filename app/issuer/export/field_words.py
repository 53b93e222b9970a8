"""What the clerk calls each payslip field: the words of the pay-run tab's pickers, also used
in every problem a pay-run export's rows have.

A problem said "pii.employee_name: required" or "Total Gross (gross): required": the path is the
mapping file's, not what the person at the screen sees. The pickers and the problems now share
these words ("Employee name", "Gross pay"); fields outside the list read as the schema's label.
"""

from __future__ import annotations

from app.issuer.fields import spec_for_path

__all__ = ["COMMON_FIELDS", "field_words"]

COMMON_FIELDS: tuple[tuple[str, str], ...] = (
    ("external_id", "Employee ID"),
    ("pii.employee_name", "Employee name"),
    ("pii.position", "Position / job title"),
    ("pii.department", "Department"),
    ("pii.bsb", "BSB"),
    ("pii.account_number", "Bank account number"),
    ("pii.account_name", "Bank account name"),
    ("pii.address", "Address"),
    ("pii.ird_number", "IRD number"),
    ("pii.employer_identity", "Employer ABN"),
    ("pii.employer_name", "Employer name"),
    ("period_start", "Pay period start"),
    ("period_end", "Pay period end"),
    ("payment_date", "Payment date"),
    ("gross", "Gross pay"),
    ("paygw", "Tax withheld (PAYG)"),
    ("paye", "Tax withheld (PAYE)"),
    ("net", "Net pay"),
    ("ytd_gross", "Gross, year to date"),
    ("ytd_paygw", "PAYG, year to date"),
    ("ytd_paye", "PAYE, year to date"),
    ("currency", "Currency"),
)
"""Plain names for the fields a payroll export usually has, in the order a clerk thinks of them."""
_WORDS = dict(COMMON_FIELDS)
_OTHER = {
    "schema": "Country / format",
    "issued_at": "Issued at",
    "pii_format": "Personal details format",
    "pdf": "Payslip PDF",
}


def field_words(schema: str, target: str) -> str | None:
    """The clerk's words for a mapping target (a v1 `*_cents` twin reads as its field), or None
    when it is no field at all (such as "row")."""
    base = target.removesuffix("_cents")
    if base in _WORDS:
        return _WORDS[base]
    if target in _OTHER:
        return _OTHER[target]
    if target.startswith("pii."):
        return target.removeprefix("pii.").replace("_", " ").capitalize()
    try:
        spec = spec_for_path(schema, target) or spec_for_path(schema, base)
    except KeyError:  # an unknown schema: its fields have no labels here
        spec = None
    return spec.label if spec is not None else None
