"""The one place where an error becomes an HTTP response (PROTOCOL §6)."""

from __future__ import annotations

import json
from typing import Any

from service.domain.errors import TITLES, ServiceError

STATUS: dict[str, int] = {
    "VALIDATION_FAILED": 400,
    "DECRYPTION_FAILED": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "SERVICE_REFERENCE_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "CONFLICT": 409,
    "IV_REUSED": 409,
    "KEY_VERSION_UNAVAILABLE": 410,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "SERVICE_UNAVAILABLE": 503,
}


def error_body(error: ServiceError) -> dict[str, Any]:
    body: dict[str, Any] = {
        "error": error.oauth_error or TITLES.get(error.code, error.code),
        "code": error.code,
        "detail": error.detail,
    }
    if error.reason:
        body["reason"] = error.reason
    if error.field_errors:
        body["field_errors"] = [{"path": f.path, "message": f.message} for f in error.field_errors]
    return body


def error_headers(error: ServiceError) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Cache-Control": "no-store"}
    if error.code == "UNAUTHORIZED":
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    if error.code in ("RATE_LIMITED", "SERVICE_UNAVAILABLE"):
        headers["Retry-After"] = str(max(1, error.retry_after or 1))
    return headers


def error_json(error: ServiceError) -> bytes:
    return json.dumps(error_body(error)).encode("utf-8")


def internal_error() -> ServiceError:
    return ServiceError("INTERNAL_ERROR", "an unexpected error occurred; quote the request id")
