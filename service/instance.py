"""An instance on disk: its data directory, master key and store (PROTOCOL §9).

This is the composition root for everything that touches files or environment variables, so the
domain below it stays free of both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from service.config import ServiceConfig, default_data_dir
from service.domain.clock import Clock, SystemClock
from service.domain.context import Domain, build_domain
from service.domain.tokens import Audiences
from service.protocol.crypto import new_key
from service.protocol.encoding import EncodingError, b64url_decode, b64url_encode
from service.storage.port import Store

MASTER_KEY_FILE = "master.key"
STORE_DIR = "db"
INSTANCE_FILE = "instance.json"


class InstanceError(Exception):
    """A one-line operator error: wrong directory, missing key, instance already there."""


def data_dir_or_default(data_dir: str | Path | None) -> Path:
    return Path(data_dir) if data_dir else default_data_dir()


def load_master_key(data_dir: Path) -> bytes:
    env = os.environ.get("PAYSLIP_MASTER_KEY")
    if env:
        return _decode_master_key(env.strip(), "PAYSLIP_MASTER_KEY")
    path = data_dir / MASTER_KEY_FILE
    try:
        text = path.read_text("ascii").strip()
    except FileNotFoundError:
        raise InstanceError(
            f"no master key at {path}; run `python -m service init` or set PAYSLIP_MASTER_KEY"
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
    return os.environ.get("PAYSLIP_DATABASE_URL") or None


SERVER_REFRESH_INTERVAL = 0.02
"""A serving process looks for other processes' commits (the admin CLI's) at most every 20 ms."""


def open_store(
    data_dir: Path,
    kind: str | None = None,
    database_url: str | None = None,
    refresh_interval: float = 0.0,
) -> Store:
    url = database_url or database_url_from_env()
    chosen = kind or ("postgres" if url else "tinydb")
    if chosen == "postgres":
        if not url:
            raise InstanceError("--store postgres needs --database-url or PAYSLIP_DATABASE_URL")
        from service.storage.postgres_store import PostgresStore

        return PostgresStore(url)
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
    from service.config import RateLimits

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
    """Create the store, master key, token signing key and an admin client."""
    if is_initialised(data_dir):
        raise InstanceError(f"{data_dir} already holds an instance")
    data_dir.mkdir(parents=True, exist_ok=True)
    master_key = (
        load_master_key(data_dir)
        if os.environ.get("PAYSLIP_MASTER_KEY")
        else _write_master_key(data_dir)
    )
    store = open_store(data_dir, kind, database_url)
    try:
        domain = domain_for(store, offline_config(master_key))
        admin = domain.admin.create_admin_client()
    finally:
        store.close()
    (data_dir / INSTANCE_FILE).write_text(json.dumps({"format": 1}) + "\n", encoding="utf-8")
    return {"data_dir": str(data_dir), **admin}
