"""The app's composition root: settings, the embedded service (or a remote one) and API clients.

Everything the screens need is built here once and passed in; nothing is a module global. The app
reaches its own embedded service through the same HTTP API and client that a remote desk uses.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.api import ApiClient
from app.api.fail_fast import issuer_client
from app.api.pinning import pinned_context, pinned_options
from app.api.probe import probe
from app.issuer.local_issuer import adopt_stale_loopback
from app.settings.desk import SecretStore, Settings
from app.shell.office_tls import certificate_fingerprint, ensure_office_tls
from app.shell.port_holder import PortTaken, port_holder
from service.composition.config import default_data_dir
from service.composition.demo import DemoInstance
from service.composition.instance import is_initialised
from service.files.private import private_dir
from service.hosting.network_address import (
    ALL_INTERFACES,
    LOOPBACK_HOST,
    choose_port,
    port_free,
)
from service.hosting.server import Running, ensure_instance, start, start_demo
from service.hosting.tls import server_context
from service.protocol.schemas import IssuerCreated

log = logging.getLogger("app.context")
DESK_NAME = "This desk (embedded)"
NETWORK = "network"
"""`Settings.service_listen` for "this office network" (anything else: this computer only)."""

VERIFY_DEADLINE = 4.0
"""Seconds one verification may take in all (token, retries, backoff) before CANNOT VERIFY: the
person at the desk hears "try again" within 5 s, not after 20 (issue 9)."""
VERIFY_CONNECT_TIMEOUT = 1.5
"""A reachable service accepts a connection in milliseconds; a dead host never does."""
VERIFY_REFUSED_AFTER = 1.0
"""Seconds a desk keeps asking a service that refuses every connection (nothing listens: it is
stopped, or on another port): the refused-connection verdict comes within 1.5 s (issue 35); a
service restarting takes longer than that anyway, and "try again" covers it."""


def verifier_client(
    auth_url: str, client_id: str, secret: str, verifier_url: str, **own: Any
) -> ApiClient:
    """The desk's verifier client: short connect timeout and one short overall deadline.
    `own`: `AppContext.own_options()` when it calls this computer's embedded service."""
    return ApiClient(
        auth_url,
        client_id,
        secret,
        verifier_url=verifier_url,
        timeout=VERIFY_DEADLINE,
        connect_timeout=VERIFY_CONNECT_TIMEOUT,
        deadline=VERIFY_DEADLINE,
        refused_after=VERIFY_REFUSED_AFTER,
        **own,
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
    office_down: PortTaken | None = None
    """Set while another program holds the kept port: `service` then runs on a private loopback
    port for this app alone, and the Service and Issue screens say the office service is down."""

    @property
    def environment(self) -> str:
        if self.service is not None:
            return self.service.config.environment
        return self.settings.environment

    @property
    def service_url(self) -> str:
        return self.service.url if self.service else self.settings.verifier_url

    @property
    def public_url(self) -> str:
        """The address other computers and phones use (the embedded service's scan base)."""
        if self.service is not None:
            return self.service.config.public_url
        return self.settings.verifier_url

    def own_options(self) -> dict[str, Any]:
        """ApiClient options for calling this computer's embedded service on its loopback
        address: tokens for the office address, and its own certificate pinned under TLS. For a
        desk connected elsewhere: the office certificate's fingerprint pinned, when it has one."""
        if self.service is None:
            return desk_options(self.settings)
        return own_options(self.service, self.settings)

    def follow_service(self) -> None:
        """After the embedded service restarted (perhaps on another port, office address or
        certificate), point this app's own clients at it again."""
        if self.service is None or self.demo is not None:
            return
        url, own = self.service.url, self.own_options()
        old_verifier, old_admin = self.verifier, self.admin
        self.verifier = old_verifier.moved_to(url, **own)
        old_verifier.close()
        if old_admin is not None:
            self.admin = old_admin.moved_to(url, **own)
            old_admin.close()

    def close(self) -> None:
        for client in (self.verifier, self.admin, self.issuer):
            if client is not None:
                client.close()
        if self.service is not None:
            self.service.stop()
            self.service = None


def _client(url: str, client_id: str, secret: str, **own: Any) -> ApiClient:
    return issuer_client(url, client_id, secret, deadline=20.0, **own)


def own_options(running: Running, settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {"audience": running.config.public_url}
    if running.url.startswith("https://") and settings.tls_cert:
        options["verify"] = pinned_context(certificate_fingerprint(settings.tls_cert))
    return options


def desk_options(settings: Settings) -> dict[str, Any]:
    """A desk connected to an office service: that service's certificate pinned by the
    fingerprint it was given (app.api.pinning); without one, the public authorities' check."""
    return pinned_options(settings.tls_fingerprint)


def office_fingerprint(context: AppContext) -> str | None:
    """The fingerprint of the certificate this computer's service shows other desks (None when
    it speaks plain HTTP, or runs elsewhere): what Admin hands a new desk and the Service screen
    shows."""
    running, settings = context.service, context.settings
    if running is None or not running.url.startswith("https://") or not settings.tls_cert:
        return None
    try:
        return certificate_fingerprint(settings.tls_cert)
    except (OSError, ValueError):
        return None


def desk_fingerprint(context: AppContext) -> str | None:
    """The fingerprint to hand a new desk with the office address: this service's, when that
    address reaches it directly (same port, https). An address on another port is a reverse
    proxy with a certificate of its own, checked the usual way: pinning this one there would
    only lock the desk out."""
    found = office_fingerprint(context)
    public = urlsplit(context.public_url)
    if found is None or context.service is None or public.scheme != "https":
        return None
    return found if public.port == urlsplit(context.service.url).port else None


def listen_host(settings: Settings) -> str:
    return ALL_INTERFACES if settings.service_listen == NETWORK else LOOPBACK_HOST


def kept_address(settings: Settings, port: int) -> str:
    """The address badges and other desks carry: the office address, else this computer's own
    address on the kept port (never a stand-in port)."""
    public = settings.scan_base.strip().rstrip("/")
    if public:
        return public
    return f"{'https' if settings.tls_cert else 'http'}://{LOOPBACK_HOST}:{port}"


def start_embedded_service(
    settings: Settings, directory: Path, environment: str | None = None
) -> Running:
    """Start this computer's service on its kept port (chosen and saved on the first start),
    listening where the settings say, with the office address as its public URL and HTTPS when a
    certificate is set. If another program holds the kept port, `PortTaken` is raised: the
    service never moves by itself, because badges and other desks carry the port (issue 35)."""
    ensure_office_tls(settings)  # never plain HTTP on the office network (issue 37)
    host = listen_host(settings)
    tls = server_context(settings.tls_cert, settings.tls_key) if settings.tls_cert else None
    public = settings.scan_base.strip().rstrip("/") or None
    port = settings.service_port or choose_port(host)
    try:
        running = start(
            directory,
            host,
            port,
            public_url=public,
            environment=environment or settings.environment,
            tls=tls,
            # "This office network" always has a certificate (ensure_office_tls: the office's
            # own, or one made on first use), so plain HTTP is only ever this computer's
            # loopback listener.
            insecure_http=tls is None,
            # The app's own admin client reaches its service on loopback (`Running.url`), and
            # no other desk uses the admin API, so it stays on this computer only.
            admin_network=False,
        )
    except OSError as exc:
        if not settings.service_port or port_free(host, port):
            raise  # not a taken port (an unreadable data folder, say)
        raise PortTaken(port, kept_address(settings, port), port_holder(port)) from exc
    if settings.service_port != port:
        settings.service_port = port
        with contextlib.suppress(OSError):  # an unwritable config folder must not stop the app
            settings.save()
    return running


def start_office_service(
    settings: Settings, directory: Path, environment: str | None = None
) -> tuple[Running, PortTaken | None]:
    """The service on its kept port; or, when another program holds that port, the same data
    on a private loopback port for this app alone, with the kept address still on its badges,
    and the `PortTaken` the screens show. The private port is never saved nor offered to anyone:
    other desks and phones see the office service as down, which it is."""
    try:
        return start_embedded_service(settings, directory, environment), None
    except PortTaken as taken:
        log.warning("port %d is taken; the office service is not running", taken.port)
        tls = server_context(settings.tls_cert, settings.tls_key) if settings.tls_cert else None
        private = start(
            directory,
            LOOPBACK_HOST,
            0,
            public_url=taken.address,
            environment=environment or settings.environment,
            tls=tls,
        )
        return private, taken


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
    private_dir(directory)  # 0700, also a folder an older version made 0755 (or 0777)
    created = ensure_instance(directory)
    if created is not None:
        secrets.set(f"{slot}:admin_id", created["admin_client_id"])
        secrets.set(f"{slot}:admin_secret", created["admin_client_secret"])
    running, down = start_office_service(settings, directory)
    try:
        url = running.url
        own = own_options(running, settings)
        if down is None:  # a private stand-in port is never written into saved addresses
            with contextlib.suppress(OSError):  # an unwritable config folder must not stop it
                adopt_stale_loopback(settings, url, lambda old: probe(old) is None)
        admin = None
        admin_id, admin_secret = (
            secrets.get(f"{slot}:admin_id"),
            secrets.get(f"{slot}:admin_secret"),
        )
        if admin_id and admin_secret:
            admin = _client(url, admin_id, admin_secret, **own)
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
            verifier=verifier_client(url, verifier_id, verifier_secret, url, **own),
            service=running,
            admin=admin,
            office_down=down,
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
        **desk_options(settings),
    )
    return AppContext(settings=settings, secrets=secrets, verifier=client)


def start_context(settings: Settings, secrets: SecretStore, demo: bool) -> AppContext:
    if demo:
        return start_demo_context(settings, secrets)
    if settings.mode == "remote" and settings.verifier_url:
        return start_remote_context(settings, secrets)
    return start_embedded_context(settings, secrets)
