"""Hosting the service: waitress (threaded, pure Python) on a socket bound before the app is built.

Binding first lets `--port 0` work: the chosen port is known before the config (and so the token
audiences and scan URLs) is made. The app embeds the service through `start`; the CLI's single
process `serve` runs it in the foreground. `serve --workers N` runs gunicorn instead
(service/hosting/workers.py), on a socket bound by `bind` here.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import ssl
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from waitress import wasyncore
from waitress.server import create_server

from service.composition.config import ServiceConfig
from service.composition.demo import DemoInstance, seed_demo
from service.composition.instance import (
    SERVER_REFRESH_INTERVAL,
    InstanceError,
    domain_for,
    init_instance,
    is_initialised,
    load_master_key,
    make_config,
    open_store,
)
from service.domain.clock import SystemClock
from service.hosting.keys_keeper import KeysKeeper
from service.hosting.network_address import beyond_loopback, needs_tls_refusal
from service.hosting.tls import serve_tls
from service.hosting.waitress_drain import DEFAULT_GRACE, StopControl, serve_until_stopped
from service.hosting.waitress_guard import SERVER_SETTINGS, guard_server
from service.http.app import build_app
from service.storage.port import Store

log = logging.getLogger("service.server")
MAX_WAITRESS_BODY = 32 * 1024 * 1024


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port`. When the port is taken (the app then tries the next
    one) the new socket is closed before the error goes up, not left to the garbage collector."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except BaseException:
        sock.close()
        raise
    return sock


def listening_url(sock: socket.socket, tls: bool = False) -> str:
    """The address `sock` really listens on, as `serve` prints it (`http://0.0.0.0:8080`: every
    interface), where `url_for` gives the one this computer's own clients use."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def url_for(sock: socket.socket, tls: bool = False) -> str:
    """The address this computer reaches `sock` at: a socket bound to all interfaces is
    reached on loopback (0.0.0.0 is no address a client can use on every system)."""
    host, port = sock.getsockname()[:2]
    if host == "0.0.0.0":
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


@dataclass(slots=True)
class Running:
    """A started server: its URL, config and store, and how to stop it."""

    url: str
    config: ServiceConfig
    store: Store
    server: Any
    control: StopControl = field(default_factory=StopControl)
    thread: threading.Thread | None = None
    demo: DemoInstance | None = None
    created: dict[str, str] | None = None
    """The admin credentials, when this start initialised the data directory."""
    temporary_dir: Path | None = None
    """A data directory made for this run only (demo mode), removed when the store closes: a
    demo's invented data and its master key must not pile up in the temporary folder."""
    keeper: KeysKeeper | None = None
    """The thread that keeps the signing keys recent for the head check; stopped on close."""
    listening: str = ""
    """The address the socket really listens on (`listening_url`): what `serve` prints."""

    def serve(self) -> None:
        """Serve in this thread until `control.request_stop()` (a signal handler's, say), then
        drain: in-flight requests are answered within the grace period (waitress_drain)."""
        serve_until_stopped(self.server, self.control)

    def stop(self) -> None:
        """Drain and stop a server running in its thread (the app quitting), then close the
        store: requests in flight are answered first, within the grace period."""
        if self.thread is not None and self.thread.is_alive() and self.control.attached:
            self.control.request_stop()
            self.thread.join(timeout=self.control.grace + 10)
        elif self.thread is not None and self.thread.is_alive():
            # A thread running waitress's own loop (a test's proxy): close on the loop's own
            # thread, as closing its sockets from here races its poll(). Closing every channel
            # ends the loop at once; the queued thunk may close the trigger before the wake-up
            # byte is written, which then fails with EBADF and leaves nothing to do.
            with contextlib.suppress(OSError):
                self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.server._map))
            self.thread.join(timeout=10)
        else:
            self.server.close()
        self.close()

    def close(self) -> None:
        """Close the store, and remove the data directory if it was made for this run."""
        if self.keeper is not None:
            self.keeper.stop()
        self.store.close()
        if self.temporary_dir is not None:
            shutil.rmtree(self.temporary_dir, ignore_errors=True)


def start(
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    public_url: str | None = None,
    issuer_url: str | None = None,
    verifier_url: str | None = None,
    auth_url: str | None = None,
    environment: str = "production",
    store_kind: str | None = None,
    database_url: str | None = None,
    threads: int = 8,
    demo: bool = False,
    init_if_missing: bool = False,
    in_thread: bool = True,
    sock: socket.socket | None = None,
    tls: ssl.SSLContext | None = None,
    graceful_timeout: float = DEFAULT_GRACE,
    insecure_http: bool = False,
    admin_network: bool = False,
) -> Running:
    """Build and start a server; with in_thread=False the caller runs `Running.serve()` itself.
    `sock` is an already listening socket (shared by pre-forked workers); `tls` a server
    context (service.hosting.tls) to serve HTTPS instead of HTTP. `graceful_timeout` bounds how
    long a stop waits for the requests in flight.

    A listener reachable from other computers (`beyond_loopback`) serves HTTPS, or plain HTTP
    only when the caller says so with `insecure_http` (and tells its user what that means:
    `serve --insecure-http` prints `plain_http_warning`); otherwise InstanceError, before
    anything is opened. `admin_network`: the admin API answers callers beyond this computer too
    (by default only loopback)."""
    if tls is None and not insecure_http and beyond_loopback(host):
        raise InstanceError(needs_tls_refusal(host))
    created = None
    if init_if_missing and not is_initialised(data_dir):
        created = init_instance(data_dir, store_kind, database_url)
    with contextlib.ExitStack() as undo:  # what is open so far is closed if a later step fails
        sock = sock or bind(host, port)
        undo.callback(sock.close)
        config = make_config(
            load_master_key(data_dir),
            public_url or url_for(sock, tls is not None),
            issuer_url,
            verifier_url,
            auth_url,
            environment,
        )
        config = replace(config, admin_network=admin_network)
        store = open_store(data_dir, store_kind, database_url, SERVER_REFRESH_INTERVAL)
        undo.callback(store.close)
        seeded = seed_demo(domain_for(store, config)) if demo else None
        served = build_app(config, store, SystemClock())
        server = create_server(
            served.wsgi,
            sockets=[sock],
            threads=threads,
            max_request_body_size=MAX_WAITRESS_BODY,
            ident="payslip-verify",
            clear_untrusted_proxy_headers=True,
            # A 1000-record pay run is ~1.5 MB: read it in 64 KiB steps and keep it in memory
            # (waitress defaults to 8 KiB reads and spills bodies over 512 KiB to a temp file).
            recv_bytes=64 * 1024,
            inbuf_overflow=16 * 1024 * 1024,
            **SERVER_SETTINGS,
        )
        undo.callback(server.close)  # its trigger's pipe too
        guard_server(server, served.preflight)
        keeper = KeysKeeper(served.refresh_keys)  # the head judges tokens by recent keys
        keeper.start()
        undo.callback(keeper.stop)
        if tls is not None:
            serve_tls(server, tls)
        undo.pop_all()  # started: `Running.stop` closes all of it from now on
    control = StopControl(graceful_timeout)
    control.attach(server)
    running = Running(
        url_for(sock, tls is not None),
        config,
        store,
        server,
        control,
        demo=seeded,
        created=created,
        keeper=keeper,
        listening=listening_url(sock, tls is not None),
    )
    if in_thread:
        running.thread = threading.Thread(target=running.serve, name="payslip-service", daemon=True)
        running.thread.start()
    return running


def start_demo(host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> Running:
    """A fresh temporary instance with demo data; its directory is removed when it stops."""
    data_dir = Path(tempfile.mkdtemp(prefix="payslip-demo-"))
    try:
        running = start(data_dir, host, port, demo=True, init_if_missing=True, **kwargs)
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
    running.temporary_dir = data_dir
    return running


def ensure_instance(data_dir: Path) -> dict[str, str] | None:
    """Initialise `data_dir` when it holds no instance; returns the new admin credentials once."""
    if is_initialised(data_dir):
        return None
    return init_instance(data_dir)
