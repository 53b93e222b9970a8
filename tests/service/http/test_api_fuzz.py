"""Schemathesis against the served /openapi.json (issue 15's standing gate, bounded for CI).

Generated requests go to a real server on loopback with no token and with an issuer's, a
verifier's and an admin's token. The gate: no server error, and every response (status, content
type, headers, body) inside what the document declares. Not checked here: "schema-valid request
rejected" (rules JSON Schema cannot state, such as a key version of another issuer, period order
or barcode text structure, rightly refuse some schema-valid bodies) and "schema-violating request
accepted" (it counts a 413 for an oversized invalid body as acceptance).
`bench/fuzz_long.sh` runs the same with thousands of cases.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service.conftest import LiveService

ROOT = Path(__file__).resolve().parents[3]
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "response_headers_conformance",
    ]
)


def run_schemathesis(url: str, bearer: str | None, max_examples: int, seed: int) -> str:
    """One `st run`; returns its report, failing the test with it when anything was found."""
    command = [
        str(Path(sys.executable).parent / "st"),
        "run",
        f"{url}/openapi.json",
        "--checks",
        CHECKS,
        "--phases",
        "examples,fuzzing",
        "--max-examples",
        str(max_examples),
        "--workers",
        "1",
        "--seed",
        str(seed),
    ]
    if bearer:
        command += ["-H", f"Authorization: Bearer {bearer}"]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
    )
    # Reproduction lines can hold a whole generated body: keep the report readable.
    report = "\n".join(line[:400] for line in (done.stdout + done.stderr).splitlines())
    assert done.returncode == 0, report[-6000:]
    assert " passed" in report, report[-2000:]
    return report


@pytest.mark.slow
@pytest.mark.parametrize("who", ["nobody", "issuer", "verifier", "admin"])
def test_generated_requests_get_documented_answers(live: LiveService, who: str) -> None:
    bearer = {
        "nobody": lambda: None,
        "issuer": live.issuer_token,
        "verifier": live.verifier_token,
        "admin": live.admin_token,
    }[who]()
    run_schemathesis(live.url, bearer, max_examples=12, seed=20261123)
