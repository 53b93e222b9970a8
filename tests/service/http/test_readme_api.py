"""The README's "Calling the API" commands run as written against the demo service (issues 26
and 36): the shell blocks (tokens, verify, register, batch; then registerAndBuildBarcode with a
sealed payslip and its badge verified), the authlib snippet and the issuer library's ten lines
are cut out of README.md by their HTML comment markers and run, with only the `shell` line the
demo prints, against `python -m service serve --demo` (what `scripts/start --service` starts).
The recipe's test vector is checked against a bare AES-GCM and the protocol's builders."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.issuer import au2_text, au_address
from service.documents.pdf_metadata import read_payload_metadata
from service.protocol.barcode_text import build_payload_v2, build_scan_url_v2, parse_barcode
from service.protocol.crypto import decrypt
from service.protocol.encoding import b64url_decode, b64url_encode
from testbed import web
from testbed.oauth import fetch_token
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


def _venv_first(env: dict[str, str]) -> dict[str, str]:
    """The environment of a shell with the project's environment active (the README says to
    activate it before sealing with `python3`): this interpreter's directory first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def test_the_readme_commands_run_as_written_against_the_demo(tmp_path: Path) -> None:
    commands = block("readme-api-commands")
    badge = block("readme-api-badge")
    snippet = block("readme-api-python")
    issuer_snippet = block("readme-issuer-python")
    with _demo() as (server, url):
        demo = _printed(server)
        env = _venv_first({**os.environ, **_exports(demo["shell"])})
        env.pop("AUTHLIB_INSECURE_TRANSPORT", None)
        script = f"set -euo pipefail\n{demo['shell']}\n{commands}\n{badge}"
        done = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr + done.stdout
        replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        python = _run_python(snippet, env, tmp_path)
        issued = _run_python(issuer_snippet, env, tmp_path)
        assert issued.returncode == 0, issued.stderr
        stamped = (tmp_path / "payslip-badge.pdf").read_bytes()
        token = fetch_token(url, demo["verifier"]["client_id"], demo["verifier"]["client_secret"])
        from_pdf = _verify(url, token, read_payload_metadata(stamped)[0])
        from_print = _verify(url, token, issued.stdout.strip())
    assert len(replies) == 5, done.stdout
    verified, registered, batch, built, badge_verified = replies
    assert verified["verified"] is True
    assert verified["service_reference"] == demo["samples"][0]["service_reference"]
    assert len(registered["service_reference"]) == 22
    assert [r["status"] for r in batch["results"]] == ["created", "created"]
    # registerAndBuildBarcode with curl: a badge that verifies, and its text beside it.
    assert set(built) == {"service_reference", "scan_url", "payload"}
    assert built["scan_url"].startswith(f"{url}/v/{built['service_reference']}#2.")
    assert built["payload"].startswith(f"2|{built['service_reference']}|")
    assert (tmp_path / "badge.png").read_bytes().startswith(b"\x89PNG")
    assert badge_verified["verified"] is True
    assert badge_verified["employee"]["employee_name"] == "Casey Sampleton"
    assert python.returncode == 0, python.stderr
    assert python.stdout.strip() == "200 True"
    # The issuer library's ten lines: the stamped PDF's metadata and the printed scan URL verify.
    assert from_pdf["verified"] is True and from_print["verified"] is True
    assert from_pdf["service_reference"] == from_print["service_reference"]
    assert from_pdf["employee"]["account_name"] == "C Sampleton"


def _run_python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
        cwd=cwd,
    )


def _verify(url: str, token: str, barcode: str | None) -> dict[str, Any]:
    assert barcode
    reply = web.post(
        f"{url}/v1/verifications/payload",
        json={"barcode": barcode},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def _vector() -> dict[str, str]:
    lines = block("readme-test-vector").splitlines()
    return dict((name.strip(), value.strip()) for name, value in (x.split(":", 1) for x in lines))


def test_the_readme_test_vector_is_what_the_protocol_makes() -> None:
    """The recipe's test vector, checked with a bare AES-GCM (as another language would) and
    against the protocol's own builders, and it decrypts with the service's reader."""
    vector = _vector()
    key, iv = b64url_decode(vector["key (base64url)"]), b64url_decode(vector["iv (base64url)"])
    text = vector["PII text"].encode("utf-8")
    assert (len(key), len(iv)) == (32, 12)
    sealed = AESGCM(key).encrypt(iv, text, None)
    ciphertext, tag = sealed[:-16], sealed[-16:]
    assert b64url_encode(ciphertext) == vector["ciphertext (encrypted_pii)"]
    assert b64url_encode(tag) == vector["tag (base64url)"]
    reference = vector["reference"]
    b32 = base64.b32encode(ciphertext).decode().rstrip("=")
    assert vector["payload"] == f"2|{reference}|{b32}" == build_payload_v2(reference, ciphertext)
    scan_url = f"{vector['verifier URL']}/v/{reference}#2.{b32}"
    assert vector["scan URL"] == scan_url
    assert scan_url == build_scan_url_v2(vector["verifier URL"], reference, ciphertext)
    # The PII text is what the issuer library writes for those fields.
    assert vector["PII text"] == au2_text(
        employee_name="Zoë Sampleton",
        position="Store Manager",
        department="Retail",
        employer_identity="51824753556",
        bsb="062-000",
        account_number="11112222",
        account_name="Z Sampleton",
        address=au_address("1 Example Street", "", "Exampleton", "NSW", "2000"),
    )
    read = parse_barcode(vector["scan URL"])
    assert (read.service_reference, read.ciphertext) == (reference, ciphertext)
    assert decrypt(read.ciphertext, iv, tag, key) == text
