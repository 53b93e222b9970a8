"""The OpenAPI 3.1 document, generated from the same pydantic models that validate requests."""

from __future__ import annotations

from typing import Any

from service.config import ServiceConfig
from service.protocol import schemas

_ERROR_CODES: dict[int, str] = {
    400: "VALIDATION_FAILED (or DECRYPTION_FAILED on verifyPayload)",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "SERVICE_REFERENCE_NOT_FOUND or NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT or IV_REUSED",
    410: "KEY_VERSION_UNAVAILABLE",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED (Retry-After)",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE (Retry-After)",
}

_RESPONSE_SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error", "code"],
        "properties": {
            "error": {"type": "string"},
            "code": {
                "type": "string",
                "enum": sorted(
                    {
                        "VALIDATION_FAILED",
                        "DECRYPTION_FAILED",
                        "UNAUTHORIZED",
                        "FORBIDDEN",
                        "SERVICE_REFERENCE_NOT_FOUND",
                        "CONFLICT",
                        "IV_REUSED",
                        "PAYLOAD_TOO_LARGE",
                        "UNSUPPORTED_MEDIA_TYPE",
                        "KEY_VERSION_UNAVAILABLE",
                        "RATE_LIMITED",
                        "INTERNAL_ERROR",
                        "SERVICE_UNAVAILABLE",
                        "NOT_FOUND",
                        "METHOD_NOT_ALLOWED",
                    }
                ),
            },
            "reason": {"type": "string"},
            "detail": {"type": "string"},
            "field_errors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "message"],
                    "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
                },
            },
        },
    },
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
                        "code": {"enum": ["VALIDATION_FAILED", "CONFLICT", "IV_REUSED"]},
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
    errors: tuple[int, ...],
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
    for status in errors:
        responses[str(status)] = {
            "description": _ERROR_CODES[status],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
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


_COMMON = (401, 403, 413, 415, 429, 500, 503)


def build_openapi(config: ServiceConfig) -> dict[str, Any]:
    components = dict(schemas.openapi_components())
    components.update(_RESPONSE_SCHEMAS)
    req = _request_names(components)
    paths: dict[str, Any] = {
        "/oauth/token": {
            "post": _operation(
                "token",
                "Exchange client credentials for an access token",
                {200: "TokenResponse"},
                "TokenRequest",
                (400, 401, 403, 413, 415, 429, 500),
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
                (429, 500),
                None,
            )
        },
        "/v1/verifications/payload": {
            "post": _operation(
                "verifyPayload",
                "Authenticate, decrypt and verify a barcode text",
                {200: "VerificationResult"},
                req["verify"],
                (400, 404, 410, *_COMMON),
                "service:verifier",
            )
        },
        "/v1/registerNonPII": {
            "post": _operation(
                "registerNonPII",
                "Register one record; the caller builds the barcode",
                {200: "ReferenceResponse", 201: "ReferenceResponse"},
                req["non_pii"],
                (400, 409, *_COMMON),
                "service:issuer",
            )
        },
        "/v1/registerNonPIIBatch": {
            "post": _operation(
                "registerNonPIIBatch",
                "Register up to 1,000 records",
                {200: "BatchResponse"},
                req["batch"],
                (400, *_COMMON),
                "service:issuer",
            )
        },
        "/v1/registerAndBuildBarcode": {
            "post": _operation(
                "registerAndBuildBarcode",
                "Register one record and receive a PNG badge",
                {201: "BarcodeResponse"},
                req["build"],
                (400, 409, *_COMMON),
                "service:issuer",
            )
        },
        "/v1/records/{reference}/revoke": {
            "post": _operation(
                "revokeRecord",
                "Revoke one of the issuer's records",
                {200: "Revocation"},
                None,
                (400, 404, *_COMMON),
                "service:issuer",
            )
        },
        "/admin/v1/clients/{client_id}/pairings": {
            "post": _operation(
                "pairVerifier",
                "A one-time link that gives a phone its own verifier credential",
                {201: "AnyObject"},
                None,
                (400, 404, *_COMMON),
                "service:admin",
            )
        },
        "/v1/pairings/redeem": {
            "post": _operation(
                "redeemPairing",
                "Use a pairing code once: a new verifier client for this phone",
                {200: "AnyObject"},
                "PairingRedeemRequest",
                (400, 401, 413, 415, 429, 500, 503),
                None,
            )
        },
        "/admin/v1/issuers": {
            "post": _operation(
                "createIssuer",
                "Create an issuer with credentials and a first key",
                {201: "AnyObject"},
                None,
                (400, *_COMMON),
                "service:admin",
            )
        },
        "/admin/v1/verifiers": {
            "post": _operation(
                "createVerifier",
                "Create a verifier with credentials",
                {201: "AnyObject"},
                None,
                (400, *_COMMON),
                "service:admin",
            )
        },
        "/admin/v1/issuers/{issuer_id}/keys": {
            "post": _operation(
                "rotateKey",
                "Rotate an issuer's key",
                {201: "AnyObject"},
                None,
                (404, *_COMMON),
                "service:admin",
            )
        },
        "/admin/v1/keys/{key_version}/retire": {
            "post": _operation(
                "retireKey",
                "Retire a key version",
                {200: "AnyObject"},
                None,
                (400, 404, *_COMMON),
                "service:admin",
            )
        },
        "/admin/v1/clients/{client_id}/disable": {
            "post": _operation(
                "disableClient",
                "Disable a client",
                {200: "AnyObject"},
                None,
                (404, *_COMMON),
                "service:admin",
            )
        },
        "/admin/v1/overview": {
            "get": _operation(
                "overview",
                "Issuers, verifiers, clients, keys and record counts",
                {200: "AnyObject"},
                None,
                _COMMON,
                "service:admin",
            )
        },
        "/healthz": {
            "get": _operation("healthz", "Liveness", {200: "AnyObject"}, None, (429, 500), None)
        },
        "/readyz": {
            "get": _operation(
                "readyz",
                "Readiness: the store answers",
                {200: "AnyObject"},
                None,
                (429, 500, 503),
                None,
            )
        },
        "/openapi.json": {
            "get": _operation(
                "openapi", "This document", {200: "AnyObject"}, None, (429, 500), None
            )
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
    return {
        "openapi": "3.1.0",
        "info": {"title": "Payslip Verify", "version": "1"},
        "servers": [{"url": config.public_url}],
        "paths": paths,
        "components": {
            "schemas": components,
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
