"""Shared checks for the HTTP tests: the one error shape every route answers with."""

from __future__ import annotations

from typing import Any

import httpx


def expect_error(reply: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """PROTOCOL §6: the status, a JSON error object with `code` and `error`, an X-Request-ID,
    and `WWW-Authenticate: Bearer` on a 401."""
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.headers.get("x-request-id")
    body = reply.json()
    assert body["code"] == code, body
    assert isinstance(body["error"], str) and body["error"]
    if status == 401:
        assert reply.headers["www-authenticate"].startswith("Bearer")
    return body
