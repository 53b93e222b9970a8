"""Addresses an office's service is reached at: loopback detection and the port chosen once.

A service that puts `http://127.0.0.1:...` on its badges prints links no phone can open; every
command that makes badges or links checks its address here and says so in one line. The app's
embedded service keeps one port for life (chosen on first run: 8080, else the next free one), so
addresses saved elsewhere keep working after a restart.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from urllib.parse import urlsplit

DEFAULT_PORT = 8080
PORT_SEARCH = 100
"""How many ports after the preferred one are tried before asking the system for any."""

LOOPBACK_HOST = "127.0.0.1"
ALL_INTERFACES = "0.0.0.0"


def is_loopback_url(url: str) -> bool:
    """True when `url`'s host is this computer only (127.x, ::1, localhost, 0.0.0.0)."""
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def loopback_warning(
    url: str, what: str = "badges and links", option: str = "--public-url"
) -> str | None:
    """One line for a command's stderr when `url` only works on this computer, else None. It
    names the command's `option` that sets the address, so the fix is in the line."""
    if not is_loopback_url(url):
        return None
    return (
        f"warning: {url} is this computer's own address: phones and other computers cannot open "
        f"{what} made with it (give the address they reach this service at with {option})"
    )


def port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def choose_port(host: str, preferred: int = DEFAULT_PORT) -> int:
    """`preferred` when it is free on `host`, else the next free port after it (or any)."""
    for port in range(preferred, min(preferred + PORT_SEARCH, 65536)):
        if port_free(host, port):
            return port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def beyond_loopback(host: str) -> bool:
    """Whether a listener bound to `host` is reachable from other computers: every interface
    (`0.0.0.0`, `::`), an address of this computer on a network, or a name. Unlike
    `is_loopback_url` (which asks whether an address is one a client elsewhere could use),
    `0.0.0.0` here is the widest exposure there is."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def plain_http_warning(host: str) -> str:
    """What `serve --insecure-http` says on a listener beyond loopback."""
    return (
        f"warning: serving plain HTTP on {host}, reachable from the network: verify answers "
        "(employee names, bank accounts, tax numbers, addresses), client secrets, access tokens "
        "and pairing codes cross it in clear; serve HTTPS with --tls-cert/--tls-key, or keep "
        "this behind a TLS proxy on a network no one else shares"
    )


def needs_tls_refusal(host: str) -> str:
    return (
        f"--host {host} is reachable from other computers, and plain HTTP would send verify "
        "answers, client secrets, tokens and pairing codes in clear: serve HTTPS with "
        "--tls-cert and --tls-key, or pass --insecure-http to accept that (a TLS proxy in front)"
    )
