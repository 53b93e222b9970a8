"""The employee's personal data as the text the ciphertext holds (PROTOCOL §4).

Thin wrappers over `service.protocol.pii_text`, so the issuer library writes exactly what the
service parses back: one builder per format with the fields as keyword arguments, typed per
format (a typo is a type error, and a TypeError at the call site, instead of a silently empty
field), plus the choice of format per payslip schema.
Errors are `PiiTextError`, which names the field and never echoes its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Required, TypedDict, Unpack, cast

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
from service.protocol.vocabulary import PayslipSchema

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
    PayslipSchema.AU_V1: "AU2",
    PayslipSchema.AU_V2: "AU2",
    PayslipSchema.NZ_V1: "NZ2",
    PayslipSchema.NZ_V2: "NZ2",
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


class _Employee(TypedDict, total=False):
    employee_name: Required[str]
    position: str
    department: str
    account_number: str
    account_name: str


class P1Fields(_Employee, total=False):
    employer_abn: str
    bsb: str


class P2Fields(P1Fields, total=False):
    address: str


class AU2Fields(_Employee, total=False):
    employer_identity: str
    bsb: str
    address: str


class NZ2Fields(_Employee, total=False):
    ird_number: str
    employer_name: str
    address: str


def _text(prefix: str, builder: str, fields: Mapping[str, object]) -> str:
    """The keyword arguments held to the format as a signature would hold them: an unknown
    name or a missing `employee_name` is a TypeError at the call site, never a silently empty
    field (the field order is the protocol's, from `FORMATS`)."""
    unknown = sorted(set(fields) - set(FORMATS[prefix]))
    if unknown:
        raise TypeError(f"{builder}() got an unexpected keyword argument '{unknown[0]}'")
    if "employee_name" not in fields:
        raise TypeError(f"{builder}() missing required keyword argument: 'employee_name'")
    return build_pii_text(prefix, cast("Mapping[str, str]", fields))


def p1_text(**fields: Unpack[P1Fields]) -> str:
    """Legacy P1 (no address). Kept for issuers whose readers only know the first format."""
    return _text("P1", "p1_text", fields)


def p2_text(**fields: Unpack[P2Fields]) -> str:
    """Legacy P2: P1 plus a one-line address."""
    return _text("P2", "p2_text", fields)


def au2_text(**fields: Unpack[AU2Fields]) -> str:
    """AU2: `employer_identity` is the ABN when known, else the employer's name
    (`au_employer_identity`); `address` is one line (`au_address`)."""
    return _text("AU2", "au2_text", fields)


def nz2_text(**fields: Unpack[NZ2Fields]) -> str:
    """NZ2: with the IRD number; `address` is one line (`nz_address`)."""
    return _text("NZ2", "nz2_text", fields)
