"""Client authentication at the token endpoint (PROTOCOL §7, RFC 6749 §2.3.1).

A client sends its id and secret either in the body or as HTTP Basic credentials. Basic is the
default of the common OAuth client libraries (authlib's `client_secret_basic`, requests-oauthlib's
`fetch_token`), so without it they cannot get a token as they come. RFC 6749 §2.3.1 has the id and
secret form-urlencoded before they are joined with `:` and base64-encoded, so both are decoded here;
a library that skips the encoding still works, since our ids and secrets are URL-safe.

A client must use one method per request (RFC 6749 §2.3): a secret in the body beside Basic
credentials, or a body `client_id` that is not the Basic one, is `invalid_request`. A body
`client_id` equal to the Basic one is allowed: some clients always send it and it adds no second
credential.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import unquote_plus

from service.domain.errors import ServiceError
from service.protocol.errors import ErrorCode, FieldError

BASIC_CHALLENGE = 'Basic realm="oauth", charset="UTF-8"'


class BasicClientRefused(ServiceError):
    """A refusal of credentials the client sent as HTTP Basic: RFC 6749 §5.2 wants the 401
    to challenge with the scheme the client used, so the headers say `Basic`, not `Bearer`.
    (Body credentials keep `Bearer`: a Basic challenge on a browser's fetch would open the
    browser's own sign-in dialog over the phone page.)"""

    challenge = BASIC_CHALLENGE


def challenged(error: ServiceError, authorization: str | None) -> ServiceError:
    """The token endpoint's refusal as sent: `invalid_client` for Basic credentials challenges
    with Basic; any other error is unchanged."""
    if authorization and error.oauth_error == "invalid_client":
        return BasicClientRefused(error.code, error.detail, oauth_error="invalid_client")
    return error


def _invalid(detail: str) -> ServiceError:
    return ServiceError(
        ErrorCode.VALIDATION_FAILED,
        detail,
        field_errors=[FieldError("", detail)],
        oauth_error="invalid_request",
    )


def basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    """The (client_id, client_secret) of an `Authorization: Basic` header; None when there is no
    Authorization header. Another scheme or an undecodable value is `invalid_request`."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":  # RFC 7235 §2.1: the scheme is case-insensitive
        raise _invalid("the token endpoint takes HTTP Basic client credentials or none")
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise _invalid("the Basic credentials are not base64 of UTF-8 text") from None
    client_id, colon, secret = decoded.partition(":")
    if not colon or not client_id or not secret:
        raise _invalid("the Basic credentials must be client_id:client_secret")
    return unquote_plus(client_id), unquote_plus(secret)


def with_client_credentials(params: dict[str, Any], authorization: str | None) -> dict[str, Any]:
    """`params` with the client's credentials, from the Authorization header when it has Basic
    ones, else as sent in the body."""
    basic = basic_credentials(authorization)
    if basic is None:
        return params
    client_id, secret = basic
    if "client_secret" in params:
        raise _invalid("send the client credentials once: in the Basic header or in the body")
    if "client_id" in params and params["client_id"] != client_id:
        raise _invalid("the body's client_id is not the one in the Basic header")
    return {**params, "client_id": client_id, "client_secret": secret}
