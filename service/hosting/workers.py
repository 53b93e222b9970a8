"""`serve --workers N`: a supervised multi-process server on gunicorn (gthread workers).

Why gunicorn: it is the WSGI server operators already run, its master replaces a worker that
dies, drains in-flight requests on SIGTERM (workers stop accepting, finish what they hold, then
exit; SIGKILL only after `graceful_timeout`), and recycles workers after `max_requests` (with
jitter, so they do not all restart at once). The choice against granian was measured
(docs/deploy.md). The desktop app and Windows keep waitress (service/hosting/server.py).

The socket is bound here, before gunicorn starts, and handed over as `fd://N`: `--port 0` then
works and the public URL (token audiences, scan URLs) is known before any worker builds its app.
Workers build the app after the fork (`build_application`), each with its own database pool and
Redis connections. prometheus-client runs in multiprocess mode: `PROMETHEUS_MULTIPROC_DIR` is set
to a fresh directory before anything imports it, and a dead worker's files are marked dead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import socket
import ssl
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.glogging import Logger as GunicornLogger
from gunicorn.http import parser as gunicorn_parser
from gunicorn.workers.gthread import ThreadWorker

from service.composition.settings import read_settings
from service.hosting.syn_gate import SETTLE, close_gate, connection_waiting, gate_closed
from service.hosting.waitress_drain import drained  # one gentle close for both servers
from service.hosting.wsgi import SERVE_OPTIONS, Settings
from service.http.log_text import RedactingFilter

log = logging.getLogger("service.workers")


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    workers: int = 2
    threads: int = 8
    max_requests: int = 20_000
    """Recycle a worker after this many requests (0: never); jitter adds up to 10 %."""
    graceful_timeout: int = 30
    """Seconds a worker gets on SIGTERM to finish in-flight requests before it is killed."""
    timeout: int = 60
    """A worker silent for this long (stuck) is killed and replaced."""
    keepalive: int = 5


class DrainingThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's gthread worker, minus two ways to fail a client's request.

    On SIGTERM the gthread worker stops accepting but keeps its listening socket open until its
    in-flight requests are done; connections the kernel completed meanwhile wait in the backlog
    and are reset when the socket finally closes, after their clients sent a request. This worker
    accepts (and serves) whatever is queued at that moment and closes its listener at once, so
    later connections are refused before anything is sent, which a client or balancer can retry.

    A request refused before its body was read (the batch limit's 503, a 401, a 429) leaves the
    body on the socket. gunicorn then drains at most 64 KiB of it and closes the connection if
    more is left, after answering `Connection: keep-alive`: the client's next request on that
    connection (its retry after `Retry-After`) failed with "server disconnected". This worker
    answers `Connection: close` whenever more than that is left unread (`_closing_unread`).

    An idle keep-alive connection whose time is up (its keep-alive timeout, or the 2 s a stopping
    worker keeps it) is closed gently (`murder_keepalived`), as the single-process drain does
    (service.hosting.waitress_drain): a FIN first, then whatever the client still sends is read
    and dropped until it closes too, for at most LINGER. gunicorn closed it outright, and a
    request crossing that close on the wire met a reset (issue 37 #7). A connection whose next
    request is already waiting when its time is up is answered instead.

    `serve --workers` runs its subclass `service.hosting.gunicorn_guard.GuardedThreadWorker`, which
    also
    reads whole requests before a thread takes them (slow clients); operators running gunicorn
    themselves: `-k service.hosting.gunicorn_guard.GuardedThreadWorker`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering: dict[Any, float] = {}
        """Sockets closed gently (FIN sent), still read until their client closes: deadline."""

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi: Any = _closing_unread(self.wsgi)

    def murder_keepalived(self, force: bool = False) -> None:
        """gunicorn's sweep of idle keep-alive connections, closing gently (see the class);
        `force` (the very end of a stop) closes everything at once, lingering sockets too."""
        now = time.monotonic()
        while self.keepalived_conns:
            conn = self.keepalived_conns[0]
            if conn.timeout > now and not force:
                break
            self.keepalived_conns.popleft()
            with contextlib.suppress(OSError, KeyError, ValueError):
                self.poller.unregister(conn.sock)
            if not force and _request_waiting(conn.sock):
                self.enqueue_req(conn)  # answered (with Connection: close when stopping)
            elif force or not self._linger(conn.sock, now + LINGER):
                self.nr_conns -= 1
                conn.close()
        for sock, until in list(self.lingering.items()):
            if force or now >= until:
                self._end_lingering(sock)

    def _linger(self, sock: Any, until: float) -> bool:
        """Send the FIN and read what comes until the client closes; False when it cannot be
        done (TLS, whose close is its own; a socket already gone): then closed at once."""
        if isinstance(sock, ssl.SSLSocket):
            return False
        try:
            sock.shutdown(socket.SHUT_WR)
            self.poller.register(sock, selectors.EVENT_READ, self._lingering_readable)
        except (OSError, ValueError, KeyError):
            return False
        self.lingering[sock] = until
        return True

    def _lingering_readable(self, sock: Any) -> None:
        if drained(sock):
            self._end_lingering(sock)

    def _end_lingering(self, sock: Any) -> None:
        if self.lingering.pop(sock, None) is None:
            return
        with contextlib.suppress(OSError, KeyError, ValueError):
            self.poller.unregister(sock)
        with contextlib.suppress(OSError):
            sock.close()
        self.nr_conns -= 1  # counted until now: a stopping worker waits for it (at most LINGER)

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if enabled or self.alive:
            return  # only the shutdown path drains
        for listener in self.sockets:
            # Until the accept queue is empty, not until an accept adds no connection: one
            # whose client had already gone is dropped at once (the guard reads its end) and
            # used to end the loop, and the queued connections behind it met a reset. When the
            # whole server stops, the master has closed the gate (service.hosting.syn_gate):
            # nothing new arrives, so wait a moment for handshakes under way too.
            settle = SETTLE if gate_closed(listener) else 0.0
            for _ in range(self.worker_connections):
                if not connection_waiting(listener, settle):
                    break
                self.accept(listener)
            with contextlib.suppress(OSError):
                listener.close()


LINGER = 2.0
"""How long a gently closed connection is read for its client to close too (as the single-process
drain's LINGER)."""


def _request_waiting(sock: Any) -> bool:
    """Whether an idle connection's next request is already on the socket."""
    if isinstance(sock, ssl.SSLSocket):
        return bool(sock.pending())
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return False  # reset by the client: nothing to answer


_DRAINED = getattr(gunicorn_parser, "_DRAIN_MAX_BYTES", 64 * 1024)
"""How much of an unread body gunicorn reads away to keep a connection (gunicorn 27: 64 KiB)."""


def _body_left_unread(body: object) -> bool:
    """Whether more of a request body is left on the socket than gunicorn would drain."""
    reader = getattr(body, "reader", None)
    length = getattr(reader, "length", None)
    if isinstance(length, int):  # Content-Length: what is left of it
        return length > _DRAINED
    # Chunked or read-to-EOF: unknown size; left unread unless the reader reached the end.
    return reader is not None and (
        getattr(reader, "parser", None) is not None or getattr(reader, "finished", True) is False
    )


def _closing_unread(app: Any) -> Any:
    """`app`, answering `Connection: close` when it left a large body unread (see
    `DrainingThreadWorker`): the response tells the client the connection ends, so it sends its
    next request on a new one. `start_response` is the gunicorn response's own method."""

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        result = app(environ, start_response)
        close = getattr(getattr(start_response, "__self__", None), "force_close", None)
        if close is not None and _body_left_unread(environ.get("wsgi.input")):
            close()
        return result

    return wsgi


class RedactingGunicornLogger(GunicornLogger):  # type: ignore[misc]
    """gunicorn's logger with every path and control character in its lines redacted: at DEBUG
    it logs each request's method and path as sent (a payload, for a confused client), and a
    refusal quotes the request line (issue 37 #3)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            logger.addFilter(RedactingFilter())


class _GatedArbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's master, closing the listener's gate (service.hosting.syn_gate) before a
    graceful stop tells the workers to drain: the last worker's close then resets nobody."""

    def stop(self, graceful: bool = True) -> None:
        # Only when this master is the socket's last user: after a binary upgrade (USR2) the
        # old and the new master share it, and a gate would shut the new one out too. The same
        # test gunicorn uses before it unlinks a socket file.
        sole = self.reexec_pid == self.master_pid == 0 and not self.systemd
        if graceful and sole and not self.cfg.reuse_port:
            for listener in self.LISTENERS:
                close_gate(listener.sock)
        super().stop(graceful)


class _Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, options: dict[str, Any]) -> None:
        self._settings = settings
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def run(self) -> None:
        """BaseApplication.run, with the gated master."""
        try:
            _GatedArbiter(self).run()
        except RuntimeError as exc:
            print(f"\nError: {exc}\n", file=sys.stderr, flush=True)
            sys.exit(1)

    def load(self) -> Any:
        from service.hosting.wsgi import build_application, configure_access_log

        if self._settings.access_log:
            configure_access_log()
        return build_application(self._settings)


def _when_ready(url: str) -> Any:
    def hook(server: Any) -> None:
        print(f"listening on {url}", flush=True)

    return hook


def _child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]


def _worker_exit(server: Any, worker: Any) -> None:
    app = getattr(worker, "wsgi", None)
    close = getattr(app, "close", None)
    if close is not None:
        close()


def use_multiprocess_metrics() -> str:
    """Point prometheus-client at a fresh directory; must run before it is first imported."""
    if "prometheus_client" in sys.modules and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        raise RuntimeError("prometheus_client was imported before multiprocess mode was set")
    metrics_dir = tempfile.mkdtemp(prefix="payslip-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    return metrics_dir


def serve(sock: Any, url: str, settings: Settings, options: WorkerOptions, metrics_dir: str) -> int:
    """Run gunicorn on the bound, listening `sock` until it is stopped (SIGTERM: graceful);
    `url` is the address it really listens on, printed once ready."""
    os.set_inheritable(sock.fileno(), True)
    settings = replace(
        settings,
        public_url=settings.public_url or url,
        instance_id=settings.instance_id or f"{os.uname().nodename}:{uuid.uuid4().hex[:12]}",
    )
    config: dict[str, Any] = {
        "bind": [f"fd://{sock.fileno()}"],
        "workers": options.workers,
        "worker_class": "service.hosting.gunicorn_guard.GuardedThreadWorker",
        "threads": options.threads,
        "max_requests": options.max_requests,
        "max_requests_jitter": max(0, options.max_requests // 10),
        "graceful_timeout": options.graceful_timeout,
        "timeout": options.timeout,
        "keepalive": options.keepalive,
        "proc_name": "payslip-verify",
        "control_socket_disable": True,  # one fixed path per user: two servers would collide
        "accesslog": None,  # the app writes its own JSON access lines (service.http.metrics)
        "errorlog": "-",
        "loglevel": (read_settings().log_level or "info").lower(),
        "logger_class": "service.hosting.workers.RedactingGunicornLogger",
        "preload_app": False,
        "when_ready": _when_ready(url),
        "child_exit": _child_exit,
        "worker_exit": _worker_exit,
    }
    master = os.getpid()
    try:
        _Server(settings, config).run()
    except SystemExit as stop:
        return int(stop.code or 0)
    finally:
        # Workers are forked inside run() and leave it by SystemExit too: only the master may
        # remove what every worker shares.
        if os.getpid() == master:
            with contextlib.suppress(OSError):
                sock.close()
            shutil.rmtree(metrics_dir, ignore_errors=True)
            sys.stdout.flush()
    return 0


def serve_cli(args: Any) -> int:
    """`serve --workers N` (N > 1): refuse a setup that cannot share state, with one line each,
    before binding or forking; then run gunicorn."""
    from service.composition.instance import (
        InstanceError,
        check_instance,
        data_dir_or_default,
        resolve_store,
    )

    if args.demo:
        raise InstanceError("--demo runs a single process; drop --workers")
    if args.tls_cert or args.tls_key:  # gunicorn's TLS would bypass the slow-client guard
        raise InstanceError(
            "--tls-cert/--tls-key serve HTTPS in one process; with --workers, terminate TLS at "
            "a reverse proxy in front (docs/deploy.md) and bind --host 127.0.0.1"
        )
    store_kind, database_url = resolve_store(args.store, args.database_url)
    if store_kind != "postgres":
        raise InstanceError(
            "--workers above 1 needs PostgreSQL: set PAYSLIP_DATABASE_URL "
            "(or pass --store postgres --database-url URL)"
        )
    data_dir = data_dir_or_default(args.data_dir)
    check_instance(data_dir, store_kind, database_url)  # the store and its key come first
    env = read_settings()
    redis_url = args.redis_url or env.redis_url
    if not redis_url:
        raise InstanceError(
            "--workers above 1 needs Redis for limits shared by all workers: "
            "pass --redis-url redis://HOST:6379/0 or set PAYSLIP_REDIS_URL"
        )
    check_redis(redis_url)
    metrics_dir = use_multiprocess_metrics()
    from service.hosting.server import bind, listening_url, url_for

    sock = bind(args.host, args.port)
    url = url_for(sock)
    # The command line's store, Redis, URLs and environment replace the variables' (a URL left
    # out stays unset, as for `serve` in one process).
    settings = replace(
        Settings.of_env(env, data_dir, args.public_url or url),
        store_kind=store_kind,
        database_url=database_url,
        redis_url=redis_url,
        admin_network=args.admin_network,
        **{name: getattr(args, name) for name in SERVE_OPTIONS},
    )
    options = WorkerOptions(
        workers=args.workers,
        threads=args.threads,
        max_requests=args.max_requests,
        graceful_timeout=args.graceful_timeout,
    )
    return serve(sock, listening_url(sock), settings, options, metrics_dir)


def check_redis(url: str) -> None:
    """A wrong or unreachable Redis URL at start is an operator mistake: one line, no start.
    (Once running, an outage fails open instead: service/http/shared_limits.py.)"""
    import redis

    from service.composition.instance import InstanceError

    try:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    except ValueError:
        raise InstanceError("the Redis URL is not valid; expected redis://HOST:PORT/DB") from None
    try:
        client.ping()
    except redis.RedisError as exc:
        raise InstanceError(
            f"cannot reach Redis ({type(exc).__name__}); check --redis-url / PAYSLIP_REDIS_URL "
            "and that the server is running"
        ) from None
    finally:
        client.close()
