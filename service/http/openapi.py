"""The OpenAPI 3.1 document, generated from the protocol's models: the request models that
validate bodies and the response models the domain returns (`service.protocol.schemas`).

This module only says which operation takes and answers which model; no shape is written here.
Error responses come from the protocol's vocabulary: each operation names the `ErrorCode`s it
can answer with, the statuses are theirs, and every error response's schema is the protocol's
`ErrorBody` narrowed to those codes (spec "Errors": allowed `code` values per error response).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from service.composition.config import ServiceConfig
from service.protocol import schemas
from service.protocol.errors import ErrorBody, ErrorCode
from service.protocol.schemas import (
    BarcodeResult,
    BatchRequest,
    BatchResult,
    ClientDisabled,
    HealthStatus,
    IssuerCreated,
    Jwks,
    KeyCreated,
    KeyRetired,
    Overview,
    PairedClient,
    PairingOffer,
    PairingRedeemRequest,
    ReceiptResult,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    RegistrationResult,
    RevocationResult,
    TokenRequest,
    TokenResponse,
    VerificationResult,
    VerifierCreated,
    VerifyRequest,
)
from service.protocol.schemas.openapi import REF_TEMPLATE, WireJsonSchema

E = ErrorCode
COMMON: tuple[ErrorCode, ...] = (
    E.UNAUTHORIZED,
    E.FORBIDDEN,
    E.PAYLOAD_TOO_LARGE,
    E.UNSUPPORTED_MEDIA_TYPE,
    E.RATE_LIMITED,
    E.INTERNAL_ERROR,
    E.SERVICE_UNAVAILABLE,
)
"""What any route behind a token may answer besides its own codes."""

ANY_ROUTE: tuple[ErrorCode, ...] = (E.RATE_LIMITED, E.INTERNAL_ERROR)
"""What even an open route answers: the IP limit, or a failure."""

UNROUTED: dict[str, tuple[ErrorCode, str]] = {
    "NotFound": (E.NOT_FOUND, "A path not in this document"),
    "MethodNotAllowed": (E.METHOD_NOT_ALLOWED, "A method the path does not accept"),
}
"""`components.responses` for requests that reach no operation (a path not in this document, or
a method the path does not accept): the same error object. A path parameter holding `/` matches
no route either, so parameterised operations list NOT_FOUND beside their own 404."""


def error_components() -> dict[str, Any]:
    """`components.schemas` for the error object: `Error` (the protocol's `ErrorBody`),
    `ErrorCode` (every code, with its status and title) and `FieldError`."""
    schema = ErrorBody.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=WireJsonSchema)
    found: dict[str, Any] = schema.pop("$defs", {})
    schema.pop("title", None)
    schema["description"] = (
        "The error object of every non-2xx response. Clients branch on `code`; `error` and "
        "`detail` are human text that may change (on /oauth/token `error` is OAuth's error value)."
    )
    found["ErrorCode"]["description"] = "; ".join(
        f"{code} ({code.status}): {code.summary}" for code in ErrorCode
    )
    found["FieldError"].pop("title", None)
    found["FieldError"]["description"] = (
        "`path` is dot-and-index (`payslip_non_pii.earnings.0.amount_cents`), empty for the body."
    )
    return {"Error": schema, **found}


def error_responses(codes: Iterable[ErrorCode]) -> dict[str, Any]:
    """One response per status, naming the codes it carries and allowing only those."""
    by_status: dict[int, list[ErrorCode]] = {}
    for code in codes:
        if code not in by_status.setdefault(code.status, []):
            by_status[code.status].append(code)
    return {str(status): _error_response(found) for status, found in sorted(by_status.items())}


def _codes(operation: dict[str, Any], status: int) -> list[ErrorCode]:
    """The codes an operation's error response for `status` lists (none when it has none)."""
    response = operation["responses"].get(str(status))
    if response is None:
        return []
    schema = response["content"]["application/json"]["schema"]
    return [ErrorCode[code] for code in schema["properties"]["code"]["enum"]]


def _error_response(codes: list[ErrorCode], when: str = "") -> dict[str, Any]:
    text = " or ".join(codes)
    if when:
        text = f"{when}: {text}"
    if any(code.retry_after for code in codes):
        text += " (Retry-After)"
    schema = {
        "allOf": [_ref("Error")],
        "properties": {"code": {"enum": [str(code) for code in codes]}},
    }
    return {"description": text, "content": {"application/json": {"schema": schema}}}


ANY_OBJECT = {"type": "object"}
"""The one success body without a model: `/openapi.json`, this document itself."""

Body = type[BaseModel] | None


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schema(model: Body) -> dict[str, Any]:
    return ANY_OBJECT if model is None else _ref(model.__name__)


def _operation(
    op_id: str,
    summary: str,
    ok: dict[int, Body],
    request: Body,
    errors: tuple[ErrorCode, ...],
    security: str | None,
    form: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(status): {
            "description": "success",
            "content": {"application/json": {"schema": _schema(model)}},
        }
        for status, model in ok.items()
    }
    responses.update(error_responses(errors))
    operation: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if request is not None:
        media = (
            ("application/json", "application/x-www-form-urlencoded")
            if form
            else ("application/json",)
        )
        operation["requestBody"] = {
            "required": True,
            "content": {kind: {"schema": _schema(request)} for kind in media},
        }
    if security:
        operation["security"] = [{"bearer": [security]}]
    return operation


ISSUER, VERIFIER, ADMIN = "service:issuer", "service:verifier", "service:admin"
NOT_FOUND_TOO: tuple[ErrorCode, ...] = (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON)


def _paths() -> dict[str, Any]:
    """Every API route with its models and the error codes it can answer with."""
    return {
        "/oauth/token": {
            "post": _operation(
                "token",
                "Exchange client credentials for an access token",
                {200: TokenResponse},
                TokenRequest,
                (E.VALIDATION_FAILED, *COMMON[:-1]),
                None,
                form=True,
            )
        },
        "/.well-known/jwks.json": {
            "get": _operation(
                "jwks", "Public keys that sign access tokens", {200: Jwks}, None, ANY_ROUTE, None
            )
        },
        "/v1/verifications/payload": {
            "post": _operation(
                "verifyPayload",
                "Authenticate, decrypt and verify a barcode text",
                {200: VerificationResult},
                VerifyRequest,
                (
                    E.VALIDATION_FAILED,
                    E.DECRYPTION_FAILED,
                    E.SERVICE_REFERENCE_NOT_FOUND,
                    E.KEY_VERSION_UNAVAILABLE,
                    *COMMON,
                ),
                VERIFIER,
            )
        },
        "/v1/verifications/receipt": {
            "post": _operation(
                "verificationReceipt",
                "Verify a barcode text as verifyPayload does and answer with a signed receipt "
                "(also for a revoked, unknown or altered code)",
                {200: ReceiptResult},
                VerifyRequest,
                (E.VALIDATION_FAILED, *COMMON),
                VERIFIER,
            )
        },
        "/v1/registerNonPII": {
            "post": _operation(
                "registerNonPII",
                "Register one record; the caller builds the barcode",
                {200: RegistrationResult, 201: RegistrationResult},
                RegisterNonPiiRequest,
                (E.VALIDATION_FAILED, E.CONFLICT, E.IV_REUSED, *COMMON),
                ISSUER,
            )
        },
        "/v1/registerNonPIIBatch": {
            "post": _operation(
                "registerNonPIIBatch",
                "Register up to 1,000 records",
                {200: BatchResult},
                BatchRequest,
                (E.VALIDATION_FAILED, *COMMON),
                ISSUER,
            )
        },
        "/v1/registerAndBuildBarcode": {
            "post": _operation(
                "registerAndBuildBarcode",
                "Register one record and receive a PNG badge",
                {201: BarcodeResult},
                RegisterAndBuildRequest,
                (E.VALIDATION_FAILED, E.IV_REUSED, *COMMON),
                ISSUER,
            )
        },
        "/v1/records/{reference}/revoke": {
            "post": _operation(
                "revokeRecord",
                "Revoke one of the issuer's records",
                {200: RevocationResult},
                None,
                NOT_FOUND_TOO,
                ISSUER,
            )
        },
        "/admin/v1/clients/{client_id}/pairings": {
            "post": _operation(
                "pairVerifier",
                "A one-time link that gives a phone its own verifier credential",
                {201: PairingOffer},
                None,
                NOT_FOUND_TOO,
                ADMIN,
            )
        },
        "/v1/pairings/redeem": {
            "post": _operation(
                "redeemPairing",
                "Use a pairing code once: a new verifier client for this phone",
                {200: PairedClient},
                PairingRedeemRequest,
                (E.VALIDATION_FAILED, *(c for c in COMMON if c is not E.FORBIDDEN)),
                None,
            )
        },
        "/admin/v1/issuers": {
            "post": _operation(
                "createIssuer",
                "Create an issuer with credentials and a first key",
                {201: IssuerCreated},
                None,
                (E.VALIDATION_FAILED, *COMMON),
                ADMIN,
            )
        },
        "/admin/v1/verifiers": {
            "post": _operation(
                "createVerifier",
                "Create a verifier with credentials",
                {201: VerifierCreated},
                None,
                (E.VALIDATION_FAILED, *COMMON),
                ADMIN,
            )
        },
        "/admin/v1/issuers/{issuer_id}/keys": {
            "post": _operation(
                "rotateKey", "Rotate an issuer's key", {201: KeyCreated}, None, NOT_FOUND_TOO, ADMIN
            )
        },
        "/admin/v1/keys/{key_version}/retire": {
            "post": _operation(
                "retireKey", "Retire a key version", {200: KeyRetired}, None, NOT_FOUND_TOO, ADMIN
            )
        },
        "/admin/v1/clients/{client_id}/disable": {
            "post": _operation(
                "disableClient",
                "Disable a client",
                {200: ClientDisabled},
                None,
                NOT_FOUND_TOO,
                ADMIN,
            )
        },
        "/admin/v1/overview": {
            "get": _operation(
                "overview",
                "Issuers, verifiers, clients, keys and record counts",
                {200: Overview},
                None,
                COMMON,
                ADMIN,
            )
        },
        "/healthz": {
            "get": _operation("healthz", "Liveness", {200: HealthStatus}, None, ANY_ROUTE, None)
        },
        "/readyz": {
            "get": _operation(
                "readyz",
                "Readiness: the store answers",
                {200: HealthStatus},
                None,
                (*ANY_ROUTE, E.SERVICE_UNAVAILABLE),
                None,
            )
        },
        "/openapi.json": {
            "get": _operation("openapi", "This document", {200: None}, None, ANY_ROUTE, None)
        },
    }


def build_openapi(config: ServiceConfig) -> dict[str, Any]:
    components = schemas.openapi_components()
    components.update(schemas.response_components())
    components.update(error_components())
    paths = _paths()
    for path, item in paths.items():
        params = [p.strip("{}") for p in path.split("/") if p.startswith("{")]
        if params:
            for operation in item.values():
                operation["parameters"] = [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in params
                ]
                operation["responses"].update(
                    error_responses([*_codes(operation, E.NOT_FOUND.status), E.NOT_FOUND])
                )
    return {
        "openapi": "3.1.0",
        "info": {"title": "Payslip Verify", "version": "1"},
        "servers": [{"url": config.public_url}],
        "paths": paths,
        "components": {
            "schemas": components,
            "responses": {
                name: _error_response([code], when) for name, (code, when) in UNROUTED.items()
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
