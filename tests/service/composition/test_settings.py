"""The one settings model (service/composition/settings.py, issue 21): every `PAYSLIP_*` variable
typed, with
a default and a line of help; read afresh at every call; a bad value is one line naming the
variable at the command line; the README's table is the model's."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from types import ModuleType

import platformdirs
import pytest

from service.composition.config import RateLimits, default_data_dir
from service.composition.settings import EnvSettings, SettingsError, read_settings, settings_table
from service.hosting.slow_clients import SlowClientLimits
from tests.commands import run_module
from tests.service.cli.test_cli import ROOT, assert_one_line_error


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No `PAYSLIP_*` variable set (the suite's conftest sets a few for every test)."""
    for name in list(os.environ):
        if name.upper().startswith("PAYSLIP_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _table_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_table", ROOT / "scripts/settings_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_variables_the_documented_defaults_apply(bare_env: pytest.MonkeyPatch) -> None:
    limits = RateLimits.from_env()
    assert (limits.per_ip, limits.per_client, limits.token_per_ip) == (
        "200/second;6000/minute",
        "200/second;6000/minute",
        "20/second;300/minute",
    )
    assert SlowClientLimits.from_env() == SlowClientLimits(10.0, 15.0, 32 * 1024)
    assert default_data_dir() == Path(platformdirs.user_data_dir("payslip-verify", appauthor=False))
    env = read_settings()
    assert env.environment == "production"
    assert env.redis_prefix == "payslip"
    assert env.access_log == "json"
    assert env.redis_fail_closed is False
    assert env.no_keyring is False
    assert env.database_url is None and env.master_key is None and env.log_level is None


def test_values_are_typed_and_spelled_as_operators_do(bare_env: pytest.MonkeyPatch) -> None:
    bare_env.setenv("PAYSLIP_DATA_DIR", "/srv/payslip")
    bare_env.setenv("PAYSLIP_LOG_LEVEL", "debug")
    bare_env.setenv("PAYSLIP_REDIS_FAIL_CLOSED", "Yes")
    bare_env.setenv("PAYSLIP_ACCESS_LOG", "OFF")
    bare_env.setenv("PAYSLIP_ENVIRONMENT", "Sandbox")
    bare_env.setenv("PAYSLIP_MASTER_KEY", "not-shown")
    env = read_settings()
    assert env.data_dir == Path("/srv/payslip")
    assert env.log_level == "DEBUG"
    bare_env.setenv("PAYSLIP_LOG_LEVEL", "warn")
    assert read_settings().log_level == "WARNING"
    assert env.redis_fail_closed is True
    assert env.access_log == "off"
    assert env.environment == "sandbox"
    assert env.master_key is not None and env.master_key.get_secret_value() == "not-shown"
    assert "not-shown" not in repr(env)  # secrets stay out of any log line that shows the model


def test_an_empty_variable_counts_as_unset_except_rate_limits_and_no_keyring(
    bare_env: pytest.MonkeyPatch,
) -> None:
    for name in ("DATA_DIR", "DATABASE_URL", "MASTER_KEY", "REDIS_FAIL_CLOSED", "ENVIRONMENT"):
        bare_env.setenv(f"PAYSLIP_{name}", "")
    bare_env.setenv("PAYSLIP_RATE_LIMIT_IP", "")
    bare_env.setenv("PAYSLIP_RATE_LIMIT_CLIENT", "off")
    bare_env.setenv("PAYSLIP_NO_KEYRING", "")
    env = read_settings()
    assert env.data_dir is None and env.database_url is None and env.master_key is None
    assert env.redis_fail_closed is False and env.environment == "production"
    limits = RateLimits.from_env()
    assert (limits.per_ip, limits.per_client) == (None, None)  # empty and `off` turn them off
    assert limits.token_per_ip == "20/second;300/minute"
    assert env.no_keyring is True  # set at all, as before the model


def test_every_read_sees_the_environment_of_that_moment(bare_env: pytest.MonkeyPatch) -> None:
    bare_env.setenv("PAYSLIP_RATE_LIMIT_CLIENT", "5/minute")
    assert RateLimits.from_env().per_client == "5/minute"
    bare_env.setenv("PAYSLIP_RATE_LIMIT_CLIENT", "7/minute")
    assert RateLimits.from_env().per_client == "7/minute"
    bare_env.delenv("PAYSLIP_RATE_LIMIT_CLIENT")
    assert RateLimits.from_env().per_client == "200/second;6000/minute"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("PAYSLIP_LOG_LEVEL", "loud", "'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'"),
        ("PAYSLIP_REDIS_FAIL_CLOSED", "perhaps", "valid boolean"),
        ("PAYSLIP_RATE_LIMIT_IP", "lots-and-lots", "100/second;3000/minute, or off"),
        ("PAYSLIP_PUBLIC_URL", "verify.example.com", "http:// or https://"),
        ("PAYSLIP_ACCESS_LOG", "text", "'json' or 'off'"),
        ("PAYSLIP_HEADER_TIMEOUT", "-5", "greater than 0"),  # never turns the protection off
        ("PAYSLIP_BODY_MIN_RATE", "fast", "valid number"),
    ],
)
def test_a_bad_value_names_the_variable_not_the_value(
    bare_env: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    bare_env.setenv(name, value)
    with pytest.raises(SettingsError) as refused:
        read_settings()
    message = str(refused.value)
    assert message.startswith(f"{name} is not valid: ")
    assert says in message
    assert value not in message and "\n" not in message


def test_a_bad_value_is_one_line_at_the_service_command_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    done = run_module(
        "service",
        "init",
        "--data-dir",
        str(data_dir),
        env={**os.environ, "PAYSLIP_RATE_LIMIT_CLIENT": "many"},
    )
    assert_one_line_error(done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: PAYSLIP_RATE_LIMIT_CLIENT is not valid: expected limits")
    assert not data_dir.exists() or not any(data_dir.iterdir())  # nothing was created


def test_a_bad_log_level_is_one_line_before_logging_starts() -> None:
    done = run_module(
        "service", "serve", "--port", "0", env={**os.environ, "PAYSLIP_LOG_LEVEL": "x"}
    )
    assert_one_line_error(done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: PAYSLIP_LOG_LEVEL is not valid: input should be")


def test_a_bad_value_is_one_line_at_the_app_command_line(tmp_path: Path) -> None:
    done = run_module(
        "app",
        "verify",
        str(tmp_path / "nothing.png"),
        env={**os.environ, "PAYSLIP_REDIS_FAIL_CLOSED": "sometimes"},
    )
    assert_one_line_error(done.returncode, done.stdout, done.stderr)
    assert "PAYSLIP_REDIS_FAIL_CLOSED is not valid" in done.stderr


def test_every_field_has_help_and_the_readme_shows_the_model() -> None:
    for name, field in EnvSettings.model_fields.items():
        assert field.description, f"PAYSLIP_{name.upper()} has no help line"
    script = _table_script()
    readme = (ROOT / "README.md").read_text("utf-8")
    assert script.readme_table(readme) == settings_table(), (
        "README.md's settings table is not the model's: python scripts/settings_table.py --write"
    )


def test_the_table_script_puts_the_table_between_the_markers() -> None:
    script = _table_script()
    stale = f"# Title\n\n{script.START}\n| old |\n{script.END}\n\n## Next\n"
    updated = script.with_table(stale, settings_table())
    assert script.readme_table(updated) == settings_table()
    assert updated.startswith("# Title\n\n") and updated.endswith("\n\n## Next\n")
    assert "| `PAYSLIP_MASTER_KEY` |" in updated
    with pytest.raises(ValueError, match="no <!-- settings-table:start -->"):
        script.readme_table("# no markers\n")


_ENV_USE = re.compile(r"os\.environ|getenv\(")
_OTHER_VARIABLE = re.compile(
    r"""(environ(\.get|\.setdefault)?[\[(]|getenv\()\s*["'](?!PAYSLIP_)[A-Z_]+["']"""
)


def test_no_product_code_reads_a_payslip_variable_around_the_model() -> None:
    """Every product read goes through service/composition/settings.py (tests and scripts may set
    them):
    the environment is touched elsewhere only for other programs' variables, named literally."""
    stray = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for package in ("service", "app")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "service/composition/settings.py"
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if _ENV_USE.search(line) and not _OTHER_VARIABLE.search(line)
    ]
    assert stray == []
