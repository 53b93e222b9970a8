"""`python -m app verify`, `--self-test` and `--version` as a support person would run them.

A few run as real processes (`_run`): the version, the self-test, stdin and a missing service
configuration. The rest call the same command's function in this process (`verify`), which
answers with the same exit code, stdout and stderr for a second less of CPU each.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.shell.context import AppContext
from service.documents.badge import render_badge_png
from service.documents.pdf_metadata import write_payload_metadata
from service.documents.pdf_stamp import stamp_badge
from service.protocol.encoding import base32_decode, base32_encode
from tests.app.conftest import Verify
from tests.commands import run_module


def _run(
    args: list[str], env_extra: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **(env_extra or {})}
    return run_module("app", *args, env=env, stdin=stdin)


def _remote(ctx: AppContext) -> list[str]:
    assert ctx.demo is not None
    return [
        f"--service-url={ctx.service_url}",
        f"--client-id={ctx.demo.verifier.client_id}",
        f"--client-secret={ctx.demo.verifier.client_secret}",
    ]


def _blank_pdf() -> bytes:
    from app.ui.self_test import blank_pdf

    return blank_pdf()


def test_version() -> None:
    out = _run(["--version"])
    assert out.returncode == 0
    assert "Payslip Verify 0.1.0" in out.stdout


def test_verify_text_image_and_pdf_exit_zero(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    assert demo_context.demo is not None
    sample = demo_context.demo.samples[0]
    image = tmp_path / "badge.png"
    image.write_bytes(render_badge_png(sample.scan_url))
    pdf = tmp_path / "payslip.pdf"
    pdf.write_bytes(stamp_badge(_blank_pdf(), render_badge_png(sample.scan_url), sample.payload))
    for arg in (sample.payload, str(image), str(pdf)):
        out = verify([arg, "--json", *_remote(demo_context)])
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout)
        assert result["verified"] is True and result["verdict"] == "VERIFIED"
        assert result["service_reference"] == sample.service_reference
    # one real process: stdin, the exit code and the summary as a shell sees them
    out = _run(["verify", "-", *_remote(demo_context)], stdin=sample.scan_url + "\n")
    assert out.returncode == 0
    assert "VERIFIED" in out.stdout and "Demo Payroll Pty Ltd" in out.stdout
    assert "12345678" not in out.stdout  # the account is masked in the summary


def test_credentials_from_the_environment(verify: Verify, demo_context: AppContext) -> None:
    assert demo_context.demo is not None
    sample = demo_context.demo.samples[0]
    env = {
        "PAYSLIP_CLIENT_ID": demo_context.demo.verifier.client_id,
        "PAYSLIP_CLIENT_SECRET": demo_context.demo.verifier.client_secret,
    }
    out = verify([sample.payload, "--service-url", demo_context.service_url], env)
    assert out.returncode == 0, out.stderr


def test_revoked_exits_one(verify: Verify, demo_context: AppContext) -> None:
    assert demo_context.demo is not None
    revoked = next(s for s in demo_context.demo.samples if s.revoked)
    out = verify([revoked.payload, "--json", *_remote(demo_context)])
    assert out.returncode == 1
    assert json.loads(out.stdout)["payslip"]["status"] == "revoked"


def test_disagreeing_pdf_exits_one_with_both_results(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    assert demo_context.demo is not None
    first, second = demo_context.demo.samples[0], demo_context.demo.samples[1]
    stamped = stamp_badge(_blank_pdf(), render_badge_png(second.scan_url), second.payload)
    pdf = tmp_path / "tampered.pdf"
    pdf.write_bytes(write_payload_metadata(stamped, first.payload))
    out = verify([str(pdf), "--json", *_remote(demo_context)])
    assert out.returncode == 1, out.stderr
    body = json.loads(out.stdout)
    assert body["verified"] is False and body["reason"] == "CONFLICTING_CODES"
    refs = {r["service_reference"] for r in body["results"]}
    assert refs == {first.service_reference, second.service_reference}


@pytest.mark.parametrize("kind", ["tampered", "unknown"])
def test_not_verified_exits_one_with_the_code_on_stderr(
    verify: Verify, demo_context: AppContext, kind: str
) -> None:
    assert demo_context.demo is not None
    sample = demo_context.demo.samples[0]
    _, ref, b32 = sample.payload.split("|")
    if kind == "tampered":
        data = bytearray(base32_decode(b32))
        data[0] ^= 1
        payload, code = f"2|{ref}|{base32_encode(bytes(data))}", "DECRYPTION_FAILED"
    else:
        payload, code = f"2|{'A' * 22}|{b32}", "SERVICE_REFERENCE_NOT_FOUND"
    out = verify([payload, *_remote(demo_context)])
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith("NOT VERIFIED: ")
    assert "Do not accept this payslip." in out.stdout
    assert out.stderr.startswith(code)
    out = verify([payload, "--json", *_remote(demo_context)])
    assert out.returncode == 1
    body = json.loads(out.stdout)
    assert body["verdict"] == "NOT VERIFIED" and body["code"] == code


def test_revoked_summary_shows_no_employee_data(verify: Verify, demo_context: AppContext) -> None:
    assert demo_context.demo is not None
    revoked = next(s for s in demo_context.demo.samples if s.revoked)
    out = verify([revoked.payload, *_remote(demo_context)])
    assert out.returncode == 1
    assert out.stdout.startswith("NOT VERIFIED: ")
    assert "Alex" not in out.stdout and "Net pay" not in out.stdout


@pytest.mark.parametrize("text", ["hello world", "/no/such/payslip.pdf"])
def test_not_a_payslip_code_exits_two_and_sends_nothing(
    verify: Verify, demo_context: AppContext, text: str
) -> None:
    out = verify([text, *_remote(demo_context)])
    assert out.returncode == 2
    assert out.stderr.startswith("INPUT_UNREADABLE: ")
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_service_down_exits_two_cannot_verify(verify: Verify) -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()
    payload = f"2|{'A' * 22}|{'A' * 40}"
    out = verify([payload, "--json", f"--service-url={url}", "--client-id=x", "--client-secret=y"])
    assert out.returncode == 2, out.stderr
    assert json.loads(out.stdout) == {
        "verdict": "CANNOT VERIFY",
        "code": "SERVICE_UNREACHABLE",
        "request_id": json.loads(out.stdout)["request_id"],
    }
    assert out.stderr.startswith("SERVICE_UNREACHABLE: ")


def test_no_service_configured_refuses_without_creating_an_instance(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {
        "PAYSLIP_CONFIG_DIR": str(tmp_path / "config"),
        "PAYSLIP_DATA_DIR": str(data),
        "PAYSLIP_NO_KEYRING": "1",
    }
    out = _run(["verify", f"2|{'A' * 22}|{'A' * 40}"], env)
    assert out.returncode == 2
    assert out.stderr.startswith("NO_SERVICE: ") and len(out.stderr.strip().splitlines()) == 1
    assert out.stdout == ""
    assert not data.exists() or not any(data.iterdir())


def test_self_test_passes() -> None:
    out = _run(["--self-test"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  badge image" in out.stdout and "PASS  stamped PDF" in out.stdout
    # PROTOCOL §13: a scanned page of the verified sample is OCR'd and its figures match.
    assert "PASS  document check of a scanned page (OCR)" in out.stdout


def test_an_image_of_another_qr_code_is_no_verdict(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    import segno

    image = tmp_path / "menu.png"
    segno.make("https://example.com/lunch-menu", error="m").save(str(image), scale=8)
    out = verify([str(image), *_remote(demo_context)])
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "NOT_A_PAYSLIP_CODE: That is not a payslip code: scan the QR badge on the payslip"
    )
    assert out.stdout == ""
