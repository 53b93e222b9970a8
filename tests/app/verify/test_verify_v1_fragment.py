"""`python -m app verify` reads the `#1.` scan URL other issuer libraries print (issue 8,
PROTOCOL §3), as text and as a QR code in an image, through the same parser as the service."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import segno

from app.inputs.reading import read_input
from app.shell.context import AppContext
from service.protocol.barcode_text import build_scan_url_v1_fragment
from service.protocol.encoding import base32_decode
from tests.commands import run_module


def _v1_url(ctx: AppContext) -> tuple[str, str]:
    assert ctx.demo is not None
    sample = next(s for s in ctx.demo.samples if not s.revoked)
    _, reference, encoded = sample.payload.split("|")
    return build_scan_url_v1_fragment(ctx.service_url, reference, base32_decode(encoded)), reference


def _verify(ctx: AppContext, arg: str) -> subprocess.CompletedProcess[str]:
    assert ctx.demo is not None
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return run_module(
        "app",
        *("verify", arg, "--json", f"--service-url={ctx.service_url}"),
        f"--client-id={ctx.demo.verifier.client_id}",
        f"--client-secret={ctx.demo.verifier.client_secret}",
        env=env,
    )


def test_app_verify_reads_a_v1_fragment_as_text(demo_context: AppContext) -> None:
    url, reference = _v1_url(demo_context)
    out = _verify(demo_context, url)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["verified"] is True and result["service_reference"] == reference


def test_app_verify_reads_a_v1_fragment_printed_as_a_qr_code(
    demo_context: AppContext, tmp_path: Path
) -> None:
    """Another library's badge: one byte-mode segment holding the `#1.` URL."""
    url, reference = _v1_url(demo_context)
    image = tmp_path / "other-library-badge.png"
    segno.make(url, error="m", micro=False).save(str(image), scale=4, border=4)
    reading = read_input(str(image))
    assert reading.payloads == [url]
    out = _verify(demo_context, str(image))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["service_reference"] == reference
