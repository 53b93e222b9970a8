"""Every `PAYSLIP_*` environment variable the product reads, in one typed model.

Why one model: the variables used to be read with `os.environ.get` in ten files, each with its
own idea of what an empty value or a typo meant, and the README listed them by hand. Here each
has a type, a default and one line of help; the README's table is printed from this model
(`scripts/settings_table.py`, kept equal by tests/service/composition/test_settings.py).

`read_settings()` reads the environment afresh on every call: code that used to look at
`os.environ` when it ran (a command starting, a worker building its app, the app opening its
settings) still sees the environment of that moment, so nothing is cached behind anyone's back.
A value its type refuses raises `SettingsError`, one line naming the variable (never the value:
some are secrets), which the command lines print as their one error line.

An empty variable counts as unset (the default applies), except where the help says otherwise:
an empty rate limit turns that limit off, and `PAYSLIP_NO_KEYRING` counts when set at all.
The app's own settings file (`settings.json`, app/shell/settings.py) is a different thing: what a
desk
chose in the GUI, not the environment.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    Field,
    PositiveFloat,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PREFIX = "PAYSLIP_"
SERVICE = "service"
APP = "app"
BOTH = "service, app"
WSGI = "WSGI entry point"
WORKERS = "serve --workers, WSGI"
BOOL = "yes / no (also 1 / 0, true / false, on / off)"
SECONDS = "seconds (> 0)"
URL = "URL (`https://...`)"
LIMITS = "limits (`100/second;3000/minute`) or `off`"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_OFF = ("", "off", "none")
"""A rate limit with one of these values is turned off (also when the variable is empty)."""


class SettingsError(ValueError):
    """A `PAYSLIP_*` variable holds a value its type refuses; the message is one plain line."""


def _var(
    default: Any,
    help_text: str,
    read_by: str,
    *,
    when_unset: str | None = None,
    kind: str | None = None,
) -> Any:
    """One variable: its default, its line of help, who reads it, what happens without it
    (when the default is None) and, where the type alone says too little, the kind of value;
    the README table is made of these."""
    extra: dict[str, str] = {"read_by": read_by}
    if when_unset is not None:
        extra["when_unset"] = when_unset
    if kind is not None:
        extra["kind"] = kind
    return Field(default, description=help_text, json_schema_extra=extra)  # type: ignore[arg-type]


class EnvSettings(BaseSettings):
    """The environment as the product reads it: `PAYSLIP_` + the field name in capitals."""

    # validate_default=False: the defaults below are right as written, and checking the rate
    # limits' would import `limits` (and asyncio) into every command that reads a setting.
    model_config = SettingsConfigDict(
        env_prefix=PREFIX, case_sensitive=False, frozen=True, extra="ignore", validate_default=False
    )

    # Where things live
    data_dir: Path | None = _var(
        None,
        "The service's data directory (master.key, instance.json, the TinyDB store `db/`).",
        BOTH,
        when_unset="the user data directory",
    )
    log_dir: Path | None = _var(
        None,
        "Where `app.log` and `payslip-verify-errors.log` (unexpected failures) are written.",
        BOTH,
        when_unset="the user log directory",
    )
    log_level: LogLevel | None = _var(
        None,
        "Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (any case).",
        SERVICE,
        when_unset="INFO for `serve`, ERROR for one-shot commands",
    )
    config_dir: Path | None = _var(
        None,
        "The app's config directory (`settings.json`, `secrets.json`).",
        APP,
        when_unset="the user config directory",
    )
    # The store and its key
    database_url: str | None = _var(
        None,
        "PostgreSQL connection URL; when set, every command uses PostgreSQL instead of TinyDB.",
        BOTH,
        when_unset="TinyDB in the data directory",
        kind="URL (`postgresql://...`)",
    )
    master_key: SecretStr | None = _var(
        None,
        "The master key (32 bytes, base64url) instead of `master.key` in the data directory.",
        BOTH,
        when_unset="`master.key` in the data directory",
    )
    # Addresses
    public_url: str | None = _var(
        None,
        "The address clients reach the service at (token audiences, scan and pairing links).",
        WSGI + ", admin pair-verifier",
        when_unset="required by the WSGI entry point; elsewhere the listening address",
        kind=URL,
    )
    issuer_url: str | None = _var(
        None, "The issuer audience URL.", WSGI, when_unset="the public URL", kind=URL
    )
    verifier_url: str | None = _var(
        None,
        "The verifier audience URL (its origin starts scan URLs).",
        WSGI,
        when_unset="the public URL",
        kind=URL,
    )
    auth_url: str | None = _var(
        None, "The token endpoint's URL.", WSGI, when_unset="the public URL", kind=URL
    )
    environment: Literal["production", "sandbox"] = _var(
        "production", "`production` or `sandbox` (test data only; tokens say which).", WSGI
    )
    # Scale-out (docs/deploy.md)
    redis_url: str | None = _var(
        None,
        "Redis for limits shared by all workers and hosts (needed by `serve --workers N`).",
        WORKERS,
        when_unset="limits count per process",
        kind="URL (`redis://HOST:6379/0`)",
    )
    redis_fail_closed: bool = _var(
        False,
        "When Redis does not answer: yes refuses requests (503), no lets them through.",
        WORKERS,
    )
    redis_prefix: str = _var(
        "payslip", "Starts every Redis key, so deployments can share one.", WORKERS
    )
    instance_id: str = _var(
        "",
        "Names the instance whose workers share the concurrent-batch limit.",
        WORKERS,
        when_unset="host name and the server's pid",
    )
    access_log: Literal["json", "off"] = _var(
        "json",
        "`json` writes one JSON access line per request on stderr; `off` writes none.",
        WORKERS,
    )
    # Abuse limits (`limits` notation)
    rate_limit_ip: str | None = _var(
        "200/second;6000/minute",
        "Requests per client address; `off` (or empty) turns it off.",
        SERVICE,
        kind=LIMITS,
    )
    rate_limit_client: str | None = _var(
        "200/second;6000/minute",
        "Requests per API client; `off` (or empty) turns it off.",
        SERVICE,
        kind=LIMITS,
    )
    rate_limit_token_ip: str | None = _var(
        "20/second;300/minute",
        "Token requests per client address; `off` (or empty) turns it off.",
        SERVICE,
        kind=LIMITS,
    )
    # Slow clients (service/hosting/slow_clients.py): lower them only to test
    header_timeout: PositiveFloat = _var(
        10.0,
        "Seconds a request line and headers may take from their first byte.",
        SERVICE,
        kind=SECONDS,
    )
    body_grace: PositiveFloat = _var(
        15.0, "Seconds a body may take before its minimum rate is enforced.", SERVICE, kind=SECONDS
    )
    body_min_rate: PositiveFloat = _var(
        32768.0,
        "Bytes per second a body must average after the grace period.",
        SERVICE,
        kind="bytes per second (> 0)",
    )
    # The app's command lines and kiosk
    client_id: str | None = _var(
        None,
        "Client id for `verify --service-url` when `--client-id` is not given.",
        APP,
        when_unset="the one in the app's settings",
    )
    client_secret: SecretStr | None = _var(
        None,
        "Client secret for `verify --service-url` and `issue-run` (safer than the option).",
        APP,
        when_unset="the one in the keyring (verify)",
    )
    encryption_key: SecretStr | None = _var(
        None, "The issuer's encryption key for `issue-run` (32 bytes, base64url).", APP
    )
    kiosk_pin: SecretStr | None = _var(
        None,
        "A first kiosk PIN (4-12 digits) for unattended set-up; stored hashed on first start.",
        APP,
        when_unset="the kiosk asks for one",
    )
    no_keyring: bool = _var(
        False,
        "Set (to anything, even empty) to keep secrets in `secrets.json`, not the OS keyring.",
        APP,
        when_unset="the OS keyring when there is one",
        kind="set or not",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The environment only: no `.env` file or secrets directory is looked at."""
        return (init_settings, env_settings)

    @field_validator("*", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or ""
        if name == "no_keyring":
            return True if isinstance(value, str) else value
        if isinstance(value, str) and not value.strip() and not name.startswith("rate_limit_"):
            return cls.model_fields[name].default
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        """Any case; `WARN` and `FATAL`, which Python's logging also knows, keep working."""
        if not isinstance(value, str):
            return value
        level = value.strip().upper()
        return {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(level, level)

    @field_validator("access_log", "environment", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("public_url", "issuer_url", "verifier_url", "auth_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("expected an http:// or https:// address such as https://host")
        return value

    @field_validator("rate_limit_ip", "rate_limit_client", "rate_limit_token_ip", mode="before")
    @classmethod
    def _rate_limit(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value.strip().lower() in _OFF:
            return None
        from limits import parse_many  # only when one is set: the app starts without it

        try:
            parse_many(value)
        except ValueError:
            raise ValueError("expected limits such as 100/second;3000/minute, or off") from None
        return value


def env_name(field: str) -> str:
    return PREFIX + field.upper()


def read_settings() -> EnvSettings:
    """The environment as it is now (looked at again on every call), or one line naming the
    variable that is wrong.

    Validating costs pydantic-settings about 10 ms (it inspects every field's type on each
    read), so the model is kept for as long as the `PAYSLIP_*` variables stay the same: the
    look at the environment is a few microseconds, and a changed variable is always seen."""
    return _validated(_snapshot())


def _snapshot() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(PREFIX)))


@functools.lru_cache(maxsize=16)
def _validated(snapshot: tuple[tuple[str, str], ...]) -> EnvSettings:
    """`snapshot` is the cache key only: the model reads the environment itself."""
    try:
        return EnvSettings()
    except ValidationError as exc:
        raise SettingsError(_one_line(exc)) from None


def _one_line(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        message = message[:1].lower() + message[1:]
        problems.append(f"{env_name(field)} is not valid: {message}")
    return "; ".join(problems)


def _type_words(annotation: Any) -> str:
    args = [a for a in get_args(annotation) if a is not NoneType]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return _type_words(args[0])
    if get_origin(annotation) is Literal:
        return " / ".join(f"`{a}`" for a in get_args(annotation))
    return {
        Path: "path",
        bool: BOOL,
        SecretStr: "secret",
        str: "text",
        int: "number",
        float: "number",
    }.get(annotation, "text")


def settings_table() -> str:
    """The README's table of variables, one row per field of `EnvSettings`."""
    rows = [
        "| Variable | Read by | Type | Default | What it sets |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, field in EnvSettings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "when_unset" in extra or field.default is None:
            default = str(extra.get("when_unset", "unset"))
        elif isinstance(field.default, bool):
            default = "yes" if field.default else "no"
        else:
            default = f"`{field.default}`"
        rows.append(
            f"| `{env_name(name)}` | {extra.get('read_by', '')} | "
            f"{extra.get('kind') or _type_words(field.annotation)} | {default} | "
            f"{field.description} |"
        )
    return "\n".join(rows) + "\n"
