"""Access tokens (PROTOCOL §7): EdDSA JWTs issued for client credentials, checked on every call.

Expiry is checked against the injected clock rather than PyJWT's wall clock so tests can age a
token. A token is also refused the moment its client is disabled, which a self-contained JWT alone
could not do: every request reads the client's current state, here or (verify) together with the
record in the route's one store read.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from service.domain.clients import ROLE_SCOPES, ClientRegistry
from service.domain.clock import Clock
from service.domain.errors import ServiceError
from service.domain.signing_keys import SigningKeys
from service.protocol.encoding import b64url_encode
from service.protocol.errors import ErrorCode, FieldError
from service.protocol.schemas import Jwks, TokenResponse
from service.storage.port import Client

TOKEN_TTL_SECONDS = 900
CLOCK_SKEW_SECONDS = 60
"""How far in the future a token's `iat` may be (another host's clock running ahead)."""
VERIFIED_CACHE_SIZE = 10_000
"""Tokens whose signature was already checked. Signature checks cost ~0.5 ms each in PyJWT, more
than the whole rest of a verification; expiry, scope, audience and the client's state are still
checked on every request."""


@dataclass(frozen=True, slots=True)
class Principal:
    client_id: str
    role: str
    owner_id: str
    scope: str


@dataclass(frozen=True, slots=True)
class Audiences:
    issuer_url: str
    verifier_url: str
    auth_url: str

    def for_scope(self, scope: str) -> str:
        return self.verifier_url if scope == "service:verifier" else self.issuer_url


def _same_url(a: str, b: str) -> bool:
    """Equal up to one trailing `/` on either side (PROTOCOL §7)."""
    return a.removesuffix("/") == b.removesuffix("/")


def _unauthorized(detail: str) -> ServiceError:
    return ServiceError(ErrorCode.UNAUTHORIZED, detail, oauth_error="invalid_token")


INACTIVE_CLIENT = "the client is unknown or disabled"


def _inactive(client: Client | None) -> ServiceError | None:
    """The refusal for a client (as read now) that is unknown or disabled, else None."""
    return _unauthorized(INACTIVE_CLIENT) if client is None or client.disabled else None


def refuse_inactive_client(client: Client | None) -> None:
    """UNAUTHORIZED unless the client (as read now) exists and is enabled."""
    refusal = _inactive(client)
    if refusal is not None:
        raise refusal


class InsufficientScope(ServiceError):
    """FORBIDDEN: a valid token for another scope than the operation's. It names the scope the
    operation needs (`needed`), in its detail and for the HTTP challenge (RFC 6750 §3.1): a
    caller holding the wrong client's token learns which credential to use."""

    def __init__(self, needed: str, held: str) -> None:
        super().__init__(
            ErrorCode.FORBIDDEN,
            f"this operation needs a token with scope {needed}; this token has {held}",
        )
        self.needed = needed


class KeyNotYetKnown(Exception):
    """A token names a signing key the keys as last read do not hold: a rotation made since
    (on another host, or by the CLI) may have added it, and only a store read can tell."""


class TokenService:
    def __init__(
        self,
        signing: SigningKeys,
        audiences: Audiences,
        environment: str,
        clients: ClientRegistry,
        clock: Clock,
        ttl: int = TOKEN_TTL_SECONDS,
    ) -> None:
        self._signing = signing
        self._aud = audiences
        self._env = environment
        self._clients = clients
        self._clock = clock
        self._ttl = ttl
        self._verified: dict[str, tuple[str, dict[str, Any]]] = {}

    def grant(self, params: Mapping[str, Any]) -> TokenResponse:
        """The client-credentials grant. Unknown parameters are ignored (RFC 6749 §3.2), and a
        bad parameter is named by OAuth's error value, so the parameters are read here by those
        rules rather than as a request model (`schemas.TokenRequest` documents them)."""
        grant_type = params.get("grant_type")
        if not grant_type:
            raise _oauth_invalid("invalid_request", "grant_type", "is required")
        if grant_type != "client_credentials":
            raise _oauth_invalid(
                "unsupported_grant_type", "grant_type", "only client_credentials is supported"
            )
        for name in ("client_id", "client_secret", "audience"):
            if not isinstance(params.get(name), str) or not params.get(name):
                raise _oauth_invalid("invalid_request", name, "is required and must be text")
        scope = params.get("scope")
        if scope is not None and not isinstance(scope, str):
            raise _oauth_invalid("invalid_request", "scope", "must be text")
        client = self._clients.authenticate(str(params["client_id"]), str(params["client_secret"]))
        if client is None:
            raise ServiceError(
                ErrorCode.UNAUTHORIZED,
                "unknown client or wrong secret",
                oauth_error="invalid_client",
            )
        own_scope = ROLE_SCOPES[client.role]
        wanted = scope or own_scope
        if wanted != own_scope:
            raise ServiceError(
                ErrorCode.FORBIDDEN,
                f"this client may request only the scope {own_scope}",
                oauth_error="invalid_scope",
            )
        audience = str(params["audience"])
        expected = self._aud.for_scope(wanted)
        if not _same_url(audience, expected):
            # The expected URL is public (`/openapi.json` `servers`): naming it costs nothing and
            # saves the caller a guess.
            raise ServiceError(
                ErrorCode.FORBIDDEN,
                f"the audience for {wanted} must be {expected} (the base URL of its API)",
                oauth_error="invalid_scope",
            )
        now = int(self._clock.now().timestamp())
        claims = {
            "iss": self._aud.auth_url,
            "sub": client.client_id,
            "aud": self._aud.for_scope(wanted),
            "scope": wanted,
            "iat": now,
            "exp": now + self._ttl,
            "jti": b64url_encode(secrets.token_bytes(12)),
            "env": self._env,
        }
        kid, key = self._signing.current()
        token = jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": kid})
        return TokenResponse(
            access_token=token, token_type="Bearer", expires_in=self._ttl, scope=wanted
        )

    def check_token(
        self, authorization: str | None, scope: str, *, cached_keys: bool = False
    ) -> tuple[str, str]:
        """(client id, token scope) of a bearer token valid for `scope`'s API on the token alone:
        signed by a trusted key, unexpired, for this environment, audience and scope; else the
        refusal `authorize` gives for it. Whether the client is still enabled is not looked at:
        that needs the store, and a server's early look at a request's head runs on its I/O
        thread, which must not wait for the store. Such a caller refuses a disabled client
        through `authorize` on the request itself, asks `client_refusal` before any other
        refusal of its own, and passes `cached_keys`: the signing keys as last read, so their
        refresh (due every REFRESH_SECONDS) never reads the store there either. A key those do
        not know when they are not recent (signing_keys.recently_read) may have come with a
        rotation since: `KeyNotYetKnown`, which leaves the verdict to the request's own
        check."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        # RFC 7235 §2.1: the scheme is case-insensitive ("bearer", "BEARER" are the same).
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized("a bearer token is required")
        cached = self._verified.get(token)
        if cached is None:
            cached = self._decode(token, cached_keys)
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = cached
        kid, claims = cached
        if self._signing.public_key(kid, cached=cached_keys) is None:  # dropped since, expired
            raise self._untrusted(kid, cached_keys, "a key that is no longer trusted")
        now = self._clock.now().timestamp()
        exp, iat = claims["exp"], claims["iat"]
        if not isinstance(exp, int | float) or exp <= now:
            raise _unauthorized("the token has expired")
        if not isinstance(iat, int | float) or iat > now + CLOCK_SKEW_SECONDS:
            raise _unauthorized("the token was issued in the future")
        if exp - iat > self._ttl:
            raise _unauthorized("the token lives longer than this service's tokens do")
        if claims.get("env") != self._env:
            raise _unauthorized("the token is for another environment")
        token_scope = str(claims["scope"])
        expected_aud = self._aud.for_scope(scope)
        if token_scope != scope:
            if _same_url(str(claims["aud"]), self._aud.for_scope(token_scope)):
                raise InsufficientScope(scope, token_scope)
            raise _unauthorized("the token's audience is not this API")
        if not _same_url(str(claims["aud"]), expected_aud):
            raise _unauthorized("the token's audience is not this API")
        return str(claims["sub"]), token_scope

    def authorize(
        self, authorization: str | None, scope: str, *, check_client: bool = True
    ) -> Principal:
        """The principal behind a bearer token valid for `scope`'s API, else UNAUTHORIZED or
        FORBIDDEN (a valid token for another scope).

        `check_client=False` leaves "is the client still enabled" to the caller, who must read
        it in the same request and refuse with `refuse_inactive_client` (the verify route reads
        it with the record: one round trip instead of two), and on any other refusal ask
        `client_refusal` first, so a disabled client is always told so."""
        client_id, token_scope = self.check_token(authorization, scope)
        if check_client:
            client = self._clients.active(client_id)
            refuse_inactive_client(client)
            assert client is not None
            principal = Principal(client.client_id, client.role, client.owner_id, token_scope)
        else:
            identity = self._clients.identity(client_id)
            if identity is None:
                raise _unauthorized(INACTIVE_CLIENT)
            principal = Principal(client_id, identity[0], identity[1], token_scope)
        # A token is minted only for its client's own role (`grant`); one whose scope is not
        # the role was not minted here, whoever signed it (issue 37: a verifier `sub` with
        # `service:admin`), so it is refused as a forgery, on every request.
        if ROLE_SCOPES.get(principal.role) != token_scope:
            raise _unauthorized("the token's scope is not its client's role")
        return principal

    def client_refusal(self, client_id: str) -> ServiceError | None:
        """UNAUTHORIZED when the client is unknown or disabled now, else None."""
        return _inactive(self._clients.active(client_id))

    def _untrusted(self, kid: str, cached_keys: bool, what: str) -> Exception:
        """UNAUTHORIZED for a token signed by `what`, unless it was judged by the keys as last
        read and those are not recent: then a rotation since may have made its key trusted."""
        if cached_keys and not self._signing.recently_read():
            return KeyNotYetKnown(kid)
        return _unauthorized(f"the token was signed by {what}")

    def _decode(self, token: str, cached_keys: bool) -> tuple[str, dict[str, Any]]:
        """Check the signature (with the key its `kid` names), issuer and required claims once;
        the claims are then cached by token."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            raise _unauthorized("the token is not valid") from None
        if not isinstance(kid, str):
            raise _unauthorized("the token was signed by an unknown key")
        public = self._signing.public_key(kid, cached=cached_keys)
        if public is None:
            raise self._untrusted(kid, cached_keys, "an unknown key")
        try:
            decoded = jwt.api_jwt.decode_complete(
                token,
                public,
                algorithms=["EdDSA"],
                issuer=self._aud.auth_url,
                options={
                    "verify_aud": False,
                    "verify_exp": False,
                    "verify_iat": False,
                    "require": ["exp", "iat", "sub", "aud", "scope", "iss"],
                },
            )
        except jwt.PyJWTError:
            raise _unauthorized("the token is not valid") from None
        claims: dict[str, Any] = decoded["payload"]
        return str(kid), claims

    def jwks(self) -> Jwks:
        """Every key that verifies tokens now (the current one, and the previous one for a
        token lifetime after a rotation). Receipt keys are published beside them
        (service.domain.receipt_keys); a replaced token key is not: it vouches for nothing."""
        keys = []
        for kid, public in self._signing.published():
            jwk = jwt.algorithms.OKPAlgorithm.to_jwk(public, as_dict=True)
            jwk.update({"kid": kid, "use": "sig", "alg": "EdDSA"})
            keys.append(jwk)
        return Jwks(keys=keys)


def _oauth_invalid(oauth_error: str, field: str, message: str) -> ServiceError:
    return ServiceError(
        ErrorCode.VALIDATION_FAILED,
        f"{field}: {message}",
        field_errors=[FieldError(field, message)],
        oauth_error=oauth_error,
    )
