"""An instance on disk: its data directory, master key and store (PROTOCOL §9).

This is the composition root for everything that touches files or environment variables, so the
domain below it stays free of both.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shlex
import shutil
from pathlib import Path

from service.composition.config import ServiceConfig, default_data_dir
from service.composition.settings import read_settings
from service.domain.clock import Clock, SystemClock
from service.domain.context import Domain, build_domain, holds_instance
from service.domain.tokens import Audiences
from service.files.private import private_dir
from service.protocol.crypto import new_key
from service.protocol.encoding import EncodingError, b64url_decode, b64url_encode
from service.storage.port import Store, StoreUnavailable

MASTER_KEY_FILE = "master.key"
STORE_DIR = "db"
INSTANCE_FILE = "instance.json"


class InstanceError(Exception):
    """A one-line operator error: wrong directory, missing key, instance already there."""


def data_dir_or_default(data_dir: str | Path | None) -> Path:
    return Path(data_dir) if data_dir else default_data_dir()


def load_master_key(data_dir: Path) -> bytes:
    env = read_settings().master_key
    if env is not None:
        return _decode_master_key(env.get_secret_value().strip(), "PAYSLIP_MASTER_KEY")
    path = data_dir / MASTER_KEY_FILE
    try:
        text = path.read_text("ascii").strip()
    except UnicodeDecodeError:
        text = ""  # not base64url text at all: reported below like any malformed key
    except FileNotFoundError:
        raise InstanceError(
            f"no master key at {path}; run `python -m service init --data-dir "
            f"{shlex.quote(str(data_dir))}` or set PAYSLIP_MASTER_KEY"
        ) from None
    return _decode_master_key(text, str(path))


def _decode_master_key(text: str, where: str) -> bytes:
    try:
        key = b64url_decode(text)
    except EncodingError:
        key = b""
    if len(key) != 32:
        raise InstanceError(f"the master key in {where} is not 32 bytes of base64url")
    return key


def _write_master_key(data_dir: Path) -> bytes:
    key = new_key()
    path = data_dir / MASTER_KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(b64url_encode(key) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return key


def database_url_from_env() -> str | None:
    return read_settings().database_url


def freeze_long_lived() -> None:
    """Once a server process has built what it keeps for good (modules, validators, the app, a
    TinyDB store's in-memory indexes), move it out of the collector's sight. A 1000-record
    batch allocates ~30,000 objects, which set off full collections walking a worker's ~110,000
    long-lived objects: frozen, a batch's mean time fell by about a quarter (in-process, 24
    batches: 59 -> 44 ms) and its outliers went. CPython's documented use of `gc.freeze`."""
    gc.collect()
    gc.freeze()


SERVER_REFRESH_INTERVAL = 0.02
"""A serving process looks for other processes' commits (the admin CLI's) at most every 20 ms."""


def resolve_store(kind: str | None, database_url: str | None) -> tuple[str, str | None]:
    """Which store every command uses: `--store` when given, else PostgreSQL when a database URL
    is given or `PAYSLIP_DATABASE_URL` is set, else TinyDB. One rule for init, admin and serve."""
    url = database_url or database_url_from_env()
    chosen = kind or ("postgres" if url else "tinydb")
    if chosen == "postgres" and not url:
        raise InstanceError("--store postgres needs --database-url or PAYSLIP_DATABASE_URL")
    return chosen, url


def open_store(
    data_dir: Path,
    kind: str | None = None,
    database_url: str | None = None,
    refresh_interval: float = 0.0,
) -> Store:
    chosen, url = resolve_store(kind, database_url)
    if chosen == "postgres":
        assert url is not None
        try:
            from service.storage.postgres_store import PostgresStore
        except ImportError:
            raise InstanceError(
                "PostgreSQL support is not installed: pip install 'payslip-verify[postgres]'"
            ) from None
        try:
            return PostgresStore(url)
        except StoreUnavailable as exc:
            # StoreUnavailable messages never quote the URL (it may hold a password).
            raise InstanceError(
                f"cannot use the PostgreSQL database: {exc}; check PAYSLIP_DATABASE_URL and that "
                "the server is running"
            ) from None
    from service.storage.tinydb_store import TinyDBStore

    return TinyDBStore(data_dir / STORE_DIR, refresh_interval=refresh_interval)


def is_initialised(data_dir: Path) -> bool:
    return (data_dir / INSTANCE_FILE).exists() or (data_dir / MASTER_KEY_FILE).exists()


def offline_config(master_key: bytes, public_url: str = "http://127.0.0.1:8080") -> ServiceConfig:
    """URLs only matter for tokens and scan URLs; offline admin commands use placeholders."""
    return make_config(master_key, public_url)


def make_config(
    master_key: bytes,
    public_url: str,
    issuer_url: str | None = None,
    verifier_url: str | None = None,
    auth_url: str | None = None,
    environment: str = "production",
) -> ServiceConfig:
    base = public_url.rstrip("/")
    from service.composition.config import RateLimits

    return ServiceConfig(
        master_key=master_key,
        public_url=base,
        issuer_url=(issuer_url or base).rstrip("/"),
        verifier_url=(verifier_url or base).rstrip("/"),
        auth_url=(auth_url or base).rstrip("/"),
        environment=environment,
        rate_limits=RateLimits.from_env(),
    )


def domain_for(store: Store, config: ServiceConfig, clock: Clock | None = None) -> Domain:
    return build_domain(
        store,
        config.master_key,
        clock or SystemClock(),
        Audiences(config.issuer_url, config.verifier_url, config.auth_url),
        config.environment,
        config.scan_base,
        config.token_ttl,
    )


def init_instance(
    data_dir: Path, kind: str | None = None, database_url: str | None = None
) -> dict[str, str]:
    """Create the store, master key, token signing key and an admin client.

    Refuses, changing nothing, when the directory or the database already holds an instance;
    if anything fails half-way, the files it created are removed again, so a corrected retry
    is not met by "already holds an instance".
    """
    if is_initialised(data_dir):
        raise InstanceError(f"{data_dir} already holds an instance")
    created: list[Path] = [p for p in (data_dir, data_dir / STORE_DIR) if not p.exists()]
    try:
        private_dir(data_dir)  # 0700 whatever the umask: it holds master.key and the store
        store = open_store(data_dir, kind, database_url)
        try:
            if holds_instance(store):
                raise InstanceError(
                    "the database already holds an instance; use its data directory (or its "
                    "PAYSLIP_MASTER_KEY) with `serve` and `admin`, or point "
                    "PAYSLIP_DATABASE_URL at an empty database"
                )
            if read_settings().master_key is not None:
                master_key = load_master_key(data_dir)
            else:
                master_key = _write_master_key(data_dir)
                created.append(data_dir / MASTER_KEY_FILE)
            admin = domain_for(store, offline_config(master_key)).admin.create_admin_client()
        finally:
            store.close()
        (data_dir / INSTANCE_FILE).write_text(json.dumps({"format": 1}) + "\n", encoding="utf-8")
    except BaseException:
        _remove_created(created)
        raise
    return {"data_dir": str(data_dir), **admin.wire()}


def _remove_created(paths: list[Path]) -> None:
    """Undo a failed init: the master key file, then the folders it made (newest first)."""
    for path in sorted(paths, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()


def check_instance(
    data_dir: Path, kind: str | None = None, database_url: str | None = None
) -> None:
    """Open the store and its instance secrets once, so `serve` fails with one clear line
    before it binds or forks workers (a worker's own failure would only be an exit code)."""
    store = open_store(data_dir, kind, database_url)
    try:
        domain_for(store, offline_config(load_master_key(data_dir)))
    finally:
        store.close()
