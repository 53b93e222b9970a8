"""What `python -m service serve --demo` prints: everything a newcomer needs to call the API at
once (issue 26), in the one JSON object that tools read before `listening on`.

Besides the demo issuer, verifier and samples: the token URL and the audience of each scope (the
token request must name one, PROTOCOL §7), the admin client (to pair a phone or add clients), the
data folder, what the demo is (temporary, new credentials at every start) and a `shell` line of
`export`s that the README's "Calling the API" commands read, so they run as printed.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from service.composition.config import ServiceConfig
from service.composition.demo import DemoInstance

ABOUT = (
    "A temporary demo instance: its data folder is removed when it stops, and every start makes "
    "new credentials and records (a badge from an earlier start reads NOT VERIFIED). To keep an "
    "instance: python -m service init --data-dir D, then python -m service serve --data-dir D."
)


def demo_output(
    demo: DemoInstance,
    config: ServiceConfig,
    admin: dict[str, str] | None,
    data_dir: Path | None,
) -> dict[str, Any]:
    """The `demo` object printed at start."""
    audiences = {
        "service:issuer": config.issuer_url,
        "service:verifier": config.verifier_url,
        "service:admin": config.issuer_url,
    }
    out: dict[str, Any] = {
        "about": ABOUT,
        "token_url": f"{config.auth_url.rstrip('/')}/oauth/token",
        "audiences": audiences,
        "data_dir": str(data_dir) if data_dir is not None else None,
    }
    if admin is not None:
        out["admin"] = {
            "client_id": admin["admin_client_id"],
            "client_secret": admin["admin_client_secret"],
        }
    out.update(demo.as_dict())
    out["shell"] = shell_exports(demo, config)
    return out


def shell_exports(demo: DemoInstance, config: ServiceConfig) -> str:
    """One `export` line with the values the README's commands use: the issuer's encryption key
    too, which the README's sealing steps need (the demo prints it in `issuer` anyway)."""
    values = {
        "TOKEN_URL": f"{config.auth_url.rstrip('/')}/oauth/token",
        "AUTH_URL": config.auth_url.rstrip("/"),
        "ISSUER_URL": config.issuer_url.rstrip("/"),
        "VERIFIER_URL": config.verifier_url.rstrip("/"),
        "ISSUER_ID": demo.issuer.client_id,
        "ISSUER_SECRET": demo.issuer.client_secret,
        "ISSUER_KEY": demo.issuer.encryption_key,
        "ISSUER_KEY_VERSION": demo.issuer.key_version,
        "VERIFIER_ID": demo.verifier.client_id,
        "VERIFIER_SECRET": demo.verifier.client_secret,
        "BARCODE": demo.samples[0].payload if demo.samples else "",
    }
    return "export " + " ".join(f"{key}={shlex.quote(value)}" for key, value in values.items())
