"""Restarting this computer's embedded service from a screen: the Service screen's Restart and
Save buttons, and the "Retry" and "Choose another port" of the office-service-down notice.

Qt-free, so the notice on the Issue screen and the Service screen share one rule: the service
comes back on its kept port, listen address, office address and certificate, or, when another
program still holds the port, on a private stand-in port with `AppContext.office_down` set.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from app.shell.context import AppContext, start_office_service
from service.composition.config import default_data_dir
from service.hosting.server import Running, start

__all__ = ["instance_dir", "restart_embedded", "with_port"]


def instance_dir(context: AppContext) -> Path | None:
    """The embedded service's data folder (None for a service elsewhere)."""
    running = context.service
    if running is None:
        return None
    store_dir = getattr(running.store, "data_dir", None)
    if store_dir is not None:
        return Path(store_dir).parent
    settings = context.settings
    return Path(settings.data_dir) if settings.data_dir else default_data_dir()


def restart_embedded(context: AppContext) -> Running:
    """Stop the embedded service and start it again on the same address and data folder, so
    every client of this app (and any paired desk) keeps working without new settings."""
    old = context.service
    if old is None:
        raise RuntimeError("this desk does not run the service itself")
    folder = instance_dir(context)
    assert folder is not None
    environment = old.config.environment
    # A demo's temporary folder outlives this stop: the restarted service takes it over (and
    # removes it when it stops in turn).
    temporary, old.temporary_dir = old.temporary_dir, None
    old.stop()
    if context.demo is not None:
        port = urlsplit(old.url).port or 0
        context.service = start(folder, port=port, environment=environment)
    else:  # the kept port, listen address, office address and certificate of the settings
        context.service, context.office_down = start_office_service(
            context.settings, folder, environment
        )
    context.service.temporary_dir = temporary
    context.follow_service()
    return context.service


def with_port(address: str, old: int, new: int) -> str:
    """`address` with its port `old` replaced by `new` (an address without that explicit port,
    a reverse proxy's say, is left as it is)."""
    parts = urlsplit(address)
    if parts.port != old or not parts.hostname:
        return address
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return urlunsplit(parts._replace(netloc=f"{host}:{new}"))
