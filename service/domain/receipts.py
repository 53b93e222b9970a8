"""Signed verification receipts (PROTOCOL §11): evidence a lender files, that the service forgets.

A receipt is made by verifying exactly as verifyPayload does (`Verification.check`, the same read,
key choice and refusals), then signing what the outcome says with the instance's current receipt
key (service.domain.receipt_keys: never an access-token key). A refusal about the document
(unknown reference, altered, key withdrawn) is recorded too: "we checked and it was not good" is
evidence as well. Bad input and refused callers raise as they do for verifyPayload and make no
receipt. A refusal names no issuer: a reference alone (with a made-up ciphertext) must not tell
a caller whose payslip it is, as verifyPayload's refusals do not.

The claims are built field by field from the outcome (never by copying the verification result),
so the employee's account, address and tax number cannot reach a receipt. Nothing of a receipt is
stored or logged: it exists only in the response.
"""

from __future__ import annotations

import secrets
from typing import Any

import jwt

from service.domain.clock import Clock
from service.domain.receipt_keys import ReceiptKeys
from service.domain.verification import Checked, Verification
from service.protocol.encoding import b64url_encode
from service.protocol.schemas import (
    RECEIPT_TYPE,
    ReceiptClaims,
    ReceiptIssuer,
    ReceiptPayslip,
    ReceiptResult,
    VerificationResult,
    VerifyRequest,
)

_FIGURES = ("period_start", "period_end", "payment_date", "currency")
_AMOUNTS = (("gross", ("gross", "gross_cents")), ("net", ("net", "net_cents")))
"""v2 schemas name amounts `gross`/`net` (decimal strings), v1 `gross_cents`/`net_cents`."""


def _amount(non_pii: dict[str, Any], names: tuple[str, ...]) -> int | str | None:
    for name in names:
        value = non_pii.get(name)
        if isinstance(value, int | str) and not isinstance(value, bool):
            return value
    return None


def payslip_figures(result: VerificationResult) -> ReceiptPayslip:
    """The figures a lender files, whatever the schema version; absent ones are left out."""
    non_pii = result.payslip.payslip_non_pii
    texts = {name: non_pii[name] for name in _FIGURES if isinstance(non_pii.get(name), str)}
    amounts = {key: _amount(non_pii, names) for key, names in _AMOUNTS}
    return ReceiptPayslip.model_validate({"schema": result.payslip.schema_id, **texts, **amounts})


def receipt_claims(
    checked: Checked, *, iss: str, iat: int, verifier: str, env: str, jti: str | None = None
) -> ReceiptClaims:
    """The claims for one outcome (a result, or a refusal about the document)."""
    result = checked.result
    issuer = (  # only once the ciphertext authenticated: the issuer's own key sealed it
        ReceiptIssuer(id=checked.issuer.issuer_id, name=checked.issuer.name)
        if checked.issuer is not None and result is not None
        else None
    )
    if result is None:
        assert checked.refusal is not None
        return ReceiptClaims(
            iss=iss,
            iat=iat,
            jti=jti or _new_jti(),
            sub=checked.service_reference,
            verified=False,
            status=str(checked.refusal.code),
            verifier=verifier,
            issuer=issuer,
            env=env,
        )
    return ReceiptClaims(
        iss=iss,
        iat=iat,
        jti=jti or _new_jti(),
        sub=result.service_reference,
        verified=result.verified,
        status=result.payslip.status,
        verifier=verifier,
        issuer=issuer,
        env=env,
        payslip=payslip_figures(result),
        employee_name=result.employee.employee_name or None,
    )


def _new_jti() -> str:
    return b64url_encode(secrets.token_bytes(16))


class Receipts:
    def __init__(
        self,
        verification: Verification,
        signing: ReceiptKeys,
        clock: Clock,
        verifier_url: str,
        environment: str,
    ) -> None:
        self._verification = verification
        self._signing = signing
        self._clock = clock
        self._iss = verifier_url
        self._env = environment

    def issue(self, request: VerifyRequest, client_id: str) -> ReceiptResult:
        """Verify as verifyPayload does and sign what it found (PROTOCOL §11)."""
        checked = self._verification.check(request.barcode, client_id)
        claims = receipt_claims(
            checked,
            iss=self._iss,
            iat=int(self._clock.now().timestamp()),
            verifier=client_id,
            env=self._env,
        )
        kid, key = self._signing.signer()
        token = jwt.encode(
            claims.wire(), key, algorithm="EdDSA", headers={"kid": kid, "typ": RECEIPT_TYPE}
        )
        return ReceiptResult(receipt=token, verified=claims.verified)
