"""The office's own computer in a test: its embedded service on "this office network", which
makes its self-signed HTTPS certificate on the first start (app.shell.office_tls)."""

from __future__ import annotations

from pathlib import Path

from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_embedded_context


def office_on_network(tmp_path: Path, config_dir: Path) -> AppContext:
    """Started; the caller closes it."""
    Settings(data_dir=str(tmp_path / "data"), service_listen="network").save(config_dir)
    office = start_embedded_context(
        Settings.load(config_dir), SecretStore(config_dir, use_keyring=False)
    )
    assert office.service_url.startswith("https://")
    return office
