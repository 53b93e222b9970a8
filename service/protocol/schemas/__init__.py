"""The wire's bodies as models: strict validation of requests (spec "Resources and their fields";
PROTOCOL §1, §5, §6) and the response bodies both sides read and write (`responses`,
`admin_responses`).

Kept free of web framework, storage and GUI imports so the service and the app use the same code.
Call the `validate_*` functions with the parsed JSON body; they return frozen models or raise
SchemaValidationError with dot-and-index field paths and messages that never echo the input.
"""

from __future__ import annotations

from service.protocol.errors import FieldError

from . import admin_responses as _admin
from .access import PairingRedeemRequest, PairingRequest, TokenRequest
from .admin_responses import *  # noqa: F403 - the admin bodies (`admin_responses.__all__`)
from .au_v1 import AuPayslipV1
from .au_v2 import AuPayslipV2
from .errors import SchemaValidationError
from .nz_v1 import NzPayslipV1
from .nz_v2 import NzPayslipV2
from .openapi import openapi_components, response_components
from .receipts import RECEIPT_TYPE, ReceiptClaims, ReceiptIssuer, ReceiptPayslip, ReceiptResult
from .requests import (
    PAYSLIP_SCHEMAS,
    BatchEnvelope,
    BatchRecord,
    BatchRequest,
    EncryptionMetadata,
    PayslipNonPii,
    PayslipRecord,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    SchemaId,
    VerifyRequest,
)
from .responses import (
    Barcode,
    BarcodeResult,
    BatchResult,
    BatchResultItem,
    EmployeePii,
    HealthStatus,
    IssuerRef,
    Jwks,
    PayslipView,
    RegistrationResult,
    RevocationResult,
    TokenResponse,
    VerificationResult,
    WireModel,
)
from .scalars import MAX_SAFE_INTEGER
from .validate import (
    canonical_json,
    validate_as,
    validate_batch_envelope,
    validate_batch_record,
    validate_register_and_build,
    validate_register_non_pii,
    validate_verify,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "PAYSLIP_SCHEMAS",
    "AuPayslipV1",
    "AuPayslipV2",
    "Barcode",
    "BarcodeResult",
    "BatchEnvelope",
    "BatchRecord",
    "BatchRequest",
    "BatchResult",
    "BatchResultItem",
    "EmployeePii",
    "EncryptionMetadata",
    "FieldError",
    "HealthStatus",
    "IssuerRef",
    "Jwks",
    "NzPayslipV1",
    "NzPayslipV2",
    "PairingRedeemRequest",
    "PairingRequest",
    "PayslipNonPii",
    "PayslipRecord",
    "PayslipView",
    "RECEIPT_TYPE",
    "ReceiptClaims",
    "ReceiptIssuer",
    "ReceiptPayslip",
    "ReceiptResult",
    "RegisterAndBuildRequest",
    "RegisterNonPiiRequest",
    "RegistrationResult",
    "RevocationResult",
    "SchemaId",
    "SchemaValidationError",
    "TokenRequest",
    "TokenResponse",
    "VerificationResult",
    "VerifyRequest",
    "WireModel",
    "canonical_json",
    "openapi_components",
    "response_components",
    "validate_as",
    "validate_batch_envelope",
    "validate_batch_record",
    "validate_register_and_build",
    "validate_register_non_pii",
    "validate_verify",
    *_admin.__all__,
]
