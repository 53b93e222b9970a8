"""`python -m app verify --receipt FILE` and `python -m app receipt check FILE` (issue 23), against
the real embedded demo service: genuine receipts exit 0, altered ones 1, unknown keys 2."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.__main__ import main
from app.shell.context import AppContext
from service.protocol.encoding import b64url_encode
from testbed import web
from tests.commands import run_module


def _remote(ctx: AppContext) -> list[str]:
    assert ctx.demo is not None
    return [
        f"--service-url={ctx.service_url}",
        f"--client-id={ctx.demo.verifier.client_id}",
        f"--client-secret={ctx.demo.verifier.client_secret}",
    ]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _made(
    ctx: AppContext, capsys: pytest.CaptureFixture[str], tmp_path: Path, revoked: bool = False
) -> Path:
    assert ctx.demo is not None
    sample = next(s for s in ctx.demo.samples if s.revoked == revoked)
    file = tmp_path / f"receipt-{sample.service_reference}.jws"
    code, _, err = _run(capsys, "verify", sample.payload, *_remote(ctx), "--receipt", str(file))
    assert code == (1 if revoked else 0), err
    return file


def test_a_receipt_saved_by_verify_checks_against_the_service_and_offline(
    demo_context: AppContext, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = _made(demo_context, capsys, tmp_path)
    receipt = file.read_text().strip()
    assert jwt.get_unverified_header(receipt)["typ"] == "payslip-receipt+jwt"
    code, out, err = _run(capsys, "receipt", "check", str(file), "--jwks", demo_context.service_url)
    assert code == 0, err
    assert out.startswith("GENUINE:")
    assert "VERIFIED:" in out and "NOT VERIFIED" not in out
    assert "Demo Payroll Pty Ltd" in out
    assert "Net pay" in out and "Employee" in out
    jwks = tmp_path / "jwks.json"
    jwks.write_text(web.get(f"{demo_context.service_url}/.well-known/jwks.json").text)
    offline = _run(capsys, "receipt", "check", str(file), "--jwks", str(jwks))
    assert offline[0] == 0 and offline[1] == out


def test_a_revoked_payslip_gets_a_not_verified_receipt(
    demo_context: AppContext, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = _made(demo_context, capsys, tmp_path, revoked=True)
    code, out, _ = _run(capsys, "receipt", "check", str(file), "--jwks", demo_context.service_url)
    assert code == 0  # the receipt is genuine; what it records is a refusal
    assert "NOT VERIFIED:" in out and "revoked" in out.lower()


def test_altered_forged_and_unknown_receipts(
    demo_context: AppContext, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    receipt = _made(demo_context, capsys, tmp_path).read_text().strip()
    header, payload, signature = receipt.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["employee_name"] = "Somebody Else"
    altered = tmp_path / "altered.jws"
    altered.write_text(f"{header}.{b64url_encode(json.dumps(claims).encode())}.{signature}")
    url = demo_context.service_url
    code, out, err = _run(capsys, "receipt", "check", str(altered), "--jwks", url)
    assert code == 1 and out == "" and err.startswith("ALTERED:")
    assert "Somebody Else" not in err

    kid = jwt.get_unverified_header(receipt)["kid"]
    forged = tmp_path / "forged.jws"
    forged.write_text(
        jwt.encode(
            claims,
            Ed25519PrivateKey.generate(),
            algorithm="EdDSA",
            headers={"kid": kid, "typ": "payslip-receipt+jwt"},
        )
    )
    assert _run(capsys, "receipt", "check", str(forged), "--jwks", url)[0] == 1

    token = web.post(
        f"{url}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": demo_context.demo.verifier.client_id,  # type: ignore[union-attr]
            "client_secret": demo_context.demo.verifier.client_secret,  # type: ignore[union-attr]
            "audience": url,
        },
    ).json()["access_token"]
    not_a_receipt = tmp_path / "token.jws"
    not_a_receipt.write_text(token)
    code, _, err = _run(capsys, "receipt", "check", str(not_a_receipt), "--jwks", url)
    assert code == 1 and "not a verification receipt" in err

    others = tmp_path / "other-keys.json"
    stranger = jwt.algorithms.OKPAlgorithm.to_jwk(
        Ed25519PrivateKey.generate().public_key(), as_dict=True
    )
    others.write_text(json.dumps({"keys": [{**stranger, "kid": "someone-else"}]}))
    good = tmp_path / "good.jws"
    good.write_text(receipt)
    code, _, err = _run(capsys, "receipt", "check", str(good), "--jwks", str(others))
    assert code == 2 and err.startswith("CANNOT_CHECK:")


def test_bad_inputs_are_one_plain_line(tmp_path: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PAYSLIP_CONFIG_DIR": str(tmp_path)}
    missing = run_module("app", "receipt", "check", str(tmp_path / "nope.jws"), env=env)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == ["CANNOT_CHECK: nope.jws does not exist"], (
        missing.stderr
    )
    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    receipt = tmp_path / "r.jws"
    receipt.write_text("a.b.c")
    bad_keys = run_module("app", "receipt", "check", str(receipt), "--jwks", str(junk), env=env)
    assert bad_keys.returncode == 2 and "Traceback" not in bad_keys.stderr
    assert len(bad_keys.stderr.strip().splitlines()) == 1


def test_cannot_verify_writes_no_receipt(
    demo_context: AppContext, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import socket

    assert demo_context.demo is not None
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    file = tmp_path / "receipt.jws"
    sample = demo_context.demo.samples[0]
    code, _, err = _run(
        capsys,
        "verify",
        sample.payload,
        f"--service-url={closed}",
        "--client-id=x",
        "--client-secret=y",
        "--receipt",
        str(file),
    )
    assert code == 2 and "NO_RECEIPT" in err
    assert not file.exists()
