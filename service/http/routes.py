"""The routes: each turns its body into a validated value (`service.http.inputs`), calls one
domain function and hands its response model to the pipeline, which sends it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import bottle

from service.composition.config import ServiceConfig
from service.domain.context import Domain
from service.domain.errors import ServiceError
from service.domain.tokens import Principal
from service.http.body import parse_json, read_body
from service.http.client_auth import challenged, with_client_credentials
from service.http.environ import OUTCOME_KEY
from service.http.inputs import name_of, revocation_reason, validated
from service.http.metrics import BATCH_RECORDS
from service.http.openapi import build_openapi
from service.http.pipeline import Call, Reply
from service.http.shared_limits import SharedState
from service.protocol.errors import ErrorCode
from service.protocol.schemas import (
    BatchEnvelope,
    HealthStatus,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    VerifyRequest,
)

ISSUER = "service:issuer"
VERIFIER = "service:verifier"
ADMIN = "service:admin"
NO_STORE = (("Cache-Control", "no-store"),)


def _principal(call: Call) -> Principal:
    assert call.principal is not None
    return call.principal


def _token_params(limit: int) -> dict[str, Any]:
    """JSON (spec) or form encoding (RFC 6749) for the token endpoint."""
    environ = bottle.request.environ
    media = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if media not in ("application/json", "application/x-www-form-urlencoded"):
        raise ServiceError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            "send application/json or application/x-www-form-urlencoded",
            oauth_error="invalid_request",
        )
    raw = read_body(environ, limit)
    if media == "application/json":
        body = parse_json(raw)
        if not isinstance(body, dict):
            raise ServiceError(
                ErrorCode.VALIDATION_FAILED,
                "the body must be a JSON object",
                oauth_error="invalid_request",
            )
        return body
    try:
        return dict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        raise ServiceError(
            ErrorCode.VALIDATION_FAILED,
            "the body is not valid UTF-8",
            oauth_error="invalid_request",
        ) from None


def add_routes(
    app: bottle.Bottle,
    domain: Domain,
    config: ServiceConfig,
    shared: SharedState | None = None,
) -> None:
    """`shared`: the Redis behind the limits of a multi-worker server, checked by /readyz."""
    limits = config.body_limits

    def route(path: str, method: str, handler: Callable[[Call], Reply], **options: Any) -> None:
        app.route(path, method, handler, **options)

    # --- token endpoint ---------------------------------------------------------------------
    def token(call: Call) -> Reply:
        authorization = bottle.request.environ.get("HTTP_AUTHORIZATION")
        params = with_client_credentials(_token_params(limits.token), authorization)
        try:
            return Reply(200, domain.tokens.grant(params), NO_STORE)
        except ServiceError as error:
            raise challenged(error, authorization) from None

    def jwks(call: Call) -> Reply:
        return Reply(200, domain.tokens.jwks())

    route("/oauth/token", "POST", token, token_ip_limit=True, preflight_limit=limits.token)
    route("/.well-known/jwks.json", "GET", jwks)

    # --- issuer API -------------------------------------------------------------------------
    def register_non_pii(call: Call) -> Reply:
        request = validated(RegisterNonPiiRequest, call.body)
        result, created = domain.registration.register_non_pii(_principal(call), request)
        return Reply(201 if created else 200, result)

    def register_batch(call: Call) -> Reply:
        request = validated(BatchEnvelope, call.body)
        result = domain.registration.register_batch(_principal(call), request)
        BATCH_RECORDS.observe(len(result.results))
        return Reply(200, result)

    def register_and_build(call: Call) -> Reply:
        request = validated(RegisterAndBuildRequest, call.body)
        return Reply(201, domain.registration.register_and_build(_principal(call), request))

    def revoke(call: Call) -> Reply:
        reason = revocation_reason(call.body)
        return Reply(
            200, domain.revocation.revoke(_principal(call), call.args["reference"], reason)
        )

    route("/v1/registerNonPII", "POST", register_non_pii, scope=ISSUER, body_limit=limits.single)
    route(
        "/v1/registerNonPIIBatch",
        "POST",
        register_batch,
        scope=ISSUER,
        body_limit=limits.batch,
        batch=True,
    )
    route(
        "/v1/registerAndBuildBarcode",
        "POST",
        register_and_build,
        scope=ISSUER,
        body_limit=limits.single,
    )
    route(
        "/v1/records/<reference>/revoke",
        "POST",
        revoke,
        scope=ISSUER,
        body_limit=limits.admin,
        optional_body=True,
    )

    # --- verifier API -----------------------------------------------------------------------
    def verify(call: Call) -> Reply:
        result = domain.verification.verify_request(
            validated(VerifyRequest, call.body), _principal(call).client_id
        )
        # A metrics label (verified, revoked or the error code), not a desk verdict.
        bottle.request.environ[OUTCOME_KEY] = "verified" if result.verified else "revoked"
        return Reply(200, result, NO_STORE)

    route(
        "/v1/verifications/payload",
        "POST",
        verify,
        scope=VERIFIER,
        body_limit=limits.verify,
        reads_client=True,  # with the record, in verify's one store read
    )

    def receipt(call: Call) -> Reply:
        """verifyPayload's pipeline and checks, answered with a signed receipt (PROTOCOL §11)."""
        issued = domain.receipts.issue(
            validated(VerifyRequest, call.body), _principal(call).client_id
        )
        return Reply(200, issued, NO_STORE)

    route(
        "/v1/verifications/receipt",
        "POST",
        receipt,
        scope=VERIFIER,
        body_limit=limits.verify,
        reads_client=True,
    )

    # --- admin API --------------------------------------------------------------------------
    def create_issuer(call: Call) -> Reply:
        return Reply(201, domain.admin.create_issuer(name_of(call.body)), NO_STORE)

    def create_verifier(call: Call) -> Reply:
        return Reply(201, domain.admin.create_verifier(name_of(call.body)), NO_STORE)

    def rotate_key(call: Call) -> Reply:
        return Reply(201, domain.admin.rotate_key(call.args["issuer_id"]), NO_STORE)

    def retire_key(call: Call) -> Reply:
        return Reply(200, domain.admin.retire_key(call.args["key_version"]))

    def disable_client(call: Call) -> Reply:
        return Reply(200, domain.admin.disable_client(call.args["client_id"]))

    def overview(call: Call) -> Reply:
        return Reply(200, domain.admin.overview(), NO_STORE)

    admin = {"scope": ADMIN, "body_limit": limits.admin}
    route("/admin/v1/issuers", "POST", create_issuer, **admin)
    route("/admin/v1/verifiers", "POST", create_verifier, **admin)
    route("/admin/v1/issuers/<issuer_id>/keys", "POST", rotate_key, optional_body=True, **admin)
    route("/admin/v1/keys/<key_version>/retire", "POST", retire_key, optional_body=True, **admin)
    route(
        "/admin/v1/clients/<client_id>/disable", "POST", disable_client, optional_body=True, **admin
    )
    route("/admin/v1/overview", "GET", overview, scope=ADMIN)

    # --- operations -------------------------------------------------------------------------
    def healthz(call: Call) -> Reply:
        return Reply(200, HealthStatus(status="ok"))

    def readyz(call: Call) -> Reply:
        if not domain.store.ping():
            raise ServiceError(
                ErrorCode.SERVICE_UNAVAILABLE,
                "the store cannot read or write (database down, or the disk is full)",
                retry_after=5,
            )
        if shared is None:
            return Reply(200, HealthStatus(status="ready"))
        if shared.ping():
            return Reply(200, HealthStatus(status="ready", redis="ok"))
        if shared.fail_closed:
            raise ServiceError(
                ErrorCode.SERVICE_UNAVAILABLE, "Redis does not answer", retry_after=5
            )
        # Failing open, the service works without Redis: taking every host out of the load
        # balancer over it would turn a lost limit into an outage.
        return Reply(200, HealthStatus(status="ready", redis="unreachable; limits fail open"))

    document = build_openapi(config)

    def openapi(call: Call) -> Reply:
        return Reply(200, document)

    route("/healthz", "GET", healthz)
    route("/readyz", "GET", readyz)
    route("/openapi.json", "GET", openapi)
