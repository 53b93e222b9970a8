"""Strict validation of request bodies (spec "Resources and their fields"; PROTOCOL §1, §5, §6).

Kept free of web framework, storage and GUI imports so the service and the app validate with the
same code. Call the `validate_*` functions with the parsed JSON body; they return frozen models or
raise SchemaValidationError with dot-and-index field paths and messages that never echo the input.
"""

from __future__ import annotations

from service.protocol.errors import FieldError

from .au_v1 import AuPayslipV1
from .au_v2 import AuPayslipV2
from .errors import SchemaValidationError
from .nz_v1 import NzPayslipV1
from .nz_v2 import NzPayslipV2
from .openapi import openapi_components
from .requests import (
    PAYSLIP_SCHEMAS,
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
from .scalars import MAX_SAFE_INTEGER
from .validate import (
    canonical_json,
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
    "BatchRecord",
    "BatchRequest",
    "EncryptionMetadata",
    "FieldError",
    "NzPayslipV1",
    "NzPayslipV2",
    "PayslipNonPii",
    "PayslipRecord",
    "RegisterAndBuildRequest",
    "RegisterNonPiiRequest",
    "SchemaId",
    "SchemaValidationError",
    "VerifyRequest",
    "canonical_json",
    "openapi_components",
    "validate_batch_envelope",
    "validate_batch_record",
    "validate_register_and_build",
    "validate_register_non_pii",
    "validate_verify",
]
