"""The OpenAPI 3.1 document, generated from the same pydantic models that validate requests.

Error responses come from the protocol's vocabulary: each operation names the `ErrorCode`s it
can answer with, the statuses are theirs, and every error response's schema is the protocol's
`ErrorBody` narrowed to those codes (spec "Errors": allowed `code` values per error response).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from service.config import ServiceConfig
from service.protocol import schemas
from service.protocol.errors import ErrorBody, ErrorCode
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


_RESPONSE_SCHEMAS: dict[str, Any] = {
    "TokenRequest": {
        "type": "object",
        "description": "PROTOCOL §7: JSON or form-encoded; unknown parameters are ignored.",
        "required": ["grant_type", "client_id", "client_secret", "audience"],
        "properties": {
            "grant_type": {"enum": ["client_credentials"]},
            "client_id": {"type": "string", "minLength": 1, "maxLength": 256},
            "client_secret": {"type": "string", "minLength": 1, "maxLength": 256},
            "audience": {"type": "string", "minLength": 1, "maxLength": 2048},
            "scope": {"enum": ["service:issuer", "service:verifier", "service:admin"]},
        },
    },
    "TokenResponse": {
        "type": "object",
        "required": ["access_token", "token_type", "expires_in", "scope"],
        "properties": {
            "access_token": {"type": "string"},
            "token_type": {"const": "Bearer"},
            "expires_in": {"type": "integer"},
            "scope": {"type": "string"},
        },
    },
    "PairingRedeemRequest": {
        "type": "object",
        "description": "A phone's one-time pairing code (the fragment of its pairing link).",
        "required": ["pairing_code"],
        "additionalProperties": False,
        "properties": {
            "pairing_code": {
                "type": "string",
                "pattern": "^[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]{43}$",
            },
            "device_name": {"type": "string", "maxLength": 60},
        },
    },
    "ReferenceResponse": {
        "type": "object",
        "required": ["service_reference"],
        "properties": {"service_reference": {"type": "string", "pattern": "^[A-Za-z0-9_-]{22}$"}},
    },
    "BarcodeResponse": {
        "type": "object",
        "required": ["service_reference", "barcode"],
        "properties": {
            "service_reference": {"type": "string", "pattern": "^[A-Za-z0-9_-]{22}$"},
            "barcode": {
                "type": "object",
                "required": ["format", "data"],
                "properties": {
                    "format": {"const": "png"},
                    "data": {"type": "string", "contentEncoding": "base64"},
                },
            },
        },
    },
    "BatchResponse": {
        "type": "object",
        "required": ["results"],
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["status"],
                    "properties": {
                        "status": {"enum": ["created", "duplicate", "error"]},
                        "service_reference": {"type": "string"},
                        "external_id": {"type": "string"},
                        "code": {"enum": [E.VALIDATION_FAILED, E.CONFLICT, E.IV_REUSED]},
                        "detail": {"type": "string"},
                    },
                },
            }
        },
    },
    "VerificationResult": {
        "type": "object",
        "required": ["verified", "service_reference", "payslip", "employee", "decrypted_at"],
        "properties": {
            "verified": {"type": "boolean"},
            "service_reference": {"type": "string", "pattern": "^[A-Za-z0-9_-]{22}$"},
            "payslip": {
                "type": "object",
                "required": ["schema", "issued_at", "payslip_non_pii", "status", "issuer"],
                "properties": {
                    "schema": {"type": "string"},
                    "issued_at": {"type": "string", "format": "date-time"},
                    "payslip_non_pii": {"type": "object"},
                    "status": {"enum": ["active", "revoked"]},
                    "issuer": {
                        "type": "object",
                        "properties": {
                            "issuer_id": {"type": "string"},
                            "name": {"type": "string"},
                        },
                    },
                    "registered_at": {"type": "string", "format": "date-time"},
                    "revoked_at": {"type": "string", "format": "date-time"},
                },
            },
            "employee": {"type": "object", "additionalProperties": {"type": "string"}},
            "decrypted_at": {"type": "string", "format": "date-time"},
        },
    },
    "Revocation": {
        "type": "object",
        "properties": {
            "service_reference": {"type": "string"},
            "status": {"const": "revoked"},
            "revoked_at": {"type": "string", "format": "date-time"},
        },
    },
    "AnyObject": {"type": "object"},
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _operation(
    op_id: str,
    summary: str,
    ok: dict[int, str],
    request: str | None,
    errors: tuple[ErrorCode, ...],
    security: str | None,
    form: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(status): {
            "description": "success",
            "content": {"application/json": {"schema": _ref(schema)}},
        }
        for status, schema in ok.items()
    }
    responses.update(error_responses(errors))
    operation: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if request:
        media = (
            ("application/json", "application/x-www-form-urlencoded")
            if form
            else ("application/json",)
        )
        operation["requestBody"] = {
            "required": True,
            "content": {kind: {"schema": _ref(request)} for kind in media},
        }
    if security:
        operation["security"] = [{"bearer": [security]}]
    return operation


def build_openapi(config: ServiceConfig) -> dict[str, Any]:
    components = dict(schemas.openapi_components())
    components.update(error_components())
    components.update(_RESPONSE_SCHEMAS)
    req = _request_names(components)
    paths: dict[str, Any] = {
        "/oauth/token": {
            "post": _operation(
                "token",
                "Exchange client credentials for an access token",
                {200: "TokenResponse"},
                "TokenRequest",
                (E.VALIDATION_FAILED, *COMMON[:-1]),
                None,
                form=True,
            )
        },
        "/.well-known/jwks.json": {
            "get": _operation(
                "jwks",
                "Public keys that sign access tokens",
                {200: "AnyObject"},
                None,
                ANY_ROUTE,
                None,
            )
        },
        "/v1/verifications/payload": {
            "post": _operation(
                "verifyPayload",
                "Authenticate, decrypt and verify a barcode text",
                {200: "VerificationResult"},
                req["verify"],
                (
                    E.VALIDATION_FAILED,
                    E.DECRYPTION_FAILED,
                    E.SERVICE_REFERENCE_NOT_FOUND,
                    E.KEY_VERSION_UNAVAILABLE,
                    *COMMON,
                ),
                "service:verifier",
            )
        },
        "/v1/registerNonPII": {
            "post": _operation(
                "registerNonPII",
                "Register one record; the caller builds the barcode",
                {200: "ReferenceResponse", 201: "ReferenceResponse"},
                req["non_pii"],
                (E.VALIDATION_FAILED, E.CONFLICT, E.IV_REUSED, *COMMON),
                "service:issuer",
            )
        },
        "/v1/registerNonPIIBatch": {
            "post": _operation(
                "registerNonPIIBatch",
                "Register up to 1,000 records",
                {200: "BatchResponse"},
                req["batch"],
                (E.VALIDATION_FAILED, *COMMON),
                "service:issuer",
            )
        },
        "/v1/registerAndBuildBarcode": {
            "post": _operation(
                "registerAndBuildBarcode",
                "Register one record and receive a PNG badge",
                {201: "BarcodeResponse"},
                req["build"],
                (E.VALIDATION_FAILED, E.IV_REUSED, *COMMON),
                "service:issuer",
            )
        },
        "/v1/records/{reference}/revoke": {
            "post": _operation(
                "revokeRecord",
                "Revoke one of the issuer's records",
                {200: "Revocation"},
                None,
                (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON),
                "service:issuer",
            )
        },
        "/admin/v1/clients/{client_id}/pairings": {
            "post": _operation(
                "pairVerifier",
                "A one-time link that gives a phone its own verifier credential",
                {201: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON),
                "service:admin",
            )
        },
        "/v1/pairings/redeem": {
            "post": _operation(
                "redeemPairing",
                "Use a pairing code once: a new verifier client for this phone",
                {200: "AnyObject"},
                "PairingRedeemRequest",
                (E.VALIDATION_FAILED, *(c for c in COMMON if c is not E.FORBIDDEN)),
                None,
            )
        },
        "/admin/v1/issuers": {
            "post": _operation(
                "createIssuer",
                "Create an issuer with credentials and a first key",
                {201: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, *COMMON),
                "service:admin",
            )
        },
        "/admin/v1/verifiers": {
            "post": _operation(
                "createVerifier",
                "Create a verifier with credentials",
                {201: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, *COMMON),
                "service:admin",
            )
        },
        "/admin/v1/issuers/{issuer_id}/keys": {
            "post": _operation(
                "rotateKey",
                "Rotate an issuer's key",
                {201: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON),
                "service:admin",
            )
        },
        "/admin/v1/keys/{key_version}/retire": {
            "post": _operation(
                "retireKey",
                "Retire a key version",
                {200: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON),
                "service:admin",
            )
        },
        "/admin/v1/clients/{client_id}/disable": {
            "post": _operation(
                "disableClient",
                "Disable a client",
                {200: "AnyObject"},
                None,
                (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON),
                "service:admin",
            )
        },
        "/admin/v1/overview": {
            "get": _operation(
                "overview",
                "Issuers, verifiers, clients, keys and record counts",
                {200: "AnyObject"},
                None,
                COMMON,
                "service:admin",
            )
        },
        "/healthz": {
            "get": _operation("healthz", "Liveness", {200: "AnyObject"}, None, ANY_ROUTE, None)
        },
        "/readyz": {
            "get": _operation(
                "readyz",
                "Readiness: the store answers",
                {200: "AnyObject"},
                None,
                (*ANY_ROUTE, E.SERVICE_UNAVAILABLE),
                None,
            )
        },
        "/openapi.json": {
            "get": _operation("openapi", "This document", {200: "AnyObject"}, None, ANY_ROUTE, None)
        },
    }
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


def _request_names(components: dict[str, Any]) -> dict[str, str]:
    """Find the request models among the generated components by their role."""
    wanted = {
        "verify": ("VerifyRequest",),
        "non_pii": ("RegisterNonPiiRequest", "RegisterNonPIIRequest"),
        "batch": ("BatchRequest", "RegisterBatchRequest", "BatchBody"),
        "build": ("RegisterAndBuildRequest", "RegisterAndBuildBarcodeRequest"),
    }
    found: dict[str, str] = {}
    for role, names in wanted.items():
        found[role] = next((n for n in names if n in components), "AnyObject")
    return found
