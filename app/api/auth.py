"""Bearer tokens for API calls: an `httpx.Auth` that caches one client-credentials token and
recovers once from a 401 (spec "Authentication", PROTOCOL §7).

Why a cache: every API call needs a token, and the token endpoint is rate limited per IP; asking
for a fresh token per verification would double the requests and trip that limit at a busy desk.
A token is reused until shortly before it expires (`REFRESH_MARGIN`, or half its lifetime if that
is shorter), so it never expires in flight between our clock check and the server's. However many
threads ask at once, only one token request per `TokenAuth` is in flight (a thundering herd
against the token endpoint is what its rate limit punishes).

Why one retry after a 401: a token can be refused before its expiry (a key rotation or a service
restart with a new signing key). The token is dropped and the same request (same request id) is
sent once more with a fresh one; a second 401 is final, because then the credentials themselves
are wrong and retrying would only hammer the token endpoint. That retry costs no backoff.

The flow knows the call's deadline through the request extension `DEADLINE`: a token fetched
during the call uses up part of it, so the attempt's timeouts are cut to what is left afterwards.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from typing import Final

import httpx

from app.api.errors import ClientCode, ServiceUnreachable
from app.api.retry import RetryPolicy
from service.protocol.schemas import TokenResponse

log = logging.getLogger("app.api")

#: A token is refreshed this long before it expires (or at half its lifetime if that is shorter).
REFRESH_MARGIN: Final = 60.0
#: Lifetime assumed when a token response omits a usable `expires_in` (PROTOCOL §7 says 900 s;
#: assuming less only costs an extra token request).
DEFAULT_EXPIRES_IN: Final = 60.0
#: Request extension holding the call's deadline (a `RetryPolicy.clock` reading).
DEADLINE: Final = "payslip.deadline"


class DeadlineReached(Exception):
    """The call's deadline passed while the flow waited for a token (the caller decides which
    error to raise: the last retryable one, or a plain "deadline exhausted")."""


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    refresh_at: float


def token_from_response(answer: TokenResponse, started: float) -> Token:
    """The token of a token endpoint's answer, to be refreshed before it expires.

    `started` is the clock reading from before the request: the server's lifetime started no
    earlier than that, so measuring from it errs on the safe side.
    """
    raw = answer.expires_in
    expires_in = float(raw) if raw is not None and raw > 0 else DEFAULT_EXPIRES_IN
    return Token(answer.access_token, started + expires_in - min(REFRESH_MARGIN, expires_in / 2))


class TokenAuth(httpx.Auth):
    """Bearer auth for one (audience, scope): a cached token, refreshed on time, retried once.

    `fetch(deadline)` asks the token endpoint for a new token (with the retry policy's backoff,
    inside the given deadline); it is only ever called by one thread at a time.
    """

    # The 401's body is read before the retry so its connection goes back to the pool.
    requires_response_body = True

    def __init__(self, fetch: Callable[[float], Token], policy: RetryPolicy) -> None:
        self._fetch = fetch
        self._policy = policy
        self._cached: Token | None = None
        self._lock = threading.Lock()
        self._flight = threading.Lock()

    def token(self, deadline: float) -> str:
        """A cached or fresh access token; concurrent callers share one token request."""
        with self._lock:
            cached = self._fresh()
        if cached is not None:
            return cached
        remaining = self._policy.remaining(deadline)
        if remaining <= 0 or not self._flight.acquire(timeout=remaining):
            raise ServiceUnreachable(
                ClientCode.SERVICE_UNREACHABLE,
                None,
                "deadline exhausted waiting for an access token",
            )
        try:
            # Another thread may have fetched one while we waited for the flight lock.
            with self._lock:
                cached = self._fresh()
            if cached is not None:
                return cached
            token = self._fetch(deadline)
            with self._lock:
                self._cached = token
            return token.value
        finally:
            self._flight.release()

    def drop(self, value: str) -> None:
        """Forget a token the server refused, unless another thread already replaced it."""
        with self._lock:
            if self._cached is not None and self._cached.value == value:
                self._cached = None

    def _fresh(self) -> str | None:
        cached = self._cached
        if cached is not None and self._policy.clock() < cached.refresh_at:
            return cached.value
        return None

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        deadline = float(request.extensions[DEADLINE])
        token = self._authorize(request, deadline)
        response = yield request
        if response.status_code != 401:
            return
        self.drop(token)
        log.info(
            "%s %s -> 401, once more with a fresh token [%s]",
            request.method,
            request.url.path,
            request.headers.get("X-Request-ID"),
        )
        token = self._authorize(request, deadline)
        response = yield request
        if response.status_code == 401:
            self.drop(token)

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        # httpx's default would send the request without a token. Fetching one blocks (locks,
        # a synchronous token request), so an AsyncClient gets a clear refusal instead.
        raise RuntimeError("TokenAuth is synchronous; use it with httpx.Client")
        yield request  # pragma: no cover - makes this an async generator

    def _authorize(self, request: httpx.Request, deadline: float) -> str:
        token = self.token(deadline)
        remaining = self._policy.remaining(deadline)
        if remaining <= 0:
            raise DeadlineReached
        request.headers["Authorization"] = f"Bearer {token}"
        request.extensions["timeout"] = self._policy.attempt_timeout(remaining).as_dict()
        return token
