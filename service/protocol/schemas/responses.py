"""The success bodies of the issuer, verifier and token APIs (spec "Endpoints", PROTOCOL §6, §7).

One definition per response shape, used by both sides: the domain returns these models, the
routes send their `wire()` form, the OpenAPI document's response schemas are generated from them,
and the app's client parses every answer into them. The error object is
`service.protocol.errors.ErrorBody`; the admin and pairing answers are in `admin_responses`.

Two policies every model here follows, both in `WireModel`:

* Sending: a field that is None is left out, never sent as null (absent has one spelling on this
  wire, PROTOCOL §5), and keys go out in declaration order, the order clients have always seen.
  The one field that *is* sent as null says so itself (`KeySummary.retired_at`).
* Reading: unknown keys from a newer service are kept (`extra="allow"`), so a client that only
  passes a result on (`python -m app verify --json`) passes on all of it, and a field this client
  does not know yet never makes a good answer unreadable. Documented values that leave room for
  growth (schema ids, roles, key states) are plain text for the same reason.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from service.protocol.errors import ErrorCode
from service.protocol.vocabulary import BatchItemStatus, RecordStatus

from .requests import PayslipNonPii, schema_selects_payslip

__all__ = [
    "Barcode",
    "BarcodeResult",
    "BatchErrorCode",
    "BatchResult",
    "BatchResultItem",
    "EmployeePii",
    "HealthStatus",
    "IssuerRef",
    "Jwks",
    "PayslipView",
    "Reference",
    "RegistrationResult",
    "RevocationResult",
    "Time",
    "TokenResponse",
    "VerificationResult",
    "WireModel",
]

Reference = Annotated[str, WithJsonSchema({"type": "string", "pattern": "^[A-Za-z0-9_-]{22}$"})]
"""A service reference the service minted or accepted (22 base64url characters)."""

Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
"""A UTC timestamp as the service writes it (`2026-11-13T09:00:00Z`); kept as text, never
re-formatted."""

RegisteredTime = Annotated[
    str,
    WithJsonSchema(
        {"type": "string", "description": "The `issued_at` text exactly as it was registered"}
    ),
]
"""`issued_at` exactly as registered: text in the document too, so a generated client hands its
caller the very string (as a `date-time` it would parse it, and print it back with `+00:00`)."""


def _documented(*values: str) -> WithJsonSchema:
    """The values the document lists for a field that is read as plain text (see the module
    docstring: a newer service may add one, and a client must still read the answer)."""
    return WithJsonSchema({"type": "string", "enum": [str(value) for value in values]})


BatchErrorCode = Annotated[
    str, _documented(ErrorCode.VALIDATION_FAILED, ErrorCode.CONFLICT, ErrorCode.IV_REUSED)
]
"""The codes a batch record's own result can carry (PROTOCOL §6); the rest fail the request."""
BatchStatus = Annotated[str, _documented(*BatchItemStatus)]
"""A `BatchItemStatus`, read as text."""
RecordStatusText = Annotated[str, _documented(*RecordStatus)]
"""A `RecordStatus`, read as text."""


class WireModel(BaseModel):
    """A response body: frozen, tolerant of keys it does not know, sent without nulls."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def wire(self) -> dict[str, Any]:
        """The JSON object as sent (see the module docstring for the None policy)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def wire_json(self) -> bytes:
        """`wire()` as compact UTF-8 JSON, written by pydantic-core without the dict in
        between: a 1000-record batch's results in ~0.2 ms instead of ~1."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)


# --- issuer API -----------------------------------------------------------------------------


class RegistrationResult(WireModel):
    """registerNonPII: 201 when the record was stored now, 200 when an identical one was."""

    service_reference: Reference


class BatchResultItem(WireModel):
    """One record's result in a batch, in the order sent. The reference and `external_id` are
    echoed whenever the record carried them as text, even when the record itself was refused,
    so every result can be matched to its row."""

    status: BatchStatus
    service_reference: str | None = None
    external_id: str | None = None
    code: BatchErrorCode | None = None
    detail: str | None = None


class BatchResult(WireModel):
    """registerNonPIIBatch: always 200 once the envelope is readable; a refused record is its
    own result (status `error`), never the request's."""

    results: list[BatchResultItem]


class Barcode(WireModel):
    """The badge the service rendered: a PNG image, base64 (standard alphabet, padded)."""

    format: Literal["png"]
    data: Annotated[str, WithJsonSchema({"type": "string", "contentEncoding": "base64"})]


def _sent_always(schema: JsonDict) -> None:
    """Fields a reader takes as optional (an older service does not send them) that this
    service always sends: required in the document, so a generated client types them `str`."""
    required = schema.setdefault("required", [])
    properties = schema["properties"]
    assert isinstance(required, list) and isinstance(properties, dict)
    for name in ("scan_url", "payload"):
        field = properties[name]
        assert isinstance(field, dict)
        field.pop("default", None)
        if name not in required:
            required.append(name)


class BarcodeResult(WireModel):
    """registerAndBuildBarcode: the reference the service minted, its badge, and the badge's
    text, for an issuer system that prints its own code or fills the PDF's metadata itself
    (added by issue 36; PROTOCOL §3). Both texts carry the transient ciphertext, as the badge
    does; the service stores none of them."""

    model_config = ConfigDict(json_schema_extra=_sent_always)

    service_reference: Reference
    barcode: Barcode
    scan_url: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": "string",
                "format": "uri",
                "description": "The QR's content: `<verifier origin>/v/<ref>#2.<BASE32>`",
            }
        ),
    ] = None
    payload: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": "string",
                "pattern": "^2\\|",
                "description": "The bare payload `2|<ref>|<BASE32>`, for the PDF's metadata "
                "(XMP `payload` in urn:payslip-verify:xmp:1.0/ and /PayslipVerifyPayload)",
            }
        ),
    ] = None


class RevocationResult(WireModel):
    """An issuer revoked one of its records; revoking again answers the same."""

    service_reference: Reference
    status: Literal[RecordStatus.REVOKED]
    revoked_at: Time


# --- verifier API ---------------------------------------------------------------------------


class IssuerRef(WireModel):
    issuer_id: str
    name: str


def _json_object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PydanticCustomError("dict_type", "expected an object")
    return value


RegisteredPayslip = Annotated[
    dict[str, Any], PlainValidator(_json_object, json_schema_input_type=PayslipNonPii)
]


class PayslipView(WireModel):
    """The `payslip` of a verification result: the record as registered, plus its state.

    `payslip_non_pii` is typed as a JSON object on purpose, while the document names its exact
    shape per `schema` (the same au/nz v1/v2 schemas registration validates against). It is the
    text the issuer registered, returned as stored and shown to the verifier as such: re-validating
    it on every verification would cost time on the hottest path, could turn a record registered
    under an older rule into a failed check, and a client would refuse a schema version newer than
    itself instead of showing it. The app reads it field by field across all versions
    (`app.verify.presentation`: v1 `*_cents` integers, v2 decimal strings); a caller that wants a
    typed
    body validates it with `schemas.PAYSLIP_SCHEMAS[view.schema_id]`.
    """

    model_config = ConfigDict(json_schema_extra=schema_selects_payslip)

    schema_id: str = Field(alias="schema")
    issued_at: RegisteredTime
    payslip_non_pii: RegisteredPayslip
    status: RecordStatusText
    issuer: IssuerRef
    registered_at: Time
    revoked_at: Time | None = None


class EmployeePii(WireModel):
    """The decrypted `employee` object (PROTOCOL §4): the fields of the badge's PII text format
    by name, empty ones left out, or only `raw` when the text has no known format.

    The fields are declared in an order in which every format's fields (P1, P2, AU2, NZ2) appear
    in that format's own order, so the object is sent, and shown, in protocol order whatever the
    format. Extra keys (a newer format's) are kept as text after them.
    """

    __pydantic_extra__: dict[str, str] = Field(init=False)

    employee_name: str | None = None
    ird_number: str | None = None
    position: str | None = None
    department: str | None = None
    employer_abn: str | None = None
    employer_identity: str | None = None
    employer_name: str | None = None
    bsb: str | None = None
    account_number: str | None = None
    account_name: str | None = None
    address: str | None = None
    raw: str | None = None

    def fields(self) -> list[tuple[str, str]]:
        """(name, value) of every field present, in wire order."""
        return list(self.wire().items())


class VerificationResult(WireModel):
    """verifyPayload. `verified` is false exactly when the record is revoked; a revoked record
    still decrypts, so `employee` is always there (PROTOCOL §6)."""

    verified: bool
    service_reference: Reference
    payslip: PayslipView
    employee: EmployeePii
    decrypted_at: Time


# --- tokens and operations ------------------------------------------------------------------


def _token_fields_required(schema: JsonDict) -> None:
    schema["required"] = ["access_token", "token_type", "expires_in", "scope"]


class TokenResponse(WireModel):
    """The client-credentials grant's answer (PROTOCOL §7).

    The service always sends `expires_in` (the document lists it as required); the model reads an
    answer without it, because the client then assumes a short lifetime (`app.api.auth`) rather
    than refusing a token it can use.
    """

    model_config = ConfigDict(json_schema_extra=_token_fields_required)

    access_token: str = Field(min_length=1)
    token_type: Annotated[str, WithJsonSchema({"const": "Bearer"})]
    expires_in: int | None = None
    scope: str


class Jwks(WireModel):
    """The public keys that verify access tokens, as RFC 7517 JWKs (`kid`, `use`, `alg`)."""

    keys: list[dict[str, Any]]


class HealthStatus(WireModel):
    """/healthz and /readyz; `redis` only from a server whose limits live in Redis."""

    status: str
    redis: str | None = None
