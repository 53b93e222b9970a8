"""Service fixtures: a real instance in tmp_path served by waitress on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.instance import domain_for, init_instance, load_master_key, offline_config, open_store
from service.server import Running, start


@dataclass
class LiveService:
    running: Running
    data_dir: Path
    admin_id: str
    admin_secret: str
    issuer: dict[str, Any]
    verifier: dict[str, Any]

    @property
    def url(self) -> str:
        return self.running.url

    def token(self, client_id: str, secret: str, scope: str | None = None) -> str:
        body = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": secret,
            "audience": self.url,
        }
        if scope:
            body["scope"] = scope
        reply = httpx.post(f"{self.url}/oauth/token", json=body, timeout=10)
        assert reply.status_code == 200, reply.text
        return str(reply.json()["access_token"])

    def issuer_token(self) -> str:
        return self.token(self.issuer["client_id"], self.issuer["client_secret"])

    def verifier_token(self) -> str:
        return self.token(self.verifier["client_id"], self.verifier["client_secret"])

    def admin_token(self) -> str:
        return self.token(self.admin_id, self.admin_secret)

    def post(self, path: str, body: Any, token: str | None, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(f"{self.url}{path}", json=body, headers=headers, timeout=30, **kwargs)

    def verify(self, barcode: str, token: str | None = None) -> httpx.Response:
        return self.post(
            "/v1/verifications/payload", {"barcode": barcode}, token or self.verifier_token()
        )


def make_instance(data_dir: Path) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    created = init_instance(data_dir)
    store = open_store(data_dir)
    try:
        admin = domain_for(store, offline_config(load_master_key(data_dir))).admin
        issuer = admin.create_issuer("Test Payroll")
        verifier = admin.create_verifier("Test Desk")
    finally:
        store.close()
    return created, issuer, verifier


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveService]:
    data_dir = tmp_path / "data"
    created, issuer, verifier = make_instance(data_dir)
    running = start(data_dir)
    try:
        yield LiveService(
            running,
            data_dir,
            created["admin_client_id"],
            created["admin_client_secret"],
            issuer,
            verifier,
        )
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def _fast_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """httpx.post builds an SSL context per call (~20 ms); loopback needs none. Tests and the
    LiveService helpers call httpx.post, so patch the module functions for every service test."""
    client = httpx.Client(
        verify=False, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)
    )
    for name in ("get", "post", "request"):
        method = getattr(client, name)

        def shared(*args: Any, _method: Any = method, verify: Any = None, **kwargs: Any) -> Any:
            return _method(*args, **kwargs)

        monkeypatch.setattr(httpx, name, shared)
    yield
    client.close()
