"""What each API route does: turn its body into a validated value (`service.http.inputs`), call
one domain function and hand the response model to the pipeline, which sends it.

Handlers are plain module-level functions of the instance's `Context` and the pipeline's `Call`;
which path, method, scope and limits lead to each is declared once, in `service.http.routes`.
They hold no business logic and no HTTP plumbing (the pipeline does that, `service.http.pipeline`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import bottle

from service.composition.config import BodyLimits
from service.domain.context import Domain
from service.domain.errors import ServiceError
from service.domain.tokens import Principal
from service.http.body import parse_json, read_body
from service.http.client_auth import challenged, with_client_credentials
from service.http.environ import OUTCOME_KEY
from service.http.inputs import (
    name_of,
    pairing_days,
    pairing_redemption,
    revocation_reason,
    validated,
)
from service.http.metrics import BATCH_RECORDS
from service.http.pipeline import Call, Reply
from service.http.shared_limits import SharedState
from service.protocol.errors import ErrorCode
from service.protocol.schemas import (
    BatchEnvelope,
    HealthStatus,
    Jwks,
    RegisterAndBuildRequest,
    RegisterNonPiiRequest,
    VerifyRequest,
)

NO_STORE = (("Cache-Control", "no-store"),)


@dataclass(frozen=True, slots=True)
class Context:
    """What the handlers of one app share: the domain, the body limits (the token endpoint
    reads its own body), Redis for /readyz (None: the limits live in this process) and the
    OpenAPI document, built once."""

    domain: Domain
    limits: BodyLimits
    shared: SharedState | None
    document: dict[str, Any]


RouteHandler = Callable[[Context, Call], Reply]


def _principal(call: Call) -> Principal:
    assert call.principal is not None
    return call.principal


# --- token endpoint -------------------------------------------------------------------------


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


def token(context: Context, call: Call) -> Reply:
    authorization = bottle.request.environ.get("HTTP_AUTHORIZATION")
    params = with_client_credentials(_token_params(context.limits.token), authorization)
    try:
        return Reply(200, context.domain.tokens.grant(params), NO_STORE)
    except ServiceError as error:
        raise challenged(error, authorization) from None


def jwks(context: Context, call: Call) -> Reply:
    """The token keys in use, then every receipt key there ever was (PROTOCOL §11)."""
    domain = context.domain
    return Reply(200, Jwks(keys=[*domain.tokens.jwks().keys, *domain.receipt_keys.jwks()]))


# --- issuer API -----------------------------------------------------------------------------


def register_non_pii(context: Context, call: Call) -> Reply:
    request = validated(RegisterNonPiiRequest, call.body)
    result, created = context.domain.registration.register_non_pii(_principal(call), request)
    return Reply(201 if created else 200, result)


def register_batch(context: Context, call: Call) -> Reply:
    request = validated(BatchEnvelope, call.body)
    result = context.domain.registration.register_batch(_principal(call), request)
    BATCH_RECORDS.observe(len(result.results))
    return Reply(200, result)


def register_and_build(context: Context, call: Call) -> Reply:
    request = validated(RegisterAndBuildRequest, call.body)
    return Reply(201, context.domain.registration.register_and_build(_principal(call), request))


def revoke(context: Context, call: Call) -> Reply:
    reason = revocation_reason(call.body)
    revoked = context.domain.revocation.revoke(_principal(call), call.args["reference"], reason)
    return Reply(200, revoked)


# --- verifier API ---------------------------------------------------------------------------


def verify(context: Context, call: Call) -> Reply:
    result = context.domain.verification.verify_request(
        validated(VerifyRequest, call.body), _principal(call).client_id
    )
    # A metrics label (verified, revoked or the error code), not a desk verdict.
    bottle.request.environ[OUTCOME_KEY] = "verified" if result.verified else "revoked"
    return Reply(200, result, NO_STORE)


def receipt(context: Context, call: Call) -> Reply:
    """verifyPayload's pipeline and checks, answered with a signed receipt (PROTOCOL §11)."""
    issued = context.domain.receipts.issue(
        validated(VerifyRequest, call.body), _principal(call).client_id
    )
    return Reply(200, issued, NO_STORE)


# --- pairing (service.domain.pairing) --------------------------------------------------------


def pair(context: Context, call: Call) -> Reply:
    days = pairing_days(call.body)
    offer = context.domain.pairings.create(call.args["client_id"], days=days)
    return Reply(201, offer, NO_STORE)


def redeem(context: Context, call: Call) -> Reply:
    code, device_name = pairing_redemption(call.body)
    return Reply(200, context.domain.pairings.redeem(code, device_name), NO_STORE)


# --- admin API ------------------------------------------------------------------------------


def create_issuer(context: Context, call: Call) -> Reply:
    return Reply(201, context.domain.admin.create_issuer(name_of(call.body)), NO_STORE)


def create_verifier(context: Context, call: Call) -> Reply:
    return Reply(201, context.domain.admin.create_verifier(name_of(call.body)), NO_STORE)


def rotate_key(context: Context, call: Call) -> Reply:
    return Reply(201, context.domain.admin.rotate_key(call.args["issuer_id"]), NO_STORE)


def retire_key(context: Context, call: Call) -> Reply:
    return Reply(200, context.domain.admin.retire_key(call.args["key_version"]))


def disable_client(context: Context, call: Call) -> Reply:
    admin = context.domain.admin
    return Reply(200, admin.disable_client(call.args["client_id"], keep_an_admin=True))


def overview(context: Context, call: Call) -> Reply:
    return Reply(200, context.domain.admin.overview(), NO_STORE)


# --- operations -----------------------------------------------------------------------------


def healthz(context: Context, call: Call) -> Reply:
    return Reply(200, HealthStatus(status="ok"))


def readyz(context: Context, call: Call) -> Reply:
    if not context.domain.store.ping():
        raise ServiceError(
            ErrorCode.SERVICE_UNAVAILABLE,
            "the store cannot read or write (database down, or the disk is full)",
            retry_after=5,
        )
    shared = context.shared
    if shared is None:
        return Reply(200, HealthStatus(status="ready"))
    if shared.ping():
        return Reply(200, HealthStatus(status="ready", redis="ok"))
    if shared.fail_closed:
        raise ServiceError(ErrorCode.SERVICE_UNAVAILABLE, "Redis does not answer", retry_after=5)
    # Failing open, the service works without Redis: taking every host out of the load
    # balancer over it would turn a lost limit into an outage.
    return Reply(200, HealthStatus(status="ready", redis="unreachable; limits fail open"))


def openapi(context: Context, call: Call) -> Reply:
    return Reply(200, context.document)
