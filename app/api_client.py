"""Where `ApiClient` used to live; kept so existing imports keep working.

The client is now the package `app.api` (token auth, retry policy, the wire exchange and the
operations in separate modules); import from there in new code.
"""

from app.api import (
    SCOPE_ADMIN,
    SCOPE_ISSUER,
    SCOPE_VERIFIER,
    ApiClient,
    ApiError,
    Conflict,
    DecryptionFailed,
    EndpointNotFound,
    FieldError,
    Forbidden,
    InternalError,
    InvalidResponse,
    IvReused,
    KeyVersionUnavailable,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    ServiceUnreachable,
    Unauthorized,
    UnsupportedMediaType,
    ValidationFailed,
)

__all__ = [
    "SCOPE_ADMIN",
    "SCOPE_ISSUER",
    "SCOPE_VERIFIER",
    "ApiClient",
    "ApiError",
    "Conflict",
    "DecryptionFailed",
    "EndpointNotFound",
    "FieldError",
    "Forbidden",
    "InternalError",
    "InvalidResponse",
    "IvReused",
    "KeyVersionUnavailable",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServiceUnavailable",
    "ServiceUnreachable",
    "Unauthorized",
    "UnsupportedMediaType",
    "ValidationFailed",
]
