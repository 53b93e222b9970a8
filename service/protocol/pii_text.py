"""The PII plaintext formats P1, P2, AU2 and NZ2 (PROTOCOL §4).

Builders refuse what a parser could not read back (a `|`, control or format characters, lone
surrogates, over 1024 bytes) and name the offending field without echoing its value, since the
value is personal data and error messages end up in logs.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

MAX_PII_BYTES = 1024
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})

_P1 = (
    "employee_name",
    "position",
    "department",
    "employer_abn",
    "bsb",
    "account_number",
    "account_name",
)
FORMATS: dict[str, tuple[str, ...]] = {
    "P1": _P1,
    "P2": (*_P1, "address"),  # P2 is P1 with the address appended
    "AU2": (
        "employee_name",
        "position",
        "department",
        "employer_identity",
        "bsb",
        "account_number",
        "account_name",
        "address",
    ),
    "NZ2": (
        "employee_name",
        "ird_number",
        "position",
        "department",
        "employer_name",
        "account_number",
        "account_name",
        "address",
    ),
}


class PiiTextError(ValueError):
    """A PII field cannot be written. `field` names it; the value is never included."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def check_field(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise PiiTextError(name, "must be text")
    if "|" in value:
        raise PiiTextError(name, "must not contain '|'")
    for char in value:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise PiiTextError(name, "contains a control, format or separator character")


def build_pii_text(prefix: str, fields: Mapping[str, str]) -> str:
    """Join the fields of one format in protocol order; missing fields are written empty."""
    if prefix not in FORMATS:
        raise PiiTextError("format", f"unknown PII format (use one of {', '.join(FORMATS)})")
    names = FORMATS[prefix]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise PiiTextError(unknown[0], f"is not a field of {prefix}")
    values = []
    for name in names:
        value = fields.get(name, "")
        check_field(name, value)
        values.append(value)
    text = "|".join([prefix, *values])
    if len(text.encode("utf-8")) > MAX_PII_BYTES:
        raise PiiTextError("pii", f"the whole text exceeds {MAX_PII_BYTES} UTF-8 bytes")
    return text


def parse_pii_text(plaintext: bytes) -> dict[str, str]:
    """The `employee` object of a verification result: known formats by name, else raw text."""
    text = plaintext.decode("utf-8", errors="replace")
    parts = text.split("|")
    names = FORMATS.get(parts[0])
    if names is None or len(parts) != len(names) + 1:
        return {"raw": text}
    return {name: value for name, value in zip(names, parts[1:], strict=True) if value}


def au_address(line1: str, line2: str, suburb: str, state: str, postcode: str) -> str:
    """One-line AU address: `line1, line2, suburb state postcode` (empty parts dropped)."""
    locality = " ".join(p for p in (suburb, state, postcode) if p)
    return ", ".join(p for p in (line1, line2, locality) if p)


def nz_address(line1: str, line2: str, suburb: str, city: str, postcode: str) -> str:
    """One-line NZ address: `line1, line2, suburb, city postcode` (empty parts dropped)."""
    town = " ".join(p for p in (city, postcode) if p)
    return ", ".join(p for p in (line1, line2, suburb, town) if p)


def au_employer_identity(abn: str | None, employer_name: str) -> str:
    """AU2 employer_identity: the ABN when known, else the employer's name."""
    return abn if abn else employer_name
