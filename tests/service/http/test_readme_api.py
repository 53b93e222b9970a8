"""The README's "Calling the API" commands run as written against the demo service (issue 26):
the shell block and the authlib snippet are cut out of README.md by their HTML comment markers
and run, with only the `shell` line the demo prints, against `python -m service serve --demo`
(what `scripts/start --service` starts)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.service.cli.test_cli import serving

README = Path(__file__).resolve().parents[3] / "README.md"

pytestmark = pytest.mark.slow


def block(marker: str) -> str:
    """The fenced code between `<!-- marker -->` and `<!-- /marker -->` in the README."""
    text = README.read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- {marker} -->\s*```\w+\n(.*?)```\s*<!-- /{marker} -->", text, re.DOTALL
    )
    assert found, f"README.md has no {marker} block"
    return found.group(1)


def _demo() -> Any:
    return serving("--demo")


def _printed(server: Any) -> dict[str, Any]:
    printed = "".join(server.stdout)
    demo: dict[str, Any] = json.loads(printed[: printed.rindex("listening on")])["demo"]
    return demo


def test_the_demo_prints_what_calling_the_api_needs() -> None:
    with _demo() as (server, url):
        demo = _printed(server)
    assert demo["token_url"] == f"{url}/oauth/token"
    assert demo["audiences"] == {
        "service:issuer": url,
        "service:verifier": url,
        "service:admin": url,
    }
    assert demo["admin"]["client_id"] and demo["admin"]["client_secret"]
    assert demo["data_dir"] and "payslip-demo-" in demo["data_dir"]
    assert not Path(demo["data_dir"]).exists(), "the temporary data folder goes when it stops"
    assert "temporary" in demo["about"] and "init" in demo["about"]
    assert demo["shell"].startswith("export ")


def _exports(shell: str) -> dict[str, str]:
    words = shlex.split(shell)
    assert words[0] == "export"
    return dict(word.split("=", 1) for word in words[1:])


def test_the_readme_commands_run_as_written_against_the_demo() -> None:
    commands = block("readme-api-commands")
    snippet = block("readme-api-python")
    with _demo() as (server, _url):
        demo = _printed(server)
        script = f"set -euo pipefail\n{demo['shell']}\n{commands}"
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr + done.stdout
        replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        env = {**os.environ, **_exports(demo["shell"])}
        env.pop("AUTHLIB_INSECURE_TRANSPORT", None)
        python = subprocess.run(
            [sys.executable, "-c", snippet],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
    assert len(replies) == 3, done.stdout
    verified, registered, batch = replies
    assert verified["verified"] is True
    assert verified["service_reference"] == demo["samples"][0]["service_reference"]
    assert len(registered["service_reference"]) == 22
    assert [r["status"] for r in batch["results"]] == ["created", "created"]
    assert python.returncode == 0, python.stderr
    assert python.stdout.strip() == "200 True"
