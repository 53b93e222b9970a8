"""`python -m service init | admin ... | serve ...` (PROTOCOL §9; the help a user reads names
no file they do not have)."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from service.cli.args import duplicate_name_refusal, parse_cli
from service.cli.errors import operator_message, tell
from service.cli.pair import pair_verifier
from service.composition.instance import (
    InstanceError,
    data_dir_or_default,
    domain_for,
    freeze_long_lived,
    init_instance,
    load_master_key,
    offline_config,
    open_store,
)
from service.composition.settings import SettingsError, read_settings

DESCRIPTION = (
    "Payslip Verify's service: create an instance (init), manage its issuers, verifiers and keys "
    "(admin), and serve its HTTP API (serve). Settings also come from PAYSLIP_* variables."
)
DATA_DIR_HELP = (
    "the instance's data directory (default: PAYSLIP_DATA_DIR, else the user data directory)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m service", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = sub.add_parser("init", help="create a new instance")
    init.add_argument("--data-dir", metavar="D", help=DATA_DIR_HELP)

    admin = sub.add_parser("admin", help="manage issuers, verifiers, keys and clients")
    admin.add_argument("--data-dir", metavar="D", help=DATA_DIR_HELP)
    actions = admin.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name in ("create-issuer", "create-verifier"):
        kind = name.split("-")[1]
        create = actions.add_parser(name, help=f"a new {kind} with its client credentials")
        create.add_argument("--name", required=True, help=f"the {kind}'s name, as people know it")
        create.add_argument(
            "--allow-duplicate-name",
            action="store_true",
            help=f"create it even if another {kind} has that name",
        )
    actions.add_parser("rotate-key", help="a new encryption key for an issuer").add_argument(
        "--issuer-id", required=True, help="the issuer (its id from create-issuer or list)"
    )
    actions.add_parser("retire-key", help="destroy a key version for good").add_argument(
        "--key-version", required=True, help="the key version, <issuer_id>.<n>"
    )
    actions.add_parser("disable-client", help="refuse a client's tokens from now").add_argument(
        "--client-id", required=True, help="the client to disable"
    )
    pair = actions.add_parser("pair-verifier", help="a one-time link that signs a phone in")
    pair.add_argument("--client-id", required=True, help="the verifier client the phone joins")
    pair.add_argument("--public-url", help="the address phones reach this service at")
    pair.add_argument(
        "--days",
        type=int,
        help="how long the phone stays signed in (1 to 3650; default 90)",
    )
    signing = actions.add_parser(
        "rotate-signing-key", help="a new token signing key; the old one verifies for 15 min"
    )
    signing.add_argument(
        "--drop-previous",
        action="store_true",
        help="refuse tokens signed with the old key at once (it may have leaked)",
    )
    actions.add_parser(
        "rotate-receipt-key", help="a new receipt key; the old one still checks its receipts"
    )
    actions.add_parser(
        "revoke-receipt-key", help="after a leak: every receipt under this key is refused"
    ).add_argument("--kid", required=True, help="the receipt key's id (see list-receipt-keys)")
    actions.add_parser("list-receipt-keys", help="every receipt key and its state")
    actions.add_parser("list", help="issuers, verifiers, keys and record counts (no secrets)")
    for action in actions.choices.values():  # `admin list --data-dir D` works too
        action.add_argument(
            "--data-dir", metavar="D", default=argparse.SUPPRESS, help=DATA_DIR_HELP
        )

    migrate = sub.add_parser("migrate", help="apply pending PostgreSQL schema migrations")
    migrate.add_argument("--database-url", help="postgresql://... (default: PAYSLIP_DATABASE_URL)")

    move = sub.add_parser("migrate-store", help="copy a TinyDB instance into PostgreSQL")
    move.add_argument("--from", dest="source", required=True, help="the TinyDB data directory")
    move.add_argument("--to", dest="target", required=True, help="postgresql://... URL")

    serve = sub.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--data-dir", metavar="D", help=DATA_DIR_HELP)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this "
        "computer only; 0.0.0.0 for every network)",
    )
    serve.add_argument("--port", type=int, default=8080, help="the port (default 8080; 0: any)")
    serve.add_argument(
        "--public-url",
        help="the address others (phones, desks) reach this service at; badges point there",
    )
    serve.add_argument("--tls-cert", help="PEM certificate (chain): serve HTTPS (with --tls-key)")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert")
    serve.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve plain HTTP on a --host other computers reach (everything crosses in clear)",
    )
    serve.add_argument(
        "--admin-network",
        action="store_true",
        help="let the admin API and /metrics answer callers beyond this computer "
        "(default: loopback only)",
    )
    serve.add_argument("--issuer-url", help="the issuer API's base URL (default: --public-url)")
    serve.add_argument("--verifier-url", help="the verifier API's base URL (default: --public-url)")
    serve.add_argument("--auth-url", help="the token endpoint's base URL (default: --public-url)")
    serve.add_argument(
        "--environment",
        choices=["production", "sandbox"],
        default="production",
        help="which environment its tokens are for (default production)",
    )
    serve.add_argument(
        "--store",
        choices=["tinydb", "postgres"],
        help="default: postgres when a database URL is given, else tinydb",
    )
    serve.add_argument("--database-url", help="postgresql://... (default: PAYSLIP_DATABASE_URL)")
    serve.add_argument(
        "--workers", type=int, default=1, help="worker processes (above 1: PostgreSQL, gunicorn)"
    )
    serve.add_argument("--threads", type=int, default=8, help="threads per worker (default 8)")
    serve.add_argument("--redis-url", help="shared limits for --workers (PAYSLIP_REDIS_URL)")
    serve.add_argument(
        "--max-requests", type=int, default=20_000, help="recycle a worker after N requests"
    )
    serve.add_argument(
        "--graceful-timeout",
        type=int,
        default=30,
        help="seconds a stop (SIGTERM) waits for the requests in flight",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="a temporary demo instance with sample payslips; prints its credentials",
    )
    return parser


def _print(obj: Any) -> None:
    print(json.dumps(obj, indent=2), flush=True)


def _admin(args: argparse.Namespace) -> dict[str, Any]:
    data_dir = data_dir_or_default(args.data_dir)
    store = open_store(data_dir)
    try:
        domain = domain_for(store, offline_config(load_master_key(data_dir)))
        admin = domain.admin
        if args.action == "pair-verifier":
            return pair_verifier(domain.pairings, args.client_id, args.public_url, args.days)
        if args.action == "rotate-signing-key":
            return domain.signing.rotate(drop_previous=args.drop_previous)
        if args.action == "rotate-receipt-key":
            return domain.receipt_keys.rotate()
        if args.action == "revoke-receipt-key":
            return domain.receipt_keys.revoke(args.kid)
        if args.action == "list-receipt-keys":
            return domain.receipt_keys.listing()
        if args.action in ("create-issuer", "create-verifier") and not args.allow_duplicate_name:
            refusal = duplicate_name_refusal(store, args.action.split("-")[1], args.name)
            if refusal is not None:
                raise InstanceError(refusal)
        if args.action == "create-issuer":
            return admin.create_issuer(args.name).wire()
        if args.action == "create-verifier":
            return admin.create_verifier(args.name).wire()
        if args.action == "rotate-key":
            return admin.rotate_key(args.issuer_id).wire()
        if args.action == "retire-key":
            return admin.retire_key(args.key_version).wire()
        if args.action == "disable-client":
            return admin.disable_client(args.client_id).wire()
        return admin.overview().wire()
    finally:
        store.close()


def _serve(args: argparse.Namespace) -> int:
    from service.hosting.network_address import (
        beyond_loopback,
        needs_tls_refusal,
        plain_http_warning,
    )

    # Before anything binds: a listener other computers reach speaks HTTPS, or the operator
    # said in so many words that it may not (and is told what crosses the network in clear).
    if beyond_loopback(args.host) and not (args.tls_cert or args.tls_key):
        if not args.insecure_http:
            raise InstanceError(needs_tls_refusal(args.host))
        tell(plain_http_warning(args.host))
    if args.workers > 1:  # before anything imports prometheus-client (multiprocess mode)
        try:
            from service.hosting.workers import serve_cli
        except ImportError:
            raise InstanceError(
                "--workers above 1 needs gunicorn (Linux or macOS): pip install gunicorn"
            ) from None
        return serve_cli(args)
    from service.hosting.network_address import loopback_warning
    from service.hosting.server import start, start_demo

    options: dict[str, Any] = {
        "public_url": args.public_url,
        "issuer_url": args.issuer_url,
        "verifier_url": args.verifier_url,
        "auth_url": args.auth_url,
        "environment": args.environment,
        "store_kind": args.store,
        "database_url": args.database_url,
        "threads": args.threads,
        "in_thread": False,
        "graceful_timeout": float(args.graceful_timeout),
        "insecure_http": args.insecure_http,
        "admin_network": args.admin_network,
    }
    if args.tls_cert or args.tls_key:
        from service.hosting.tls import TlsError, server_context

        if not (args.tls_cert and args.tls_key):
            raise InstanceError("HTTPS needs both --tls-cert and --tls-key")
        try:
            options["tls"] = server_context(args.tls_cert, args.tls_key)
        except TlsError as exc:
            raise InstanceError(f"--tls-cert/--tls-key: {exc}") from None
    if args.demo:
        running = start_demo(args.host, args.port, **options)
    else:
        running = start(data_dir_or_default(args.data_dir), args.host, args.port, **options)
    if running.demo is not None:
        from service.cli.demo_output import demo_output

        shown = demo_output(running.demo, running.config, running.created, running.temporary_dir)
        _print({"demo": shown})
    freeze_long_lived()
    warning = loopback_warning(running.config.scan_base, "badges and pairing links")
    if warning:  # before "listening on": whoever waits for that line has the warning too
        tell(warning)
    # SIGTERM (systemd, docker stop) drains like Ctrl+C: no new connections, the requests in
    # flight answered (within --graceful-timeout), then the store closed and its journal
    # compacted; a second signal stops at once. SIGINT is set too: a process started in the
    # background inherits SIGINT ignored, and Python then never raises KeyboardInterrupt for it.
    # Both before `listening on`: a caller may stop the server the moment it reads that line,
    # and a signal that landed before these handlers would skip the cleanup below (a demo's
    # temporary folder left behind).
    signal.signal(signal.SIGTERM, running.control.on_signal)
    signal.signal(signal.SIGINT, running.control.on_signal)
    try:
        print(f"listening on {running.listening}", flush=True)  # the address really bound
        running.serve()
    finally:
        running.close()  # a demo's temporary directory goes with it
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_cli(_parser(), sys.argv[1:] if argv is None else argv)
    # A server logs as servers do; one-shot commands say what matters in their one line.
    default_level = "INFO" if args.command == "serve" else "ERROR"
    try:
        level = read_settings().log_level or default_level
    except SettingsError as exc:  # before logging is set up: the same one line as below
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    from service.http.log_text import RedactingFilter

    logging.getLogger("waitress").addFilter(RedactingFilter())  # it may quote a request's path
    try:
        if args.command == "init":
            _print(init_instance(data_dir_or_default(args.data_dir)))
            return 0
        if args.command == "admin":
            _print(_admin(args))
            return 0
        if args.command == "migrate-store":
            from pathlib import Path

            from service.cli.migrate_store import migrate_store

            _print(migrate_store(Path(args.source), args.target))
            return 0
        if args.command == "migrate":
            from service.cli.migrate import migrate

            _print(migrate(args.database_url))
            return 0
        return _serve(args)
    except BrokenPipeError:
        return 1  # stdout closed early (`| head`): nothing left to tell anyone
    except Exception as exc:  # the one place that turns failures into a line
        port, host = getattr(args, "port", None), getattr(args, "host", None)
        print(f"error: {operator_message(exc, port, host)}", file=sys.stderr)
        return 2
