"""What one API route declares (`Route`): everything the Bottle app's routing and the OpenAPI
document need to know of it. The routes themselves are `service.http.routes.ROUTES`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from service.composition.config import BodyLimits
from service.http.handlers import Context, RouteHandler
from service.http.pipeline import Call, Handler, Reply
from service.protocol.errors import ErrorCode

BodyLimit = Literal["token", "verify", "single", "batch", "admin"]
"""Which of the instance's body limits (`ServiceConfig.body_limits`) holds a route's body."""

_PARAMETER = re.compile(r"<(\w+)(?::[^>]*)?>")


@dataclass(frozen=True, slots=True)
class Route:
    """One API route. `options` is what the request pipeline (`ApiPlugin`) and the server's
    preflight read from the Bottle route; everything else is what the document says of it."""

    method: str
    path: str
    """Bottle's rule: `/v1/records/<reference>/revoke`."""
    handler: RouteHandler
    operation_id: str
    summary: str
    response: type[BaseModel] | None
    """The success body's model; None only for /openapi.json, any JSON object."""
    errors: tuple[ErrorCode, ...]
    """Every code the route answers with (NOT_FOUND for its path: `error_codes`)."""
    statuses: tuple[int, ...] = (200,)
    """The success statuses, all with `response`."""
    request: type[BaseModel] | None = None
    """The body as the document shows it; None: no documented body."""
    description: str = ""
    """More than the summary, where the document needs it."""
    scope: str | None = None
    """The bearer token's scope the route requires; None: an open route."""
    body: BodyLimit | None = None
    """The pipeline reads a JSON body up to this limit before the handler runs."""
    optional_body: bool = False
    """No body at all is accepted too (`Call.body` is then None)."""
    own_body: BodyLimit | None = None
    """The handler reads the body itself (the token endpoint: JSON or form); the server holds
    it to this limit before the app sees it."""
    batch: bool = False
    """Takes one of the instance's concurrent-batch slots."""
    token_ip_limit: bool = False
    """Also counts against the per-IP limit of credential guessing (token and pairing codes)."""
    oauth_errors: bool = False
    """Every refusal carries OAuth's error value and `error_description` (RFC 6749 §5.2), the
    pipeline's own ones (rate limits, body, failures) too: the token endpoint."""
    reads_client: bool = False
    """The handler reads the caller's client state with its own store read (verify: one round
    trip for everything), so the token check skips that lookup."""

    @property
    def template(self) -> str:
        """The path as the OpenAPI document writes it: `/v1/records/{reference}/revoke`."""
        return _PARAMETER.sub(r"{\1}", self.path)

    @property
    def parameters(self) -> list[str]:
        return _PARAMETER.findall(self.path)

    @property
    def error_codes(self) -> tuple[ErrorCode, ...]:
        """`errors`, and NOT_FOUND on a parameterised path: a parameter holding `/` reaches no
        route, and is answered as an unknown path is."""
        return (*self.errors, ErrorCode.NOT_FOUND) if self.parameters else self.errors

    def bound(self, context: Context) -> Handler:
        """The handler in the pipeline's shape, with this app's context."""
        handler = self.handler

        def call(request: Call) -> Reply:
            return handler(context, request)

        return call

    def options(self, limits: BodyLimits) -> dict[str, Any]:
        """The Bottle route config: only what is set, as the pipeline reads presence."""
        found = {
            "scope": self.scope,
            "body_limit": getattr(limits, self.body) if self.body else None,
            "optional_body": self.optional_body,
            "batch": self.batch,
            "token_ip_limit": self.token_ip_limit,
            "preflight_limit": getattr(limits, self.own_body) if self.own_body else None,
            "reads_client": self.reads_client,
            "oauth_errors": self.oauth_errors,
        }
        return {key: value for key, value in found.items() if value}
