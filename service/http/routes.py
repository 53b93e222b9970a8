"""The API's routes, each declared once: method and path, the handler (`service.http.handlers`),
the models it takes and answers with, the error codes it can answer with, its scope and body
limit, and its summary.

Both the Bottle app's routing (`add_routes`) and the OpenAPI document's paths
(`service.http.openapi`) are built from `ROUTES`, so the document cannot describe a route, a
model or an error response the app does not have, nor miss one it has. The error codes are the
protocol's (`service.protocol.errors.ErrorCode`, with their statuses and titles); a route names
the ones it answers with, the document only lays them out.
"""

from __future__ import annotations

import bottle

from service.domain.clients import ROLE_SCOPES
from service.http import handlers
from service.http.handlers import Context
from service.http.route import Route
from service.protocol.errors import ErrorCode
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
    PairingRequest,
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

ISSUER, VERIFIER, ADMIN = ROLE_SCOPES["issuer"], ROLE_SCOPES["verifier"], ROLE_SCOPES["admin"]

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

NOT_FOUND_TOO: tuple[ErrorCode, ...] = (E.VALIDATION_FAILED, E.SERVICE_REFERENCE_NOT_FOUND, *COMMON)
"""A route whose path names something (a record, an issuer, a key, a client)."""

UNROUTED: dict[str, tuple[ErrorCode, str]] = {
    "NotFound": (E.NOT_FOUND, "A path not in this document"),
    "MethodNotAllowed": (E.METHOD_NOT_ALLOWED, "A method the path does not accept"),
}
"""`components.responses` for requests that reach no operation (a path not in this document, or
a method the path does not accept): the same error object. A path parameter holding `/` matches
no route either, so parameterised operations list NOT_FOUND beside their own 404
(`Route.error_codes`)."""

ROUTES: tuple[Route, ...] = (
    # --- token endpoint ---------------------------------------------------------------------
    Route(
        "POST",
        "/oauth/token",
        handlers.token,
        "token",
        "Exchange client credentials for an access token",
        TokenResponse,
        (E.VALIDATION_FAILED, *COMMON),
        request=TokenRequest,
        # One body in the document: a second media type for the same parameters broke
        # generated clients (openapi-python-client 0.29: `NameError: Unset`), so the form
        # encoding is said in words.
        description="The body is JSON (spec.md) or, with the same parameters, "
        "application/x-www-form-urlencoded (RFC 6749 §4.4); the client id and secret may come "
        "as HTTP Basic credentials instead (RFC 6749 §2.3.1). A refusal carries OAuth's "
        "`error` value and `error_description` (RFC 6749 §5.2) beside `code` and `detail`.",
        own_body="token",
        token_ip_limit=True,
        oauth_errors=True,
    ),
    Route(
        "GET",
        "/.well-known/jwks.json",
        handlers.jwks,
        "jwks",
        "Public keys that sign access tokens",
        Jwks,
        (*ANY_ROUTE, E.SERVICE_UNAVAILABLE),
    ),
    # --- verifier API -----------------------------------------------------------------------
    Route(
        "POST",
        "/v1/verifications/payload",
        handlers.verify,
        "verifyPayload",
        "Authenticate, decrypt and verify a barcode text",
        VerificationResult,
        (
            E.VALIDATION_FAILED,
            E.DECRYPTION_FAILED,
            E.SERVICE_REFERENCE_NOT_FOUND,
            E.KEY_VERSION_UNAVAILABLE,
            *COMMON,
        ),
        request=VerifyRequest,
        scope=VERIFIER,
        body="verify",
        reads_client=True,
    ),
    Route(
        "POST",
        "/v1/verifications/receipt",
        handlers.receipt,
        "verificationReceipt",
        "Verify a barcode text as verifyPayload does and answer with a signed receipt "
        "(also for a revoked, unknown or altered code)",
        ReceiptResult,
        (E.VALIDATION_FAILED, *COMMON),
        request=VerifyRequest,
        scope=VERIFIER,
        body="verify",
        reads_client=True,
    ),
    # --- issuer API -------------------------------------------------------------------------
    Route(
        "POST",
        "/v1/registerNonPII",
        handlers.register_non_pii,
        "registerNonPII",
        "Register one record; the caller builds the barcode",
        RegistrationResult,
        (E.VALIDATION_FAILED, E.CONFLICT, E.IV_REUSED, *COMMON),
        statuses=(200, 201),
        request=RegisterNonPiiRequest,
        scope=ISSUER,
        body="single",
    ),
    Route(
        "POST",
        "/v1/registerNonPIIBatch",
        handlers.register_batch,
        "registerNonPIIBatch",
        "Register up to 1,000 records",
        BatchResult,
        (E.VALIDATION_FAILED, *COMMON),
        request=BatchRequest,
        scope=ISSUER,
        body="batch",
        batch=True,
    ),
    Route(
        "POST",
        "/v1/registerAndBuildBarcode",
        handlers.register_and_build,
        "registerAndBuildBarcode",
        "Register one record and receive a PNG badge",
        BarcodeResult,
        (E.VALIDATION_FAILED, E.IV_REUSED, *COMMON),
        statuses=(201,),
        request=RegisterAndBuildRequest,
        scope=ISSUER,
        body="single",
    ),
    Route(
        "POST",
        "/v1/records/<reference>/revoke",
        handlers.revoke,
        "revokeRecord",
        "Revoke one of the issuer's records",
        RevocationResult,
        NOT_FOUND_TOO,
        scope=ISSUER,
        body="admin",
        optional_body=True,
    ),
    # --- pairing a phone (service.domain.pairing) -------------------------------------------
    Route(
        "POST",
        "/admin/v1/clients/<client_id>/pairings",
        handlers.pair,
        "pairVerifier",
        "A one-time link that gives a phone its own verifier credential",
        PairingOffer,
        NOT_FOUND_TOO,
        statuses=(201,),
        scope=ADMIN,
        request=PairingRequest,
        body="admin",
        optional_body=True,
    ),
    Route(
        "POST",
        "/v1/pairings/redeem",
        handlers.redeem,
        "redeemPairing",
        "Use a pairing code once: a new verifier client for this phone",
        PairedClient,
        (E.VALIDATION_FAILED, *(code for code in COMMON if code is not E.FORBIDDEN)),
        request=PairingRedeemRequest,
        body="token",
        token_ip_limit=True,
    ),
    # --- admin API --------------------------------------------------------------------------
    Route(
        "POST",
        "/admin/v1/issuers",
        handlers.create_issuer,
        "createIssuer",
        "Create an issuer with credentials and a first key",
        IssuerCreated,
        (E.VALIDATION_FAILED, *COMMON),
        statuses=(201,),
        scope=ADMIN,
        body="admin",
    ),
    Route(
        "POST",
        "/admin/v1/verifiers",
        handlers.create_verifier,
        "createVerifier",
        "Create a verifier with credentials",
        VerifierCreated,
        (E.VALIDATION_FAILED, *COMMON),
        statuses=(201,),
        scope=ADMIN,
        body="admin",
    ),
    Route(
        "POST",
        "/admin/v1/issuers/<issuer_id>/keys",
        handlers.rotate_key,
        "rotateKey",
        "Rotate an issuer's key",
        KeyCreated,
        NOT_FOUND_TOO,
        statuses=(201,),
        scope=ADMIN,
        body="admin",
        optional_body=True,
    ),
    Route(
        "POST",
        "/admin/v1/keys/<key_version>/retire",
        handlers.retire_key,
        "retireKey",
        "Retire a key version",
        KeyRetired,
        NOT_FOUND_TOO,
        scope=ADMIN,
        body="admin",
        optional_body=True,
    ),
    Route(
        "POST",
        "/admin/v1/clients/<client_id>/disable",
        handlers.disable_client,
        "disableClient",
        "Disable a client (never the last enabled admin client: CONFLICT)",
        ClientDisabled,
        (E.CONFLICT, *NOT_FOUND_TOO),
        scope=ADMIN,
        body="admin",
        optional_body=True,
    ),
    Route(
        "GET",
        "/admin/v1/overview",
        handlers.overview,
        "overview",
        "Issuers, verifiers, clients, keys and record counts",
        Overview,
        COMMON,
        scope=ADMIN,
    ),
    # --- operations -------------------------------------------------------------------------
    Route("GET", "/healthz", handlers.healthz, "healthz", "Liveness", HealthStatus, ANY_ROUTE),
    Route(
        "GET",
        "/readyz",
        handlers.readyz,
        "readyz",
        "Readiness: the store answers",
        HealthStatus,
        (*ANY_ROUTE, E.SERVICE_UNAVAILABLE),
    ),
    Route("GET", "/openapi.json", handlers.openapi, "openapi", "This document", None, ANY_ROUTE),
)
"""Every API route, in the order the OpenAPI document lists them."""


def add_routes(app: bottle.Bottle, context: Context) -> None:
    """Route every declared route to its handler, with the options the pipeline reads."""
    for route in ROUTES:
        app.route(
            route.path,
            route.method,
            route.bound(context),
            **route.options(context.limits),
        )
