"""The settings a `serve --workers` worker takes by name (service.hosting.wsgi.FROM_ENV and
SERVE_OPTIONS): every name is a field of the worker's settings and exists where it is read from,
so a renamed variable or option fails here, not in a worker at start."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from service.cli.main import _parser
from service.composition.settings import EnvSettings
from service.hosting.wsgi import FROM_ENV, SERVE_OPTIONS, Settings


def test_every_name_is_a_worker_setting_and_exists_where_it_is_read() -> None:
    fields = {field.name for field in dataclasses.fields(Settings)}
    assert set(FROM_ENV) <= fields and set(SERVE_OPTIONS) <= fields
    assert set(FROM_ENV) <= set(EnvSettings.model_fields)
    serve = _parser().parse_args(["serve"])
    assert all(hasattr(serve, name) for name in SERVE_OPTIONS)


def test_the_variables_reach_the_worker_settings(tmp_path: Path) -> None:
    env = EnvSettings(
        database_url="postgresql://db.example/payslips",
        redis_url="redis://cache.example:6379/0",
        issuer_url="https://issue.example",
        environment="sandbox",
        redis_prefix="office",
        access_log="off",
    )
    settings = Settings.of_env(env, tmp_path, "https://verify.example")
    assert settings.data_dir == tmp_path and settings.public_url == "https://verify.example"
    assert settings.database_url == "postgresql://db.example/payslips"
    assert settings.redis_url == "redis://cache.example:6379/0"
    assert settings.issuer_url == "https://issue.example" and settings.verifier_url is None
    assert settings.environment == "sandbox" and settings.redis_prefix == "office"
    assert settings.access_log is False
