"""The WSGI entry point for operators who run the server themselves:

    gunicorn --worker-class gthread --workers 4 --threads 8 'service.hosting.wsgi:application'

`application` is built on first access (not at import) from the environment, once per worker
process, so every worker opens its own database pool and Redis connections after the fork
(never use `--preload`: connection pools do not survive a fork). `python -m service serve
--workers N` builds the same thing from its command line through `build_application`.

Environment (PROTOCOL §9 plus the scale-out settings, docs/deploy.md):
PAYSLIP_DATA_DIR, PAYSLIP_DATABASE_URL, PAYSLIP_MASTER_KEY, PAYSLIP_PUBLIC_URL (required),
PAYSLIP_ISSUER_URL / PAYSLIP_VERIFIER_URL / PAYSLIP_AUTH_URL, PAYSLIP_ENVIRONMENT,
PAYSLIP_REDIS_URL, PAYSLIP_REDIS_FAIL_CLOSED=1, PAYSLIP_REDIS_PREFIX (default `payslip`),
PAYSLIP_INSTANCE_ID (default: host name and the server master's pid, so all workers of one
server share one batch limit), PAYSLIP_ACCESS_LOG (`json`, the default, or `off`),
PROMETHEUS_MULTIPROC_DIR (an empty directory, so /metrics adds up every worker). Their types,
defaults and help: service/composition/settings.py.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.composition.settings import EnvSettings

log = logging.getLogger("service.wsgi")

FROM_ENV = (
    "database_url",
    "redis_url",
    "issuer_url",
    "verifier_url",
    "auth_url",
    "environment",
    "instance_id",
    "redis_fail_closed",
    "redis_prefix",
)
"""The worker settings taken as they are from the PAYSLIP_* variable of the same name."""
SERVE_OPTIONS = ("issuer_url", "verifier_url", "auth_url", "environment")
"""The worker settings `serve --workers` takes from its options of the same name instead."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything one worker needs to build the app; plain data, so it crosses a fork."""

    data_dir: Path
    public_url: str
    store_kind: str | None = None
    database_url: str | None = None
    redis_url: str | None = None
    issuer_url: str | None = None
    verifier_url: str | None = None
    auth_url: str | None = None
    environment: str = "production"
    instance_id: str = ""
    redis_fail_closed: bool = False
    redis_prefix: str = "payslip"
    access_log: bool = True
    admin_network: bool = False
    """The admin API beyond loopback (`serve --admin-network`); loopback only by default."""

    @classmethod
    def from_env(cls) -> Settings:
        from service.composition.instance import InstanceError, data_dir_or_default
        from service.composition.settings import read_settings

        env = read_settings()
        public_url = env.public_url
        if not public_url:
            raise InstanceError(
                "PAYSLIP_PUBLIC_URL is not set: the WSGI entry point needs the public address "
                "clients reach this service at (token audiences and scan URLs use it)"
            )
        return cls.of_env(env, data_dir_or_default(env.data_dir), public_url)

    @classmethod
    def of_env(cls, env: EnvSettings, data_dir: Path, public_url: str) -> Settings:
        """The PAYSLIP_* settings for this data folder and public address: all the WSGI entry
        point reads, and what `serve --workers` starts from before its options replace some. One
        place names the variables a worker takes, so a new one reaches both ways to start."""
        same_names = {name: getattr(env, name) for name in FROM_ENV}
        return cls(data_dir, public_url, **same_names, access_log=env.access_log != "off")


class WorkerApp:
    """The WSGI app of one worker, with what it must close when the worker exits."""

    def __init__(self, app: Callable[..., Iterable[bytes]], closers: list[Callable[[], None]]):
        self._app = app
        self._closers = closers

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        return self._app(environ, start_response)

    def close(self) -> None:
        for close in reversed(self._closers):
            try:
                close()
            except Exception as exc:  # exiting anyway: say what failed, not a traceback
                log.warning("closing %s failed: %s", close, type(exc).__name__)


def default_instance_id() -> str:
    """One `serve` = one instance: its workers share the parent (the server's master) pid."""
    return f"{socket.gethostname()}:{os.getppid()}"


def build_application(settings: Settings) -> WorkerApp:
    """Open the store (migrating PostgreSQL if needed), connect to Redis, build the app."""
    from service.composition.instance import (
        SERVER_REFRESH_INTERVAL,
        freeze_long_lived,
        load_master_key,
        make_config,
        open_store,
    )
    from service.domain.clock import SystemClock
    from service.http.app import create_app
    from service.http.metrics import note_fail_open
    from service.http.shared_limits import SharedState

    config = make_config(
        load_master_key(settings.data_dir),
        settings.public_url,
        settings.issuer_url,
        settings.verifier_url,
        settings.auth_url,
        settings.environment,
    )
    config = replace(
        config,
        instance_id=settings.instance_id or default_instance_id(),
        admin_network=settings.admin_network,
    )
    store = open_store(
        settings.data_dir, settings.store_kind, settings.database_url, SERVER_REFRESH_INTERVAL
    )
    closers: list[Callable[[], None]] = [store.close]
    shared = None
    if settings.redis_url:
        shared = SharedState(
            settings.redis_url,
            prefix=settings.redis_prefix,
            fail_closed=settings.redis_fail_closed,
            on_fail_open=note_fail_open,
        )
        closers.append(shared.close)
    else:
        log.warning("no PAYSLIP_REDIS_URL: rate limits and the batch limit count per process")
    app = create_app(config, store, SystemClock(), shared, access_log=settings.access_log)
    freeze_long_lived()
    return WorkerApp(app, closers)


def configure_access_log() -> None:
    """Access lines are JSON objects, one per line, on stderr without any prefix."""
    access = logging.getLogger("service.access")
    if access.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False


_built: WorkerApp | None = None
_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """`service.hosting.wsgi:application`, built from the environment on first access."""
    global _built
    if name != "application":
        raise AttributeError(name)
    with _lock:
        if _built is None:
            configure_access_log()
            _built = build_application(Settings.from_env())
        return _built
