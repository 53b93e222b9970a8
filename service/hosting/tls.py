"""HTTPS for the single-process service: waitress on a socket whose connections speak TLS.

Waitress has no TLS of its own. An office that runs the service on its network without a
reverse proxy still must not send client secrets and verdicts in clear, so each accepted
connection is wrapped in the operator's certificate here. Waitress's channels are non-blocking:
the handshake and every TLS record happen inside its `recv`/`send`, and OpenSSL's "want more
data" (a record or a handshake half-arrived) is reported to waitress as "nothing yet" instead of
an error that would drop the connection. A client speaking plain HTTP to the port fails the
handshake and is disconnected.
"""

from __future__ import annotations

import ssl
import time
from pathlib import Path
from typing import Any

from service.hosting.waitress_guard import GuardedChannel

_WANT = (ssl.SSLWantReadError, ssl.SSLWantWriteError)


class TlsError(ValueError):
    """The certificate or key cannot be used (missing, unreadable, not matching)."""


def server_context(cert_file: Path | str, key_file: Path | str) -> ssl.SSLContext:
    """A TLS 1.2+ server context for the operator's PEM certificate (chain) and key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert_file), str(key_file))
    except FileNotFoundError as exc:
        raise TlsError(f"no file at {exc.filename}") from None
    except (ssl.SSLError, OSError):
        raise TlsError("the certificate and key could not be read as a matching PEM pair") from None
    return context


class TlsChannel(GuardedChannel):
    """A guarded channel over a TLS socket: "want read/write" means "nothing yet"."""

    def handle_read(self) -> None:
        # Waitress's own, except that "want read" (a handshake or a record half-arrived) waits
        # for more bytes instead of counting as the client having gone.
        try:
            data = self.recv(self.adj.recv_bytes)
        except _WANT:
            return
        except OSError:
            self.handle_close()
            return
        if data:
            self.last_activity = time.time()
            self.received(data)
        else:
            self.connected = False

    def send(self, data: bytes, do_close: bool = True) -> int:
        try:
            return int(super().send(data, do_close))
        except _WANT:
            return 0


def serve_tls(server: Any, context: ssl.SSLContext) -> None:
    """Make a guarded waitress server (see `guard_server`) accept TLS connections only."""
    plain_accept = server.accept

    def accept() -> tuple[Any, Any] | None:
        accepted = plain_accept()
        if accepted is None:
            return None
        conn, addr = accepted
        conn.setblocking(False)
        return context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False), addr

    server.accept = accept
    server.channel_class = TlsChannel
    server.adj.url_scheme = "https"  # the app's wsgi.url_scheme: HSTS on every answer
