"""The one HTTP client for the Issuer, Verifier and Admin APIs (spec, PROTOCOL §6-§8).

Both the kiosk app (from worker threads, hence no Qt here) and the issuer library call the service
through this class, so the rules that are easy to get subtly wrong live in exactly one place:

* Tokens: OAuth client credentials, cached per (audience, scope) and refreshed a little before
  expiry, with one in-flight token request per key however many threads ask at once (a thundering
  herd against the token endpoint is what its rate limit punishes). After a 401 from an API call
  the token is dropped and the call is retried once with a fresh one; a second 401 is final.
* Retries: exponential backoff with full jitter (base 0.25 s, cap 8 s), never shorter than an
  integer `Retry-After`, all inside one deadline per logical call: the client never sleeps past it
  and raises instead. Idempotent calls retry on 408/429/500/502/503/504 and network failures.
  `registerAndBuildBarcode` is not idempotent (a lost response means the PII must be re-encrypted
  with a fresh IV, spec), so it only retries when nothing can have been processed: 429, or a
  connection that failed before the request was sent.
* Idempotency: `register_non_pii` and `register_batch` always send a `service_reference`, minted
  once before the first attempt, so a retry of a request whose response was lost is answered as a
  duplicate instead of creating a second record.
* Privacy: exceptions and log lines carry only method, path, status, code and request id. Request
  bodies hold barcodes, ciphertext and secrets, and tokens are bearer credentials, so none of them
  is ever formatted into a message or kept on an exception (see `app.api_errors`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import httpx

from app.api_errors import (
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
    error_class_for,
    fallback_code_for_status,
)
from service.protocol.encoding import new_reference

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

log = logging.getLogger(__name__)

SCOPE_ISSUER: Final = "service:issuer"
SCOPE_VERIFIER: Final = "service:verifier"
SCOPE_ADMIN: Final = "service:admin"

BACKOFF_BASE: Final = 0.25
BACKOFF_CAP: Final = 8.0
#: A token is refreshed this long before it expires (or at half its lifetime if that is shorter),
#: so a token never expires in flight between our clock check and the server's.
REFRESH_MARGIN: Final = 60.0
#: Lifetime assumed when a token response omits a usable `expires_in` (PROTOCOL §7 says 900 s;
#: assuming less only costs an extra token request).
DEFAULT_EXPIRES_IN: Final = 60.0

#: Statuses after which an idempotent request is resent: nothing harmful can come of a resend.
_RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
#: Statuses after which a non-idempotent request is resent: 429 means nothing was processed.
_RETRY_STATUSES_UNSAFE: Final = frozenset({429})


@dataclass(frozen=True, slots=True)
class _Reply:
    """What one HTTP exchange returned, copied out of httpx so no request object survives."""

    status: int
    body: bytes
    content_type: str
    retry_after: int | None
    request_id: str | None


@dataclass(frozen=True, slots=True)
class _NetFailure:
    """One attempt got no response. `sent` is False only when the request surely never left."""

    sent: bool
    what: str


@dataclass(slots=True)
class _Token:
    value: str
    refresh_at: float


def _parse_retry_after(value: str | None) -> int | None:
    """Integer seconds only (spec: "required integer header"); HTTP-dates are ignored."""
    if value is None:
        return None
    value = value.strip()
    if not value.isdigit():
        return None
    return int(value)


def _new_request_id() -> str:
    # 32 hex characters: inside PROTOCOL §6's echo rule (1-128 of [A-Za-z0-9._-]).
    return uuid.uuid4().hex


def _strip_base(url: str) -> str:
    return url[:-1] if url.endswith("/") else url


def _seg(value: str) -> str:
    """Quote one path segment so an id can never add path segments or a query."""
    if value in ("", ".", ".."):
        # These survive quoting and would be resolved as dot-segments, changing the route.
        raise ValueError("not a usable path segment")
    return quote(str(value), safe="")


class ApiClient:
    """Thread-safe synchronous client for the payslip service.

    `auth_url`, `issuer_url` and `verifier_url` are base URLs (PROTOCOL §9: in a single-process
    deployment all three are the same). Only the URLs for the operations actually used are needed:
    a kiosk needs `verifier_url`, an issuer `issuer_url`.

    `scope` forces the scope sent on every token request; by default it is derived from the
    operation (`service:verifier` for verification, `service:issuer` for registration and
    revocation, `service:admin` for admin calls).

    `timeout` bounds each HTTP attempt, `connect_timeout` (default: `timeout`) its TCP connect, and
    `deadline` a whole logical call including token fetches, retries and backoff sleeps: a desk
    that must say CANNOT VERIFY within seconds gives a short deadline, and the client then never
    waits past it, whether the service refuses connections, never accepts them, or accepts and
    never answers. `transport`, `sleep`, `clock` and `rng` exist so tests can inject a
    fault transport, a recording sleep and a fake clock.
    """

    def __init__(
        self,
        auth_url: str,
        client_id: str,
        client_secret: str,
        *,
        issuer_url: str | None = None,
        verifier_url: str | None = None,
        scope: str | None = None,
        timeout: float = 10.0,
        deadline: float = 30.0,
        connect_timeout: float | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if timeout <= 0 or deadline <= 0 or (connect_timeout is not None and connect_timeout <= 0):
            raise ValueError("timeouts and deadline must be positive")
        self._auth_url = _strip_base(auth_url)
        self._client_id = client_id
        self._client_secret = client_secret
        self._issuer_url = _strip_base(issuer_url) if issuer_url else None
        self._verifier_url = _strip_base(verifier_url) if verifier_url else None
        self._scope = scope
        self._timeout = float(timeout)
        self._connect_timeout = float(connect_timeout) if connect_timeout else self._timeout
        self._deadline = float(deadline)
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        # follow_redirects stays off: a redirect would resend the bearer token somewhere else.
        self._http = httpx.Client(transport=transport, follow_redirects=False, trust_env=True)
        self._tokens: dict[tuple[str, str], _Token] = {}
        self._tokens_lock = threading.Lock()
        self._flight_locks: dict[tuple[str, str], threading.Lock] = {}

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close pooled connections."""
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never show the secret (or any token) in a repr that may land in a log or a traceback.
        return f"ApiClient(auth_url={self._auth_url!r}, client_id={self._client_id!r})"

    # ------------------------------------------------------------------ verifier

    def verify_payload(self, barcode: str) -> dict[str, Any]:
        """Verify a barcode text (verifyPayload); returns the verification result.

        Idempotent: the same payload yields the same result, so it is retried freely.
        """
        return self._api_call(
            "POST",
            self._require(self._verifier_url, "verifier_url"),
            "/v1/verifications/payload",
            SCOPE_VERIFIER,
            {"barcode": barcode},
            idempotent=True,
        )[1]

    # ------------------------------------------------------------------ issuer

    def register_non_pii(self, record: Mapping[str, Any]) -> tuple[str, bool]:
        """Register one record (registerNonPII); returns (service_reference, created).

        `created` is False when the service already held an identical record under that
        reference (a retry whose first response was lost). A reference is minted here when the
        record carries none, once, so every retry carries the same one.
        """
        body = dict(record)
        if not body.get("service_reference"):
            body["service_reference"] = new_reference()
        status, data = self._api_call(
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerNonPII",
            SCOPE_ISSUER,
            body,
            idempotent=True,
        )
        ref = data.get("service_reference")
        if not isinstance(ref, str) or not ref:
            ref = body["service_reference"]
        return ref, status == 201

    def register_batch(self, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Register a pay run (registerNonPIIBatch); returns one result item per record, in order.

        Records without a `service_reference` get one minted before the first attempt so the batch
        is idempotent and can be resent after a timeout.
        """
        body_records: list[dict[str, Any]] = []
        for rec in records:
            item = dict(rec)
            if not item.get("service_reference"):
                item["service_reference"] = new_reference()
            body_records.append(item)
        _, data = self._api_call(
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerNonPIIBatch",
            SCOPE_ISSUER,
            {"records": body_records},
            idempotent=True,
        )
        results = data.get("results")
        if (
            not isinstance(results, list)
            or len(results) != len(body_records)
            or not all(isinstance(r, dict) for r in results)
        ):
            raise InvalidResponse(
                "INVALID_RESPONSE", 200, "batch response has no matching results array"
            )
        return results

    def register_and_build_barcode(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Register one record and get the PNG badge (registerAndBuildBarcode).

        Not idempotent: if the response is lost the caller must re-encrypt with a fresh IV, so
        this retries only on 429 and on connections that failed before sending. Any other failure
        (including `ServiceUnreachable` after a send) leaves the outcome to the caller.
        """
        return self._api_call(
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerAndBuildBarcode",
            SCOPE_ISSUER,
            dict(record),
            idempotent=False,
        )[1]

    def revoke(self, reference: str, reason: str | None = None) -> dict[str, Any]:
        """Revoke one of this issuer's records (PROTOCOL §6); repeating it is a no-op."""
        body: dict[str, Any] = {} if reason is None else {"reason": reason}
        return self._api_call(
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            f"/v1/records/{_seg(reference)}/revoke",
            SCOPE_ISSUER,
            body,
            idempotent=True,
        )[1]

    # ------------------------------------------------------------------ admin (PROTOCOL §8)

    def admin_create_issuer(self, name: str) -> dict[str, Any]:
        """Create an issuer; the response holds its client secret and key, shown once.

        Not retried on ambiguous failures: a resend after a lost response would create a second
        issuer.
        """
        return self._admin("POST", "/admin/v1/issuers", {"name": name}, idempotent=False)

    def admin_create_verifier(self, name: str) -> dict[str, Any]:
        """Create a verifier client (not retried on ambiguous failures, as for issuers)."""
        return self._admin("POST", "/admin/v1/verifiers", {"name": name}, idempotent=False)

    def admin_rotate_key(self, issuer_id: str) -> dict[str, Any]:
        """Give an issuer a new key version (no retry on ambiguous failures: each is a new key)."""
        return self._admin(
            "POST", f"/admin/v1/issuers/{_seg(issuer_id)}/keys", {}, idempotent=False
        )

    def admin_retire_key(self, key_version: str) -> dict[str, Any]:
        """Retire a key version; retiring twice is harmless, so it is retried."""
        return self._admin(
            "POST", f"/admin/v1/keys/{_seg(key_version)}/retire", {}, idempotent=True
        )

    def admin_disable_client(self, client_id: str) -> dict[str, Any]:
        """Disable a client and kill its tokens; idempotent, so it is retried."""
        return self._admin(
            "POST", f"/admin/v1/clients/{_seg(client_id)}/disable", {}, idempotent=True
        )

    def admin_pair_verifier(self, client_id: str) -> dict[str, Any]:
        """A one-time phone pairing link for a verifier client (expires in minutes, works once);
        not retried on ambiguous failures: each call makes a new link."""
        return self._admin(
            "POST", f"/admin/v1/clients/{_seg(client_id)}/pairings", None, idempotent=False
        )

    def admin_list(self) -> dict[str, Any]:
        """Issuers, verifiers, keys and record counts (never secrets or key material)."""
        return self._admin("GET", "/admin/v1/overview", None, idempotent=True)

    def _admin(
        self, method: str, path: str, body: dict[str, Any] | None, *, idempotent: bool
    ) -> dict[str, Any]:
        # The admin scope's audience is the issuer URL (PROTOCOL §7).
        return self._api_call(
            method,
            self._require(self._issuer_url, "issuer_url"),
            path,
            SCOPE_ADMIN,
            body,
            idempotent=idempotent,
        )[1]

    # ------------------------------------------------------------------ health

    def healthz(self, base_url: str) -> bool:
        """True when `GET {base_url}/healthz` answers 200 `{"status": "ok"}`; never raises.

        One short attempt without retries or auth: it feeds a status light, which should show the
        truth now rather than after a backoff.
        """
        url = _strip_base(base_url) + "/healthz"
        try:
            resp = self._http.get(url, timeout=min(self._timeout, 5.0))
            if resp.status_code != 200:
                return False
            data = resp.json()
        except (httpx.HTTPError, ValueError):
            return False
        return isinstance(data, dict) and data.get("status") == "ok"

    # ------------------------------------------------------------------ tokens

    def _token(self, audience: str, scope: str, deadline: float) -> str:
        """A cached or fresh access token; concurrent callers share one token request per key."""
        key = (audience, scope)
        with self._tokens_lock:
            cached = self._tokens.get(key)
            if cached is not None and self._clock() < cached.refresh_at:
                return cached.value
            flight = self._flight_locks.setdefault(key, threading.Lock())
        remaining = deadline - self._clock()
        if remaining <= 0 or not flight.acquire(timeout=remaining):
            raise ServiceUnreachable(
                "SERVICE_UNREACHABLE", None, "deadline exhausted waiting for an access token"
            )
        try:
            # Another thread may have fetched it while we waited for the flight lock.
            with self._tokens_lock:
                cached = self._tokens.get(key)
                if cached is not None and self._clock() < cached.refresh_at:
                    return cached.value
            token = self._fetch_token(audience, scope, deadline)
            with self._tokens_lock:
                self._tokens[key] = token
            return token.value
        finally:
            flight.release()

    def _fetch_token(self, audience: str, scope: str, deadline: float) -> _Token:
        started = self._clock()
        _, data = self._call(
            "POST",
            self._auth_url,
            "/oauth/token",
            {
                "grant_type": "client_credentials",
                "client_id": self._client_id,
                "client_secret": self._client_secret,
                "audience": audience,
                "scope": scope,
            },
            request_id=_new_request_id(),
            deadline=deadline,
            idempotent=True,
            auth=None,
        )
        value = data.get("access_token")
        if not isinstance(value, str) or not value:
            raise InvalidResponse("INVALID_RESPONSE", 200, "token response without access_token")
        expires_in_raw = data.get("expires_in")
        if (
            isinstance(expires_in_raw, int | float)
            and not isinstance(expires_in_raw, bool)
            and expires_in_raw > 0
        ):
            expires_in = float(expires_in_raw)
        else:
            expires_in = DEFAULT_EXPIRES_IN
        # Measured from before the request: the server's clock started no earlier than that.
        refresh_at = started + expires_in - min(REFRESH_MARGIN, expires_in / 2)
        return _Token(value, refresh_at)

    def _drop_token(self, audience: str, scope: str, value: str) -> None:
        """Forget a token the server refused, unless another thread already replaced it."""
        key = (audience, scope)
        with self._tokens_lock:
            cached = self._tokens.get(key)
            if cached is not None and cached.value == value:
                del self._tokens[key]

    # ------------------------------------------------------------------ core

    @staticmethod
    def _require(url: str | None, name: str) -> str:
        if not url:
            raise ValueError(f"ApiClient was created without {name}")
        return url

    def _api_call(
        self,
        method: str,
        base: str,
        path: str,
        scope: str,
        body: dict[str, Any] | None,
        *,
        idempotent: bool,
    ) -> tuple[int, dict[str, Any]]:
        """One logical authenticated call: fresh request id, one deadline, token audience = base."""
        deadline = self._clock() + self._deadline
        return self._call(
            method,
            base,
            path,
            body,
            request_id=_new_request_id(),
            deadline=deadline,
            idempotent=idempotent,
            auth=(base, self._scope or scope),
        )

    def _call(
        self,
        method: str,
        base: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        request_id: str,
        deadline: float,
        idempotent: bool,
        auth: tuple[str, str] | None,
    ) -> tuple[int, dict[str, Any]]:
        """Send with retries until success, a final error, or the deadline; returns (status, json).

        Every exception is raised outside any `except` block so it has no `__context__` pointing
        at an httpx exception (which would hold the request, token included).
        """
        content: bytes | None = None
        if body is not None:
            content = self._encode(body)
        retry_statuses = _RETRY_STATUSES if idempotent else _RETRY_STATUSES_UNSAFE
        url = base + path
        attempt = 0
        reauthenticated = False
        last_error: ApiError | None = None
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise last_error or self._deadline_error(method, path, request_id)
            headers = {"Accept": "application/json", "X-Request-ID": request_id}
            if content is not None:
                headers["Content-Type"] = "application/json"
            token: str | None = None
            if auth is not None:
                token = self._token(auth[0], auth[1], deadline)
                headers["Authorization"] = f"Bearer {token}"
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise last_error or self._deadline_error(method, path, request_id)

            outcome = self._send(method, url, content, headers, min(self._timeout, remaining))
            del headers  # holds the bearer token; keep it out of any frame a debugger might dump

            if isinstance(outcome, _Reply) and outcome.status < 400:
                data = self._decode_success(outcome, request_id)
                log.debug("%s %s -> %s [%s]", method, path, outcome.status, request_id)
                return outcome.status, data

            retryable: bool
            error: ApiError
            if isinstance(outcome, _Reply):
                error = self._error_from_reply(outcome, request_id)
                log.info(
                    "%s %s -> %s %s [%s]", method, path, outcome.status, error.code, request_id
                )
                if outcome.status == 401 and auth is not None and token is not None:
                    self._drop_token(auth[0], auth[1], token)
                    if not reauthenticated:
                        # The token may have expired early or been revoked by a key rotation:
                        # one retry with a fresh token, and not counted as a backoff attempt.
                        reauthenticated = True
                        continue
                    raise error
                retryable = outcome.status in retry_statuses
            else:
                error = ServiceUnreachable(
                    "SERVICE_UNREACHABLE",
                    None,
                    f"{method} {path}: {outcome.what}",
                    None,
                    request_id,
                )
                log.info("%s %s -> %s [%s]", method, path, outcome.what, request_id)
                retryable = idempotent or not outcome.sent

            if not retryable:
                raise error
            last_error = error
            delay = self._rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt)))
            if error.retry_after is not None:
                delay = max(delay, float(error.retry_after))
            attempt += 1
            if self._clock() + delay >= deadline:
                # INFO, not WARNING: the caller reports it (a CANNOT VERIFY, one CLI line).
                log.info(
                    "%s %s: giving up after %d attempt(s), deadline reached [%s]",
                    method,
                    path,
                    attempt,
                    request_id,
                )
                raise error
            log.debug("%s %s: retry %d in %.2fs [%s]", method, path, attempt, delay, request_id)
            self._sleep(delay)

    @staticmethod
    def _deadline_error(method: str, path: str, request_id: str) -> ServiceUnreachable:
        return ServiceUnreachable(
            "SERVICE_UNREACHABLE", None, f"{method} {path}: deadline exhausted", None, request_id
        )

    @staticmethod
    def _encode(body: dict[str, Any]) -> bytes:
        # The ValueError is raised outside the handler, without context: json's own message may
        # quote a value from the body.
        with contextlib.suppress(TypeError, ValueError):
            return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
        raise ValueError("request body is not JSON-serialisable")

    def _send(
        self,
        method: str,
        url: str,
        content: bytes | None,
        headers: dict[str, str],
        timeout: float,
    ) -> _Reply | _NetFailure:
        """One HTTP attempt; network failures are returned (not raised) with whether we sent."""
        failure: _NetFailure | None = None
        try:
            resp = self._http.request(
                method,
                url,
                content=content,
                headers=headers,
                # Every phase (connect, each read, write, pool) is cut to what is left of the
                # deadline, so no single attempt can outlive it.
                timeout=httpx.Timeout(timeout, connect=min(timeout, self._connect_timeout)),
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError):
            failure = _NetFailure(sent=False, what="connection failed")
        except httpx.TimeoutException:
            failure = _NetFailure(sent=True, what="timed out waiting for the response")
        except httpx.RemoteProtocolError:
            failure = _NetFailure(sent=True, what="connection dropped")
        except httpx.TransportError:
            failure = _NetFailure(sent=True, what="network error")
        if failure is not None:
            return failure
        ctype = resp.headers.get("Content-Type", "")
        return _Reply(
            status=resp.status_code,
            body=resp.content,
            content_type=ctype,
            retry_after=_parse_retry_after(resp.headers.get("Retry-After")),
            request_id=resp.headers.get("X-Request-ID"),
        )

    @staticmethod
    def _json(reply: _Reply) -> Any:
        try:
            return json.loads(reply.body)
        except (ValueError, UnicodeDecodeError):
            return None

    def _decode_success(self, reply: _Reply, request_id: str) -> dict[str, Any]:
        data = self._json(reply)
        if not isinstance(data, dict):
            raise InvalidResponse(
                "INVALID_RESPONSE",
                reply.status,
                "success response is not a JSON object",
                None,
                reply.request_id or request_id,
            )
        return data

    def _error_from_reply(self, reply: _Reply, request_id: str) -> ApiError:
        data = self._json(reply)
        obj: dict[str, Any] = data if isinstance(data, dict) else {}
        code = obj.get("code")
        if not isinstance(code, str) or not code:
            code = fallback_code_for_status(reply.status)
        text = obj.get("detail") or obj.get("error")
        message = text if isinstance(text, str) and text else f"HTTP {reply.status}"
        field_errors: list[FieldError] = []
        raw_fe = obj.get("field_errors")
        if isinstance(raw_fe, list):
            for item in raw_fe:
                if isinstance(item, dict):
                    field_errors.append(
                        FieldError(
                            path=str(item.get("path", "")), message=str(item.get("message", ""))
                        )
                    )
        reason = obj.get("reason")
        return error_class_for(code)(
            code,
            reply.status,
            message,
            field_errors,
            reply.request_id or request_id,
            reply.retry_after,
            reason=reason if isinstance(reason, str) else None,
        )
