"""JSON Schemas of the request models for the OpenAPI 3.1 document (PROTOCOL §9 `/openapi.json`).

The generator tells the truth about the wire rather than about the Python types: optional fields
are typed `X | None` in Python, but an explicit null is refused, so the schemas show neither a null
alternative nor a null default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema as cs

from .requests import (
    PAYSLIP_SCHEMAS,
    BatchRecord,
    BatchRequest,
    EncryptionMetadata,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    VerifyRequest,
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


def openapi_components() -> dict[str, Any]:
    """`components.schemas` entries for every request model and everything they reference."""
    models: list[type[BaseModel]] = [
        RegisterNonPiiRequest,
        RegisterAndBuildRequest,
        BatchRequest,
        BatchRecord,
        VerifyRequest,
        EncryptionMetadata,
        *PAYSLIP_SCHEMAS.values(),
    ]
    _, top = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=REF_TEMPLATE,
        schema_generator=WireJsonSchema,
    )
    components: dict[str, Any] = top.get("$defs", {})
    return components
