"""The words of the wire that are not error codes, each set written once as a `StrEnum`.

A member *is* its wire string (`RecordStatus.REVOKED == "revoked"`), so JSON, SQL parameters,
TinyDB documents and log lines carry exactly the bytes they always did, while code names a word
through its type and a typo fails at import (or in mypy) instead of matching nothing. The error
codes have their own module (`service.protocol.errors`) because each carries more than a word.

Where a response model reads one of these as plain text (a newer service may add a value: see
`service.protocol.schemas.responses`), the OpenAPI document still lists the values from here.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "BatchItemStatus",
    "KeyState",
    "PayslipSchema",
    "ReceiptKeyState",
    "RecordStatus",
    "Verdict",
    "WireWord",
]


class WireWord(StrEnum):
    """A word of the wire. Its `repr` is the word's, so a message that quotes the set of
    expected values (pydantic's `literal_error`, which `schemas.errors` passes on as "expected
    one of ...") reads `'au.payslip.v1'`, exactly as when the values were plain strings."""

    def __repr__(self) -> str:
        return repr(self._value_)


class RecordStatus(WireWord):
    """A registered payslip's status (PROTOCOL §6 "Verification result": `payslip.status`).
    `verified` is false exactly when it is REVOKED."""

    ACTIVE = "active"
    REVOKED = "revoked"


class KeyState(WireWord):
    """An issuer key version's state (PROTOCOL §2)."""

    ACTIVE = "active"
    """The newest: handed out for new payslips; one per issuer."""
    LIVE = "live"
    """Older, still decrypts the payslips sealed with it."""
    RETIRED = "retired"
    """Key material destroyed; never decrypts again."""


class ReceiptKeyState(WireWord):
    """A receipt signing key's state (PROTOCOL §11); every one stays published in the JWKS."""

    CURRENT = "current"
    """Signs new receipts; one per instance."""
    RETIRED = "retired"
    """Replaced by a rotation: still checks the receipts it signed; its private half destroyed."""
    REVOKED = "revoked"
    """Leaked: published with `revoked_at`, and every receipt under it is refused."""


class Verdict(WireWord):
    """What a check means to the person at the desk (each `ErrorCode` carries one; the app keys
    its desk words, exit statuses and sounds by it). Not a field of any wire model: the wire
    says `verified: true|false` and an error code, and the verdict follows from them."""

    VERIFIED = "verified"
    """Accept: the code decrypted and matches an active registered record."""
    NOT_VERIFIED = "not_verified"
    """Do not accept: something is wrong with the document."""
    CANNOT_VERIFY = "cannot_verify"
    """Try again: the check itself failed and nothing is known about the document."""


class BatchItemStatus(WireWord):
    """One record's result in registerNonPIIBatch (PROTOCOL §6)."""

    CREATED = "created"
    DUPLICATE = "duplicate"
    """The same reference with the same content was already registered (also earlier in the
    same batch); nothing new is stored."""
    ERROR = "error"
    """Refused; the result's `code` says why (a request-level code never appears here)."""


class PayslipSchema(WireWord):
    """The `schema` a payslip record names (spec "Payslip record"); it selects the shape of
    `payslip_non_pii` (`service.protocol.schemas.PAYSLIP_SCHEMAS`)."""

    AU_V1 = "au.payslip.v1"
    NZ_V1 = "nz.payslip.v1"
    AU_V2 = "au.payslip.v2"
    NZ_V2 = "nz.payslip.v2"
