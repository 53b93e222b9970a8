"""The app's composition root: settings, the embedded service (or a remote one) and API clients.

Everything the screens need is built here once and passed in; nothing is a module global. The app
reaches its own embedded service through the same HTTP API and client that a remote desk uses.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from app.api_client import ApiClient
from app.settings import SecretStore, Settings
from service.config import default_data_dir
from service.demo import DemoInstance
from service.instance import is_initialised
from service.protocol.schemas import IssuerCreated
from service.server import Running, ensure_instance, start, start_demo

log = logging.getLogger("app.context")
DESK_NAME = "This desk (embedded)"

VERIFY_DEADLINE = 4.0
"""Seconds one verification may take in all (token, retries, backoff) before CANNOT VERIFY: the
person at the desk hears "try again" within 5 s, not after 20 (issue 9)."""
VERIFY_CONNECT_TIMEOUT = 1.5
"""A reachable service accepts a connection in milliseconds; a dead host never does."""


def verifier_client(auth_url: str, client_id: str, secret: str, verifier_url: str) -> ApiClient:
    """The desk's verifier client: short connect timeout and one short overall deadline."""
    return ApiClient(
        auth_url,
        client_id,
        secret,
        verifier_url=verifier_url,
        timeout=VERIFY_DEADLINE,
        connect_timeout=VERIFY_CONNECT_TIMEOUT,
        deadline=VERIFY_DEADLINE,
    )


@dataclass
class AppContext:
    settings: Settings
    secrets: SecretStore
    verifier: ApiClient
    service: Running | None = None
    admin: ApiClient | None = None
    issuer: ApiClient | None = None
    issuer_info: IssuerCreated | None = None
    """The demo issuer's credentials and key (demo mode only), as the service created them."""
    demo: DemoInstance | None = None

    @property
    def environment(self) -> str:
        if self.service is not None:
            return self.service.config.environment
        return self.settings.environment

    @property
    def service_url(self) -> str:
        return self.service.url if self.service else self.settings.verifier_url

    def close(self) -> None:
        for client in (self.verifier, self.admin, self.issuer):
            if client is not None:
                client.close()
        if self.service is not None:
            self.service.stop()
            self.service = None


def _client(url: str, client_id: str, secret: str) -> ApiClient:
    return ApiClient(url, client_id, secret, issuer_url=url, verifier_url=url, deadline=20.0)


def start_demo_context(settings: Settings, secrets: SecretStore) -> AppContext:
    """A fresh temporary instance with a demo issuer, verifier and sample payslips."""
    running = start_demo()
    demo = running.demo
    assert demo is not None
    url = running.url
    created = running.created or {}
    admin = None
    if created:
        admin = _client(url, created["admin_client_id"], created["admin_client_secret"])
    return AppContext(
        settings=settings,
        secrets=secrets,
        verifier=verifier_client(url, demo.verifier.client_id, demo.verifier.client_secret, url),
        service=running,
        admin=admin,
        issuer=_client(url, demo.issuer.client_id, demo.issuer.client_secret),
        issuer_info=demo.issuer,
        demo=demo,
    )


def _embedded_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) if settings.data_dir else default_data_dir()


def embedded_ready(settings: Settings, secrets: SecretStore) -> bool:
    """True when this computer's embedded instance exists and has a desk verifier already, so
    starting it creates nothing (``app verify`` must never initialise an empty instance)."""
    directory = _embedded_dir(settings)
    slot = f"instance:{directory.resolve()}"
    return is_initialised(directory) and bool(secrets.get(f"{slot}:verifier_id"))


def start_embedded_context(
    settings: Settings, secrets: SecretStore, data_dir: Path | None = None
) -> AppContext:
    """The desk's own instance in its data directory, initialised on first run."""
    directory = data_dir or _embedded_dir(settings)
    slot = f"instance:{directory.resolve()}"
    created = ensure_instance(directory)
    if created is not None:
        secrets.set(f"{slot}:admin_id", created["admin_client_id"])
        secrets.set(f"{slot}:admin_secret", created["admin_client_secret"])
    running = start(directory, environment=settings.environment)
    try:
        url = running.url
        admin = None
        admin_id, admin_secret = (
            secrets.get(f"{slot}:admin_id"),
            secrets.get(f"{slot}:admin_secret"),
        )
        if admin_id and admin_secret:
            admin = _client(url, admin_id, admin_secret)
        verifier_id = secrets.get(f"{slot}:verifier_id")
        verifier_secret = secrets.get(f"{slot}:verifier_secret")
        if not (verifier_id and verifier_secret):
            if admin is None:
                raise RuntimeError(
                    "this data directory's admin credentials are not on this computer"
                )
            made = admin.admin_create_verifier(DESK_NAME)
            verifier_id, verifier_secret = made.client_id, made.client_secret
            secrets.set(f"{slot}:verifier_id", verifier_id)
            secrets.set(f"{slot}:verifier_secret", verifier_secret)
        return AppContext(
            settings=settings,
            secrets=secrets,
            verifier=verifier_client(url, verifier_id, verifier_secret, url),
            service=running,
            admin=admin,
        )
    except BaseException:
        running.stop()
        raise


def start_remote_context(settings: Settings, secrets: SecretStore) -> AppContext:
    secret = secrets.get(f"remote:{settings.client_id}") or ""
    client = verifier_client(
        settings.auth_url or settings.verifier_url,
        settings.client_id,
        secret,
        settings.verifier_url,
    )
    return AppContext(settings=settings, secrets=secrets, verifier=client)


def start_context(settings: Settings, secrets: SecretStore, demo: bool) -> AppContext:
    if demo:
        return start_demo_context(settings, secrets)
    if settings.mode == "remote" and settings.verifier_url:
        return start_remote_context(settings, secrets)
    return start_embedded_context(settings, secrets)
