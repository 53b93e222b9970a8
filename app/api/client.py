"""The service's operations as methods: what each sends, which scope it needs, whether a resend
is safe (spec, PROTOCOL §6-§8).

Both the kiosk app (from worker threads, hence no Qt here) and the issuer library call the
service through `ApiClient`, so the rules that are easy to get subtly wrong live in one place:
tokens in `app.api.auth`, retries and the deadline in `app.api.retry` and `app.api.exchange`,
and here, per operation:

* Idempotency: `register_non_pii` and `register_batch` always send a `service_reference`, minted
  once before the first attempt, so a retry of a request whose response was lost is answered as
  a duplicate instead of creating a second record. `registerAndBuildBarcode` is not idempotent
  (a lost response means the PII must be re-encrypted with a fresh IV, spec), nor are creating
  clients, keys and pairing links, so those only retry when nothing can have been processed.
* Paths: ids are quoted as one path segment (`app.api.wire`), so an id can never reach another
  route.
* Answers: every success body is parsed into the protocol's response model
  (`service.protocol.schemas`), the same class the service built it from; a body that does not
  fit is an `InvalidResponse`, never a half-read result.
* Privacy: the repr shows no secret; see `app.api.exchange` for errors and logs.
"""

from __future__ import annotations

import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import httpx
from pydantic import BaseModel

from app.api.auth import Token, TokenAuth, token_from_response
from app.api.errors import ClientCode, InvalidResponse
from app.api.exchange import Exchange, new_request_id
from app.api.retry import RetryPolicy
from app.api.trust import trust
from app.api.wire import parse_answer, path_segment
from service.protocol.encoding import new_reference
from service.protocol.schemas import (
    BarcodeResult,
    BatchResult,
    BatchResultItem,
    ClientDisabled,
    IssuerCreated,
    KeyCreated,
    KeyRetired,
    Overview,
    PairingOffer,
    ReceiptResult,
    RegistrationResult,
    RevocationResult,
    TokenResponse,
    VerificationResult,
    VerifierCreated,
)

SCOPE_ISSUER: Final = "service:issuer"
SCOPE_VERIFIER: Final = "service:verifier"
SCOPE_ADMIN: Final = "service:admin"

M = TypeVar("M", bound=BaseModel)


def _strip_base(url: str) -> str:
    return url[:-1] if url.endswith("/") else url


class ApiClient:
    """Thread-safe synchronous client for the payslip service.

    `auth_url`, `issuer_url` and `verifier_url` are base URLs (PROTOCOL §9: in a single-process
    deployment all three are the same). Only the URLs for the operations actually used are needed:
    a kiosk needs `verifier_url`, an issuer `issuer_url`.

    `scope` forces the scope sent on every token request; by default it is derived from the
    operation (`service:verifier` for verification, `service:issuer` for registration and
    revocation, `service:admin` for admin calls). One token is cached per (audience, scope).

    `timeout` bounds each HTTP attempt, `connect_timeout` (default: `timeout`) its TCP connect, and
    `deadline` a whole logical call including token fetches, retries and backoff sleeps (see
    `app.api.retry`); `unreachable_after` ends a call sooner when nothing has answered at all,
    `refused_after` when every attempt was refused. `verify` is httpx's: an SSL context pins the
    embedded service's own certificate. `audience` is the base URL tokens are asked for when it
    differs from the address called: this computer reaches its embedded service on loopback,
    while the service's tokens name the office address every other desk uses. `transport`,
    `sleep`, `clock` and `rng` let tests inject a fault transport, a recording sleep, a fake clock.
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
        unreachable_after: float | None = None,
        refused_after: float | None = None,
        verify: ssl.SSLContext | bool = True,
        audience: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._policy = RetryPolicy(
            timeout=timeout,
            deadline=deadline,
            connect_timeout=connect_timeout,
            unreachable_after=unreachable_after,
            refused_after=refused_after,
            sleep=sleep,
            clock=clock,
            rng=rng or random.Random(),
        )
        self._auth_url = _strip_base(auth_url)
        self._client_id = client_id
        self._client_secret = client_secret
        self._issuer_url = _strip_base(issuer_url) if issuer_url else None
        self._verifier_url = _strip_base(verifier_url) if verifier_url else None
        self._scope = scope
        self._audience = _strip_base(audience) if audience else None
        # follow_redirects stays off: a redirect would resend the bearer token somewhere else.
        http = httpx.Client(
            transport=transport, follow_redirects=False, trust_env=True, verify=trust(verify)
        )
        self._exchange = Exchange(http, self._policy)
        self._auths: dict[tuple[str, str], TokenAuth] = {}
        self._auths_lock = threading.Lock()

    @property
    def client_id(self) -> str:
        """The OAuth client this client authenticates as (never the secret)."""
        return self._client_id

    def moved_to(self, url: str, **options: Any) -> ApiClient:
        """The same client (credentials, timeouts) for a service that now answers at `url`
        (the embedded service after its port, office address or certificate changed)."""
        policy = self._policy
        return ApiClient(
            url,
            self._client_id,
            self._client_secret,
            issuer_url=url if self._issuer_url else None,
            verifier_url=url if self._verifier_url else None,
            scope=self._scope,
            timeout=policy.timeout,
            deadline=policy.deadline,
            connect_timeout=policy.connect_timeout,
            unreachable_after=policy.unreachable_after,
            refused_after=policy.refused_after,
            **options,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close pooled connections."""
        self._exchange.http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        # Never show the secret (or any token) in a repr that may land in a log or a traceback.
        return f"ApiClient(auth_url={self._auth_url!r}, client_id={self._client_id!r})"

    # ------------------------------------------------------------------ verifier

    def verify_payload(self, barcode: str) -> VerificationResult:
        """Verify a barcode text (verifyPayload); returns the verification result.

        Idempotent: the same payload yields the same result, so it is retried freely.
        """
        return self._verifier_check(VerificationResult, "/v1/verifications/payload", barcode)

    def receipt(self, barcode: str) -> ReceiptResult:
        """A signed receipt of verifying this barcode text (PROTOCOL §11), also for a revoked,
        unknown or altered code; the service keeps nothing of it. Idempotent in effect (each
        answer is a new receipt of the same check), so it is retried freely."""
        return self._verifier_check(ReceiptResult, "/v1/verifications/receipt", barcode)

    def _verifier_check(self, model: type[M], path: str, barcode: str) -> M:
        """POST one barcode text to a verifier operation; retried freely (idempotent)."""
        return self._api_call(
            model,
            "POST",
            self._require(self._verifier_url, "verifier_url"),
            path,
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
        status, answer = self._api_call(
            RegistrationResult,
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerNonPII",
            SCOPE_ISSUER,
            body,
            idempotent=True,
        )
        return answer.service_reference, status == 201

    def register_batch(self, records: Sequence[Mapping[str, Any]]) -> list[BatchResultItem]:
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
        _, answer = self._api_call(
            BatchResult,
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerNonPIIBatch",
            SCOPE_ISSUER,
            {"records": body_records},
            idempotent=True,
        )
        if len(answer.results) != len(body_records):
            raise InvalidResponse(
                ClientCode.INVALID_RESPONSE, 200, "batch response has no matching results array"
            )
        return answer.results

    def register_and_build_barcode(self, record: Mapping[str, Any]) -> BarcodeResult:
        """Register one record and get the PNG badge (registerAndBuildBarcode).

        Not idempotent: if the response is lost the caller must re-encrypt with a fresh IV, so
        this retries only on 429 and on connections that failed before sending. Any other failure
        (including `ServiceUnreachable` after a send) leaves the outcome to the caller.
        """
        return self._api_call(
            BarcodeResult,
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            "/v1/registerAndBuildBarcode",
            SCOPE_ISSUER,
            dict(record),
            idempotent=False,
        )[1]

    def revoke(self, reference: str, reason: str | None = None) -> RevocationResult:
        """Revoke one of this issuer's records (PROTOCOL §6); repeating it is a no-op."""
        body: dict[str, Any] = {} if reason is None else {"reason": reason}
        return self._api_call(
            RevocationResult,
            "POST",
            self._require(self._issuer_url, "issuer_url"),
            f"/v1/records/{path_segment(reference)}/revoke",
            SCOPE_ISSUER,
            body,
            idempotent=True,
        )[1]

    # ------------------------------------------------------------------ admin (PROTOCOL §8)

    def admin_create_issuer(self, name: str) -> IssuerCreated:
        """Create an issuer; the response holds its client secret and key, shown once.

        Not retried on ambiguous failures: a resend after a lost response would create a second
        issuer.
        """
        return self._admin(
            IssuerCreated, "POST", "/admin/v1/issuers", {"name": name}, idempotent=False
        )

    def admin_create_verifier(self, name: str) -> VerifierCreated:
        """Create a verifier client (not retried on ambiguous failures, as for issuers)."""
        return self._admin(
            VerifierCreated, "POST", "/admin/v1/verifiers", {"name": name}, idempotent=False
        )

    def admin_rotate_key(self, issuer_id: str) -> KeyCreated:
        """Give an issuer a new key version (no retry on ambiguous failures: each is a new key)."""
        path = f"/admin/v1/issuers/{path_segment(issuer_id)}/keys"
        return self._admin(KeyCreated, "POST", path, {}, idempotent=False)

    def admin_retire_key(self, key_version: str) -> KeyRetired:
        """Retire a key version; retiring twice is harmless, so it is retried."""
        path = f"/admin/v1/keys/{path_segment(key_version)}/retire"
        return self._admin(KeyRetired, "POST", path, {}, idempotent=True)

    def admin_disable_client(self, client_id: str) -> ClientDisabled:
        """Disable a client and kill its tokens; idempotent, so it is retried."""
        path = f"/admin/v1/clients/{path_segment(client_id)}/disable"
        return self._admin(ClientDisabled, "POST", path, {}, idempotent=True)

    def admin_pair_verifier(self, client_id: str, days: int | None = None) -> PairingOffer:
        """A one-time phone pairing link for a verifier client (expires in minutes, works once);
        `days`: how long the phone then stays signed in (the service's default, 90, when None).
        Not retried on ambiguous failures: each call makes a new link."""
        path = f"/admin/v1/clients/{path_segment(client_id)}/pairings"
        body = None if days is None else {"days": days}
        return self._admin(PairingOffer, "POST", path, body, idempotent=False)

    def admin_list(self) -> Overview:
        """Issuers, verifiers, keys and record counts (never secrets or key material)."""
        return self._admin(Overview, "GET", "/admin/v1/overview", None, idempotent=True)

    def _admin(
        self,
        model: type[M],
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        idempotent: bool,
    ) -> M:
        # The admin scope's audience is the issuer URL (PROTOCOL §7).
        return self._api_call(
            model,
            method,
            self._require(self._issuer_url, "issuer_url"),
            path,
            SCOPE_ADMIN,
            body,
            idempotent=idempotent,
        )[1]

    def check_sign_in(self, scope: str = SCOPE_VERIFIER) -> None:
        """Ask for a token with these credentials and nothing else: raises `Unauthorized` for a
        wrong id or secret, `Forbidden` for the wrong kind of client or address, and
        `ServiceUnreachable` when nothing answers. A desk is connected only after this."""
        base = self._verifier_url if scope == SCOPE_VERIFIER else self._issuer_url
        audience = self._audience or self._require(base, "the URL for this scope")
        self._auth(audience, scope).token(self._policy.deadline_from_now())

    # ------------------------------------------------------------------ health

    def healthz(self, base_url: str) -> bool:
        """True when `GET {base_url}/healthz` answers 200 `{"status": "ok"}`; never raises.

        One short attempt without retries or auth: it feeds a status light, which should show the
        truth now rather than after a backoff.
        """
        url = _strip_base(base_url) + "/healthz"
        try:
            resp = self._exchange.http.get(url, timeout=min(self._policy.timeout, 5.0))
            if resp.status_code != 200:
                return False
            data = resp.json()
        except (httpx.HTTPError, ValueError):
            return False
        return isinstance(data, dict) and data.get("status") == "ok"

    # ------------------------------------------------------------------ core

    @staticmethod
    def _require(url: str | None, name: str) -> str:
        if not url:
            raise ValueError(f"ApiClient was created without {name}")
        return url

    def _auth(self, audience: str, scope: str) -> TokenAuth:
        """The one token cache for (audience, scope): tokens are only valid for one API."""
        key = (audience, scope)
        with self._auths_lock:
            auth = self._auths.get(key)
            if auth is None:
                auth = TokenAuth(lambda deadline: self._fetch_token(key, deadline), self._policy)
                self._auths[key] = auth
            return auth

    def _fetch_token(self, key: tuple[str, str], deadline: float) -> Token:
        """Ask the token endpoint (client credentials), with retries inside the call's deadline."""
        audience, scope = key
        started = self._policy.clock()
        request_id = new_request_id()
        status, data = self._exchange.call(
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
            deadline=deadline,
            idempotent=True,
            auth=None,
            request_id=request_id,
        )
        return token_from_response(parse_answer(TokenResponse, data, status, request_id), started)

    def _api_call(
        self,
        model: type[M],
        method: str,
        base: str,
        path: str,
        scope: str,
        body: dict[str, Any] | None,
        *,
        idempotent: bool,
    ) -> tuple[int, M]:
        """One logical authenticated call: fresh request id, one deadline, token audience = base;
        returns the status and the answer as `model`."""
        request_id = new_request_id()
        status, data = self._exchange.call(
            method,
            base,
            path,
            body,
            deadline=self._policy.deadline_from_now(),
            idempotent=idempotent,
            auth=self._auth(self._audience or base, self._scope or scope),
            request_id=request_id,
        )
        return status, parse_answer(model, data, status, request_id)
