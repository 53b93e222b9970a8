"""The desk's settings (plain JSON) and its secrets (OS keyring, else a 0600 file).

Secrets never go into the JSON file: a settings file gets copied, mailed and backed up far more
casually than a keyring entry.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from app.settings.pin_hash import hash_pin, needs_upgrade, verify_pin
from service.composition.settings import read_settings
from service.files.private import private_dir, write_private_text

KEYRING_SERVICE = "payslip-verify"


def config_dir() -> Path:
    override = read_settings().config_dir
    return override if override else Path(platformdirs.user_config_dir("payslip-verify"))


@dataclass
class Settings:
    mode: str = "embedded"
    """embedded (the service runs inside the app) or remote (a central service)."""
    verifier_url: str = ""
    auth_url: str = ""
    client_id: str = ""
    environment: str = "production"
    camera: str = "0"
    """``name:<camera name>`` (chosen in the settings), an OpenCV device index, or a video file
    path (used by tests and demos); see app.scan.cameras."""
    idle_timeout: int = 60
    verdict_sound: bool = False
    """A short sound per verdict (off by default: many front desks are quiet places)."""
    kiosk_pin_hash: str = ""
    data_dir: str = ""
    service_port: int = 0
    """The embedded service's port, chosen on its first start (8080, else the next free one)
    and kept, so every address saved for it stays right across restarts (0: not chosen yet)."""
    service_listen: str = "loopback"
    """Who can reach the embedded service: ``loopback`` (this computer only) or ``network``
    (this office network: every interface)."""
    scan_base: str = ""
    """The address phones and other desks reach the embedded service at, printed on every badge
    (empty: this computer's own address, which only this computer can open)."""
    tls_cert: str = ""
    tls_key: str = ""
    """PEM certificate (chain) and key files: with both, the embedded service speaks HTTPS. On
    the office network it always does: without the office's own, the app makes one
    (app.shell.office_tls)."""
    tls_fingerprint: str = ""
    """A desk connected to an office service: the SHA-256 fingerprint of that service's
    certificate, given with its address and sign-in; only that certificate is accepted
    (app.api.pinning). Empty: the certificate is checked against public authorities."""
    demo_offered: bool = False
    phone_days: int = 90
    """How long a phone paired from Admin stays signed in (days; set in the pairing dialog)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path | None = None) -> Settings:
        path = (directory or config_dir()) / "settings.json"
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, directory: Path | None = None) -> None:
        """settings.json 0600 in a 0700 folder, whatever the umask: it holds the kiosk PIN's
        hash and says where the data and secrets are."""
        folder = private_dir(directory or config_dir())
        write_private_text(folder / "settings.json", json.dumps(asdict(self), indent=2))

    def set_pin(self, pin: str) -> None:
        self.kiosk_pin_hash = hash_pin(pin)

    def check_pin(self, pin: str) -> bool:
        """With no PIN set, the kiosk's settings are open (first setup). A right PIN whose hash
        is older or weaker than today's (app.settings.pin_hash) is re-hashed here, in memory: the
        caller saves the settings when `kiosk_pin_hash` changed."""
        if not self.kiosk_pin_hash:
            return True
        if not verify_pin(pin, self.kiosk_pin_hash):
            return False
        if needs_upgrade(self.kiosk_pin_hash):
            self.set_pin(pin)
        return True


class SecretStore:
    """Keyring when a real backend exists; otherwise `secrets.json` with mode 0600."""

    def __init__(self, directory: Path | None = None, use_keyring: bool | None = None) -> None:
        self._dir = directory or config_dir()
        if use_keyring is None:
            use_keyring = not read_settings().no_keyring
        self._keyring: Any = _usable_keyring() if use_keyring else None

    @property
    def backend(self) -> str:
        return "keyring" if self._keyring is not None else "file"

    def get(self, name: str) -> str | None:
        if self._keyring is not None:
            with contextlib.suppress(Exception):
                value = self._keyring.get_password(KEYRING_SERVICE, name)
                return None if value is None else str(value)
        return self._read_file().get(name)

    def set(self, name: str, value: str) -> None:
        if self._keyring is not None:
            try:
                self._keyring.set_password(KEYRING_SERVICE, name, value)
                return
            except Exception:  # a locked or broken keyring falls back to the file
                self._keyring = None
        data = self._read_file()
        data[name] = value
        self._write_file(data)

    def _path(self) -> Path:
        return self._dir / "secrets.json"

    def _read_file(self) -> dict[str, str]:
        try:
            data = json.loads(self._path().read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write_file(self, data: dict[str, str]) -> None:
        private_dir(self._dir)
        write_private_text(self._path(), json.dumps(data))


def _usable_keyring() -> Any:
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or (
        "chainer" in type(backend).__name__.lower() and not (getattr(backend, "backends", None))
    ):
        return None
    return keyring
