"""The request bodies of the four operations (spec "Payslip record", "Endpoints"; PROTOCOL §5, §6).

`payslip_non_pii` is validated by the model its sibling `schema` names. Pydantic cannot
discriminate a union on a sibling key, and a request-level union would put variant tags into error
locations, so a plain field validator dispatches instead: errors then sit at real paths, and an
unknown `schema` is reported once, at `schema`, rather than once per candidate shape.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator
from pydantic.config import JsonDict

from service.protocol.vocabulary import PayslipSchema

from .au_v1 import AuPayslipV1
from .au_v2 import AuPayslipV2
from .common import ClosedModel
from .nz_v1 import NzPayslipV1
from .nz_v2 import NzPayslipV2
from .scalars import (
    Barcode,
    EncryptedPii,
    ExternalId,
    Iv,
    KeyVersion,
    Opt,
    ServiceReference,
    Tag,
    Timestamp,
)

SchemaId = Literal[
    PayslipSchema.AU_V1, PayslipSchema.NZ_V1, PayslipSchema.AU_V2, PayslipSchema.NZ_V2
]
"""A request's `schema`: every `PayslipSchema`, spelled as a Literal because validation is strict
(a strict enum field refuses the plain text JSON parses to; a Literal of members accepts it and
gives the member). A test keeps the two equal."""
PayslipNonPii = AuPayslipV1 | NzPayslipV1 | AuPayslipV2 | NzPayslipV2

PAYSLIP_SCHEMAS: dict[str, type[AuPayslipV1 | NzPayslipV1 | AuPayslipV2 | NzPayslipV2]] = {
    PayslipSchema.AU_V1: AuPayslipV1,
    PayslipSchema.NZ_V1: NzPayslipV1,
    PayslipSchema.AU_V2: AuPayslipV2,
    PayslipSchema.NZ_V2: NzPayslipV2,
}

*_earlier, _last = PayslipSchema
_SCHEMA_NAMES = f"{', '.join(_earlier)} or {_last}"


def schema_selects_payslip(schema: JsonDict, cls: type[Any]) -> None:
    """Tie each `schema` value to its payslip shape in the JSON Schema, as validation does (also
    used by the verification result's `payslip`, which returns what was registered)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    payslip = properties.get("payslip_non_pii")
    shapes = payslip.get("anyOf") if isinstance(payslip, dict) else None
    if not isinstance(shapes, list) or len(shapes) != len(PAYSLIP_SCHEMAS):
        return
    schema["allOf"] = [
        {
            "if": {"properties": {"schema": {"const": schema_id}}, "required": ["schema"]},
            "then": {"properties": {"payslip_non_pii": shape}},
        }
        for schema_id, shape in zip(PAYSLIP_SCHEMAS, shapes, strict=True)
    ]


class EncryptionMetadata(ClosedModel):
    iv: Iv
    tag: Tag
    key_version: Opt[KeyVersion] = None


class PayslipRecord(ClosedModel):
    """What every registration carries; the operations differ only in the fields they add."""

    model_config = ConfigDict(json_schema_extra=schema_selects_payslip)

    schema_id: SchemaId = Field(alias="schema")
    issued_at: Timestamp
    payslip_non_pii: PayslipNonPii = Field(
        description=f"Shape selected by `schema`: {_SCHEMA_NAMES}."
    )
    encryption_metadata: EncryptionMetadata

    @field_validator("payslip_non_pii", mode="plain", json_schema_input_type=PayslipNonPii)
    @classmethod
    def _by_schema(cls, value: Any, info: ValidationInfo) -> Any:
        schema_id = info.data.get("schema_id")
        if schema_id is None:
            # `schema` already failed; validating against a guessed shape would only add noise.
            # The record is rejected anyway, so the raw value is never used.
            return value
        # The core validator directly, as `validate_as` does (no `model_validate` wrapper).
        return PAYSLIP_SCHEMAS[schema_id].__pydantic_validator__.validate_python(value)

    def payslip_non_pii_json(self) -> dict[str, Any]:
        """The payslip exactly as the client sent it, normalised only where the wire allows
        (`100.0` as an integer becomes `100`); this is what is stored and shown to verifiers."""
        return self.payslip_non_pii.as_sent()

    def idempotency_content(self) -> dict[str, Any]:
        """The content PROTOCOL §6 compares for a repeated `service_reference`; pass it to
        `canonical_json` for a byte comparison."""
        return {
            "schema": self.schema_id,
            "issued_at": self.issued_at,
            "payslip_non_pii": self.payslip_non_pii_json(),
            "iv": self.encryption_metadata.iv,
            "tag": self.encryption_metadata.tag,
            "key_version": self.encryption_metadata.key_version,
        }


class RegisterNonPiiRequest(PayslipRecord):
    """registerNonPII: the caller builds the barcode, so no ciphertext is sent; the optional
    reference makes retries idempotent (the service mints one when it is absent)."""

    service_reference: Opt[ServiceReference] = None


class RegisterAndBuildRequest(PayslipRecord):
    """registerAndBuildBarcode: carries the ciphertext for the badge; no caller reference is
    accepted, because a lost response is retried with fresh encryption, never replayed."""

    encrypted_pii: EncryptedPii


class BatchRecord(PayslipRecord):
    """One record of registerNonPIIBatch; the reference is required so every result can be
    retried idempotently, and `external_id` is only echoed back."""

    service_reference: ServiceReference
    external_id: Opt[ExternalId] = None


_BATCH_ITEM = WithJsonSchema(
    {
        # Any object is accepted (the second branch): a generated client still gets a typed
        # BatchRecord to send (issue 36), and a validator of the document no bad promise.
        "anyOf": [{"$ref": "#/components/schemas/BatchRecord"}, {"type": "object"}],
        "description": (
            "A BatchRecord. Anything wrong inside an item is reported in that item's result "
            "(status `error`) with 200 for the request, never as a 400."
        ),
    }
)


class BatchRequest(ClosedModel):
    """registerNonPIIBatch as documented. Validation does not use this model: the envelope and
    each record are checked separately, because a bad record must not fail the whole batch, so
    the document describes items as objects and points at `BatchRecord` for their fields."""

    records: list[Annotated[dict[str, Any], _BATCH_ITEM]] = Field(min_length=1, max_length=1000)


class BatchEnvelope(ClosedModel):
    """The part of a batch body that fails the whole request (PROTOCOL §6)."""

    records: list[dict[str, Any]] = Field(min_length=1, max_length=1000)


class VerifyRequest(ClosedModel):
    """verifyPayload; the 13000-character limit applies to the text as sent, before trimming."""

    barcode: Barcode
