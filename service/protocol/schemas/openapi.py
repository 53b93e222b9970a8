"""JSON Schemas of the request and response models for the OpenAPI 3.1 document (PROTOCOL §9
`/openapi.json`).

The generator tells the truth about the wire rather than about the Python types: optional fields
are typed `X | None` in Python, but an explicit null is refused, so the schemas show neither a null
alternative nor a null default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema as cs

from .access import PairingRedeemRequest, PairingRequest, TokenRequest
from .admin_responses import (
    ClientDisabled,
    IssuerCreated,
    KeyCreated,
    KeyRetired,
    Overview,
    PairedClient,
    PairingOffer,
    VerifierCreated,
)
from .receipts import ReceiptResult
from .requests import (
    PAYSLIP_SCHEMAS,
    BatchRecord,
    BatchRequest,
    EncryptionMetadata,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    VerifyRequest,
)
from .responses import (
    BarcodeResult,
    BatchResult,
    HealthStatus,
    Jwks,
    RegistrationResult,
    RevocationResult,
    TokenResponse,
    VerificationResult,
)

REF_TEMPLATE = "#/components/schemas/{model}"


class WireJsonSchema(GenerateJsonSchema):
    def nullable_schema(self, schema: cs.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: cs.WithDefaultSchema) -> JsonSchemaValue:
        if "default" in schema and schema["default"] is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: cs.ModelSchema) -> JsonSchemaValue:
        """A model's description is its docstring's first paragraph: that is written for API
        readers; later paragraphs explain the code to its maintainers."""
        value = super().model_schema(schema)
        description = value.get("description")
        if isinstance(description, str):
            value["description"] = description.split("\n\n", 1)[0]
        return value


REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    RegisterNonPiiRequest,
    RegisterAndBuildRequest,
    BatchRequest,
    BatchRecord,
    VerifyRequest,
    EncryptionMetadata,
    *PAYSLIP_SCHEMAS.values(),
    TokenRequest,
    PairingRequest,
    PairingRedeemRequest,
)

RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    TokenResponse,
    Jwks,
    VerificationResult,
    ReceiptResult,
    RegistrationResult,
    BatchResult,
    BarcodeResult,
    RevocationResult,
    IssuerCreated,
    VerifierCreated,
    KeyCreated,
    KeyRetired,
    ClientDisabled,
    PairingOffer,
    PairedClient,
    Overview,
    HealthStatus,
)
"""Every success body the service sends over HTTP (`AdminClientCreated` only reaches the CLI)."""


def openapi_components() -> dict[str, Any]:
    """`components.schemas` entries for every request model and everything they reference."""
    return _components(REQUEST_MODELS)


def response_components() -> dict[str, Any]:
    """`components.schemas` entries for every response model and everything they reference.

    Generated in validation mode, like the requests: the schema of what a client may read. The
    payslip shapes they reference are the request components themselves (same generator, same
    names), so a verification result points at the schemas registration validated against.
    """
    return _components(RESPONSE_MODELS)


def _components(models: tuple[type[BaseModel], ...]) -> dict[str, Any]:
    _, top = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=REF_TEMPLATE,
        schema_generator=WireJsonSchema,
    )
    components: dict[str, Any] = top.get("$defs", {})
    return components
