"""The employee's personal data as the text the ciphertext holds (PROTOCOL §4).

Thin wrappers over `service.protocol.pii_text`, so the issuer library writes exactly what the
service parses back: one builder per format with the fields as keyword arguments (a typo is a
TypeError at the call site instead of a silently empty field), plus the choice of format per
payslip schema.
Errors are `PiiTextError`, which names the field and never echoes its value.
"""

from __future__ import annotations

from collections.abc import Mapping

from service.protocol.pii_text import (
    FORMATS,
    MAX_PII_BYTES,
    PiiTextError,
    au_address,
    au_employer_identity,
    build_pii_text,
    nz_address,
    parse_pii_text,
)

__all__ = [
    "FORMATS",
    "MAX_PII_BYTES",
    "PII_FORMAT_FOR_SCHEMA",
    "PiiTextError",
    "au2_text",
    "au_address",
    "au_employer_identity",
    "build_pii_text",
    "format_for_schema",
    "nz2_text",
    "nz_address",
    "p1_text",
    "p2_text",
    "parse_pii_text",
    "pii_text",
]

#: The format a new payslip of each schema gets: the v2 formats carry the address and fit the
#: country (AU2 lets an employer without an ABN name itself; NZ2 has the IRD number).
PII_FORMAT_FOR_SCHEMA: dict[str, str] = {
    "au.payslip.v1": "AU2",
    "au.payslip.v2": "AU2",
    "nz.payslip.v1": "NZ2",
    "nz.payslip.v2": "NZ2",
}


def format_for_schema(schema: str) -> str:
    """The PII format to write for `schema` (AU2 for au.*, NZ2 for nz.*)."""
    try:
        return PII_FORMAT_FOR_SCHEMA[schema]
    except KeyError:
        raise PiiTextError("schema", "unknown payslip schema") from None


def pii_text(prefix: str, fields: Mapping[str, str]) -> str:
    """Any format by name; missing fields are written empty (the protocol allows that)."""
    return build_pii_text(prefix, fields)


def p1_text(
    *,
    employee_name: str,
    position: str = "",
    department: str = "",
    employer_abn: str = "",
    bsb: str = "",
    account_number: str = "",
    account_name: str = "",
) -> str:
    """Legacy P1 (no address). Kept for issuers whose readers only know the first format."""
    return build_pii_text("P1", dict(locals()))


def p2_text(
    *,
    employee_name: str,
    position: str = "",
    department: str = "",
    employer_abn: str = "",
    bsb: str = "",
    account_number: str = "",
    account_name: str = "",
    address: str = "",
) -> str:
    """Legacy P2: P1 plus a one-line address."""
    return build_pii_text("P2", dict(locals()))


def au2_text(
    *,
    employee_name: str,
    position: str = "",
    department: str = "",
    employer_identity: str = "",
    bsb: str = "",
    account_number: str = "",
    account_name: str = "",
    address: str = "",
) -> str:
    """AU2: `employer_identity` is the ABN when known, else the employer's name
    (`au_employer_identity`); `address` is one line (`au_address`)."""
    return build_pii_text("AU2", dict(locals()))


def nz2_text(
    *,
    employee_name: str,
    ird_number: str = "",
    position: str = "",
    department: str = "",
    employer_name: str = "",
    account_number: str = "",
    account_name: str = "",
    address: str = "",
) -> str:
    """NZ2: with the IRD number; `address` is one line (`nz_address`)."""
    return build_pii_text("NZ2", dict(locals()))
