"""One logical HTTP call with retries: send, classify the answer, back off, give up on time.

This is where the retry policy meets the wire. It never raises an httpx exception and never
chains one: every error is an `app.api.errors.ApiError` raised outside any `except` block, so
its `__context__` is empty (an httpx exception holds the request, bearer token included), and
its message carries only method, path, status, code and request id. Request bodies hold
barcodes, ciphertext and secrets, so they are never formatted into a message or a log line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import ssl
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.api.auth import DEADLINE, DeadlineReached
from app.api.errors import (
    ApiError,
    ClientCode,
    FieldError,
    InvalidResponse,
    ServiceUnreachable,
    error_class_for,
    fallback_code_for_status,
)
from app.api.retry import RetryPolicy

log = logging.getLogger("app.api")


def new_request_id() -> str:
    """32 hex characters: inside PROTOCOL §6's echo rule (1-128 of [A-Za-z0-9._-])."""
    return uuid.uuid4().hex


def parse_retry_after(value: str | None) -> int | None:
    """Integer seconds only (spec: "required integer header"); HTTP-dates are ignored."""
    if value is None:
        return None
    value = value.strip()
    if not value.isdigit():
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class Reply:
    """What one HTTP exchange returned, copied out of httpx so no request object survives."""

    status: int
    body: bytes
    content_type: str
    retry_after: int | None
    request_id: str | None


@dataclass(frozen=True, slots=True)
class NetFailure:
    """One attempt got no response. `sent` is False only when the request surely never left."""

    sent: bool
    what: str
    kind: str = "network"
    """How it failed, a key of `app.api.errors.UNREACHABLE_WORDS` ("refused", "no_answer", ...)."""


def origin(url: str) -> str:
    """Scheme, host and port of `url`: the address a user can check (no path, no query)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}" if parts.netloc else url


def connect_kind(exc: BaseException) -> str:
    """Why a connection failed: "refused" when the host answered that nothing listens on the
    port, "unknown_host" when the name does not resolve, "certificate" when its certificate was
    not the pinned one (app.api.pinning) or not trusted, else "network"."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "refused"
        if isinstance(seen, socket.gaierror):
            return "unknown_host"
        if isinstance(seen, ssl.SSLCertVerificationError):
            return "certificate"
        seen = seen.__cause__ or seen.__context__
    text = str(exc).lower()
    if "refused" in text:
        return "refused"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "unknown_host"
    return "network"


class Exchange:
    """Sends requests through one pooled `httpx.Client` under one `RetryPolicy`."""

    def __init__(self, http: httpx.Client, policy: RetryPolicy) -> None:
        self.http = http
        self.policy = policy

    def call(
        self,
        method: str,
        base: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        deadline: float,
        idempotent: bool,
        auth: httpx.Auth | None,
        request_id: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """Send with retries until success, a final error, or the deadline; returns
        (status, JSON object). Every attempt carries the same request id, so the service's log
        shows one logical call."""
        request_id = request_id or new_request_id()
        content = None if body is None else encode(body)
        policy = self.policy
        url = base + path
        attempt = 0
        last_error: ApiError | None = None
        reach_by = policy.reach_deadline()
        refused_by = policy.refusal_deadline()  # None once anything but a refusal happened
        while True:
            remaining = policy.remaining(deadline)
            if reach_by is not None:
                # Nothing answered yet: no attempt may wait past the "unreachable" limit.
                remaining = min(remaining, policy.remaining(reach_by))
            if remaining <= 0:
                raise last_error or deadline_error(method, path, request_id, origin(base))
            headers = {"Accept": "application/json", "X-Request-ID": request_id}
            if content is not None:
                headers["Content-Type"] = "application/json"
            outcome = self._send(method, url, content, headers, remaining, deadline, auth)
            if outcome is None:  # the deadline passed while the auth flow fetched a token
                raise last_error or deadline_error(method, path, request_id, origin(base))
            if isinstance(outcome, Reply):
                reach_by = None  # the service answers: the whole deadline applies from now on
            if not isinstance(outcome, NetFailure) or outcome.kind != "refused":
                refused_by = None

            if isinstance(outcome, Reply) and outcome.status < 400:
                data = decode_success(outcome, request_id)
                log.debug("%s %s -> %s [%s]", method, path, outcome.status, request_id)
                return outcome.status, data

            error: ApiError
            if isinstance(outcome, Reply):
                error = error_from_reply(outcome, request_id)
                log.info(
                    "%s %s -> %s %s [%s]", method, path, outcome.status, error.code, request_id
                )
                retryable = policy.retries_status(outcome.status, idempotent=idempotent)
            else:
                error = ServiceUnreachable(
                    ClientCode.SERVICE_UNREACHABLE,
                    None,
                    f"{method} {path}: {outcome.what} ({origin(base)})",
                    None,
                    request_id,
                    reason=outcome.kind,
                    address=origin(base),
                )
                log.info("%s %s -> %s [%s]", method, path, outcome.what, request_id)
                retryable = policy.retries_failure(sent=outcome.sent, idempotent=idempotent)

            if not retryable:
                raise error
            last_error = error
            delay = policy.backoff(attempt, error.retry_after)
            attempt += 1
            if not all(
                policy.fits(delay, limit)
                for limit in (deadline, reach_by, refused_by)
                if limit is not None
            ):
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
            policy.sleep(delay)

    def _send(
        self,
        method: str,
        url: str,
        content: bytes | None,
        headers: dict[str, str],
        remaining: float,
        deadline: float,
        auth: httpx.Auth | None,
    ) -> Reply | NetFailure | None:
        """One HTTP attempt (plus the auth flow's one 401 retry); network failures are returned,
        not raised, with whether the request may have been sent. None: the deadline passed
        while a token was fetched."""
        failure: NetFailure | None = None
        reached = False
        try:
            resp = self.http.request(
                method,
                url,
                content=content,
                headers=headers,
                timeout=self.policy.attempt_timeout(remaining),
                auth=auth,
                extensions={DEADLINE: deadline},
            )
        except httpx.ConnectError as exc:
            kind = connect_kind(exc)
            failure = NetFailure(sent=False, what=_WHAT.get(kind, "connection failed"), kind=kind)
        except (httpx.ConnectTimeout, httpx.PoolTimeout):
            failure = NetFailure(sent=False, what="no answer to the connection", kind="no_answer")
        except httpx.ProxyError:
            failure = NetFailure(sent=False, what="connection failed")
        except httpx.TimeoutException:
            failure = NetFailure(
                sent=True, what="timed out waiting for the response", kind="no_answer"
            )
        except httpx.RemoteProtocolError:
            failure = NetFailure(sent=True, what="connection dropped", kind="dropped")
        except httpx.TransportError:
            failure = NetFailure(sent=True, what="network error")
        except DeadlineReached:
            reached = True
        if reached:
            return None
        if failure is not None:
            return failure
        return Reply(
            status=resp.status_code,
            body=resp.content,
            content_type=resp.headers.get("Content-Type", ""),
            retry_after=parse_retry_after(resp.headers.get("Retry-After")),
            request_id=resp.headers.get("X-Request-ID"),
        )


_WHAT = {"refused": "connection refused", "unknown_host": "unknown host name"}


def deadline_error(
    method: str, path: str, request_id: str, address: str | None = None
) -> ServiceUnreachable:
    return ServiceUnreachable(
        ClientCode.SERVICE_UNREACHABLE,
        None,
        f"{method} {path}: deadline exhausted",
        None,
        request_id,
        reason="no_answer",
        address=address,
    )


def encode(body: dict[str, Any]) -> bytes:
    # The ValueError is raised outside the handler, without context: json's own message may
    # quote a value from the body.
    with contextlib.suppress(TypeError, ValueError):
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
    raise ValueError("request body is not JSON-serialisable")


def _json(reply: Reply) -> Any:
    try:
        return json.loads(reply.body)
    except (ValueError, UnicodeDecodeError):
        return None


def decode_success(reply: Reply, request_id: str) -> dict[str, Any]:
    """The JSON object of a 2xx/3xx answer; anything else (a captive portal's HTML page) is an
    `InvalidResponse`, never a half-parsed result."""
    data = _json(reply)
    if not isinstance(data, dict):
        raise InvalidResponse(
            ClientCode.INVALID_RESPONSE,
            reply.status,
            "success response is not a JSON object",
            None,
            reply.request_id or request_id,
        )
    return data


def error_from_reply(reply: Reply, request_id: str) -> ApiError:
    """The typed error for an error answer: by its `code`, or by status when the body is not
    the service's JSON (a proxy's HTML 502 page)."""
    data = _json(reply)
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
                    FieldError(path=str(item.get("path", "")), message=str(item.get("message", "")))
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
