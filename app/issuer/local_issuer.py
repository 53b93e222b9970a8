"""The issuer this computer issues as, saved once so nobody pastes five credential fields.

When an admin creates an issuer and ticks "Use this issuer for issuing on this computer", its
client secret and encryption key go to the SecretStore (the OS keyring, as the verifier's secret
does; a 0600 file only where no keyring exists), and only the harmless parts (service address,
name, client id, key version) to settings.json. The Issue screen then shows the issuer by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.api.pinning import normalize_fingerprint
from app.settings.desk import SecretStore, Settings
from service.hosting.network_address import is_loopback_url
from service.protocol.schemas import IssuerCreated

SETTINGS_KEY = "issuer"
THIS_COMPUTER = "this-computer"
"""The saved address of an issuer that uses this computer's embedded service: a marker, not a
port, so the issuer keeps working after a restart or a port change (issue 27)."""


def saved_address(url: str, embedded_url: str | None) -> str:
    """What to write to settings.json for `url`: the marker when it is the embedded service."""
    url = url.rstrip("/")
    if embedded_url and url == embedded_url.rstrip("/"):
        return THIS_COMPUTER
    return url


def resolve_address(saved: str, embedded_url: str | None) -> str:
    """The address to call for a saved one (the marker means the embedded service, now)."""
    if saved == THIS_COMPUTER:
        return (embedded_url or "").rstrip("/")
    return saved


def _secret_slot(client_id: str) -> str:
    return f"issuer:{client_id}:secret"


def _key_slot(client_id: str) -> str:
    return f"issuer:{client_id}:key"


@dataclass(frozen=True)
class LocalIssuer:
    url: str
    client_id: str
    name: str = ""
    key_version: str = ""
    client_secret: str = field(default="", repr=False)
    encryption_key: str = field(default="", repr=False)
    fingerprint: str = ""
    """The office service's certificate fingerprint (SHA-256 hex), when it serves HTTPS with a
    certificate no public authority signed: issuing accepts that certificate and no other
    (app.api.pinning). Not a secret: Admin shows it with the address."""

    @property
    def complete(self) -> bool:
        return bool(self.url and self.client_id and self.client_secret and self.encryption_key)

    @property
    def on_this_computer(self) -> bool:
        return self.url == THIS_COMPUTER


def save_local_issuer(
    settings: Settings, secrets: SecretStore, url: str, name: str, made: IssuerCreated
) -> LocalIssuer:
    """Remember a just-created issuer (the admin API's one-time answer) for this computer;
    `url` is the address it was created at (THIS_COMPUTER for the embedded service)."""
    issuer = LocalIssuer(
        url=url.rstrip("/"),
        client_id=made.client_id,
        name=name,
        key_version=made.key_version,
        client_secret=made.client_secret,
        encryption_key=made.encryption_key,
    )
    remember(settings, secrets, issuer, with_secrets=True)
    return issuer


def remember(
    settings: Settings, secrets: SecretStore, issuer: LocalIssuer, *, with_secrets: bool
) -> None:
    """Write the public parts to settings.json and, when asked, the secrets to the SecretStore."""
    if with_secrets:
        secrets.set(_secret_slot(issuer.client_id), issuer.client_secret)
        secrets.set(_key_slot(issuer.client_id), issuer.encryption_key)
    wanted = {
        "url": issuer.url,
        "client_id": issuer.client_id,
        "key_version": issuer.key_version,
        "name": issuer.name,
    }
    if issuer.fingerprint:
        wanted["fingerprint"] = issuer.fingerprint
    if settings.extra.get(SETTINGS_KEY) != wanted:
        settings.extra[SETTINGS_KEY] = wanted
        settings.save()


def use_new_key(
    settings: Settings, secrets: SecretStore, client_id: str, key_version: str, key: str
) -> LocalIssuer | None:
    """Issue with a just-made key from now on (Admin's "Give new key"): the key goes to the
    secret store, its version to settings.json. None when this computer does not issue as
    that client."""
    saved = load_local_issuer(settings, secrets)
    if saved is None or saved.client_id != client_id:
        return None
    secrets.set(_key_slot(client_id), key)
    updated = replace(saved, key_version=key_version, encryption_key=key)
    remember(settings, secrets, updated, with_secrets=False)
    return updated


def adopt_stale_loopback(
    settings: Settings, embedded_url: str, answers: Callable[[str], bool]
) -> bool:
    """An issuer saved before addresses followed the service (at the embedded service's old
    random port, `http://127.0.0.1:44503`) is this computer's: when that loopback address no
    longer answers, save the marker instead, so issuing goes on after the update. True when
    the settings were changed."""
    saved = settings.extra.get(SETTINGS_KEY) if settings.extra else None
    if not isinstance(saved, dict):
        return False
    url = str(saved.get("url") or "")
    if not url or url == THIS_COMPUTER or url.rstrip("/") == embedded_url.rstrip("/"):
        return False
    if not is_loopback_url(url) or answers(url):
        return False
    settings.extra[SETTINGS_KEY] = {**saved, "url": THIS_COMPUTER}
    settings.save()
    return True


def load_local_issuer(settings: Settings, secrets: SecretStore) -> LocalIssuer | None:
    """The saved issuer with whatever secrets this computer holds for it, or None."""
    saved = settings.extra.get(SETTINGS_KEY) if settings.extra else None
    if not isinstance(saved, dict) or not saved.get("client_id"):
        return None
    client_id = str(saved["client_id"])
    return LocalIssuer(
        url=str(saved.get("url") or ""),
        client_id=client_id,
        name=str(saved.get("name") or ""),
        key_version=str(saved.get("key_version") or ""),
        client_secret=secrets.get(_secret_slot(client_id)) or "",
        encryption_key=secrets.get(_key_slot(client_id)) or "",
        # A hand-edited value that is no fingerprint is no pin at all (shown empty, not a crash).
        fingerprint=normalize_fingerprint(str(saved.get("fingerprint") or "")) or "",
    )
