"""Verification receipts (PROTOCOL §11): the route's answer and the claims of the signed JWS.

A receipt is a compact JWS whose protected header is `{"alg": "EdDSA", "kid", "typ":
"payslip-receipt+jwt"}` and whose payload is `ReceiptClaims`. The service builds the claims with
these models and the app reads a receipt back into them, so both sides agree on one shape.

What a receipt may hold is fixed here and nowhere else: the verdict, the reference, the issuer,
the payslip's period, currency, gross and net, and the employee's name. Never an account, an
address, a tax number, a ciphertext, an IV or a tag: the models have no field for them, and the
service builds them field by field (never by copying a verification result).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from .responses import WireModel

__all__ = [
    "RECEIPT_TYPE",
    "ReceiptClaims",
    "ReceiptIssuer",
    "ReceiptPayslip",
    "ReceiptResult",
]

RECEIPT_TYPE = "payslip-receipt+jwt"
"""The JWS header `typ` of a receipt. Access tokens are signed with the same keys, so a checker
must insist on it: a token is no receipt."""

Amount = Annotated[
    int | str,
    WithJsonSchema(
        {"oneOf": [{"type": "integer"}, {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"}]}
    ),
]
"""v1 schemas: integer cents; v2 schemas: the decimal string exactly as registered."""


class ReceiptResult(WireModel):
    """POST /v1/verifications/receipt: the signed receipt (compact JWS) and its verdict."""

    receipt: Annotated[
        str,
        WithJsonSchema(
            {"type": "string", "pattern": r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"}
        ),
    ]
    verified: bool


class _Claims(BaseModel):
    """Frozen, and tolerant of keys a newer service adds (a receipt checks years later)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ReceiptIssuer(_Claims):
    id: str
    name: str


class ReceiptPayslip(_Claims):
    """The figures a lender files: the period, the payment date, currency, gross and net."""

    schema_id: str = Field(alias="schema")
    period_start: str | None = None
    period_end: str | None = None
    payment_date: str | None = None
    currency: str | None = None
    gross: Amount | None = None
    net: Amount | None = None


class ReceiptClaims(_Claims):
    """The JWS payload. `status` is `active`, `revoked`, or the error code of a refusal
    (`DECRYPTION_FAILED`, `SERVICE_REFERENCE_NOT_FOUND`, `KEY_VERSION_UNAVAILABLE`). `payslip`
    and `employee_name` only when the record was verified or is revoked."""

    iss: str
    iat: int
    jti: str
    sub: str | None = None
    verified: bool
    status: str
    verifier: str
    issuer: ReceiptIssuer | None = None
    env: str
    payslip: ReceiptPayslip | None = None
    employee_name: str | None = None
