"""The desk's own files are owner-only whatever the umask (issue 37, point 5): config, data and
log folders 0700, settings.json and secrets.json 0600; folders an older version left open are
tightened on the next write or start."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.__main__ import _setup_logging
from app.settings.desk import SecretStore, Settings
from app.shell.context import start_embedded_context
from service.cli.errors import _write_traceback
from service.composition.instance import MASTER_KEY_FILE, init_instance

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o000, 0o022], ids=["umask000", "umask022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_settings_and_secrets_are_owner_only(umask: int, tmp_path: Path) -> None:
    folder = tmp_path / "config"
    settings = Settings()
    settings.set_pin("2468")
    settings.save(folder)
    SecretStore(folder, use_keyring=False).set("remote:desk", "s3cret")
    assert mode(folder) == 0o700
    assert mode(folder / "settings.json") == 0o600
    assert mode(folder / "secrets.json") == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["secrets.json", "settings.json"]


def test_an_open_config_folder_from_an_older_version_is_tightened(
    umask: int, tmp_path: Path
) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    os.chmod(folder, 0o777)
    (folder / "settings.json").write_text("{}", "utf-8")
    os.chmod(folder / "settings.json", 0o666)
    Settings(idle_timeout=30).save(folder)
    assert mode(folder) == 0o700
    assert mode(folder / "settings.json") == 0o600
    assert Settings.load(folder).idle_timeout == 30


def test_a_new_data_directory_is_owner_only(umask: int, tmp_path: Path) -> None:
    data = tmp_path / "data"
    init_instance(data, "tinydb")
    assert mode(data) == 0o700
    assert mode(data / MASTER_KEY_FILE) == 0o600
    assert all(mode(p) == 0o700 for p in data.rglob("*") if p.is_dir())


def test_the_embedded_service_tightens_an_open_data_directory(
    umask: int, tmp_path: Path, config_dir: Path
) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=str(data))
    secrets = SecretStore(config_dir, use_keyring=False)
    start_embedded_context(settings, secrets).close()
    assert mode(data) == 0o700
    os.chmod(data, 0o777)  # as an older version left it under umask 000
    context = start_embedded_context(settings, secrets)
    try:
        assert mode(data) == 0o700
    finally:
        context.close()


def test_log_folders_are_owner_only(
    umask: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    monkeypatch.setenv("PAYSLIP_LOG_DIR", str(logs))
    app_log = logging.getLogger("app")
    before = list(app_log.handlers)
    try:
        _setup_logging()
        assert mode(logs) == 0o700
    finally:
        for handler in app_log.handlers:
            if handler not in before:
                app_log.removeHandler(handler)
                handler.close()
    os.chmod(logs, 0o755)
    written = _write_traceback(RuntimeError("boom"))
    assert written is not None and written.parent == logs
    assert mode(logs) == 0o700
    assert mode(written) == 0o600
