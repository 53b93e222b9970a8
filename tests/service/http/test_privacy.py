"""Nothing personal or secret leaves the request (spec; PROTOCOL §2, §7): after real traffic with
marker PII, no stored file, log line or error body holds the plaintext, the ciphertext in any
encoding, a client secret or an encryption key."""

from __future__ import annotations

import base64
import logging
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.hosting.server import start
from service.protocol.barcode_text import build_payload_v1
from service.protocol.encoding import b64url_decode, b64url_encode, base32_encode
from testbed.factories import MARKER_ACCOUNT, MARKER_NAME, Sealed, build_body, sealed_record
from testbed.oauth import token_body
from tests.service.conftest import make_instance

ROOT = Path(__file__).resolve().parents[3]


def secret_forms(value: str) -> list[bytes]:
    raw = b64url_decode(value)
    return [value.encode(), raw, base64.b64encode(raw), raw.hex().encode()]


def ciphertext_forms(ciphertext: bytes) -> list[bytes]:
    return [
        ciphertext,
        b64url_encode(ciphertext).encode(),
        base32_encode(ciphertext).encode(),
        base64.b64encode(ciphertext),
        ciphertext.hex().encode(),
    ]


@dataclass
class Traffic:
    """Everything that must never be stored or logged, and the error bodies the run produced."""

    needles: dict[str, bytes] = field(default_factory=dict)
    error_bodies: list[str] = field(default_factory=list)

    def forbid(self, label: str, forms: list[bytes]) -> None:
        for index, form in enumerate(forms):
            self.needles[f"{label}#{index}"] = form

    def leaks(self, blob: bytes) -> list[str]:
        return sorted(label for label, needle in self.needles.items() if needle in blob)


def exercise(
    url: str, admin: dict[str, str], issuer: dict[str, Any], verifier: dict[str, Any]
) -> Traffic:
    """Register, build, verify and fail in every way, with marker PII, through HTTP."""
    traffic = Traffic()
    traffic.forbid("marker name", [MARKER_NAME.encode()])
    traffic.forbid("marker account", [MARKER_ACCOUNT.encode()])
    for label, value in (
        ("admin secret", admin["admin_client_secret"]),
        ("issuer secret", issuer["client_secret"]),
        ("verifier secret", verifier["client_secret"]),
        ("issuer key", issuer["encryption_key"]),
    ):
        traffic.forbid(label, secret_forms(value))
    http = httpx.Client(verify=False, timeout=30)

    def token(client_id: str, secret: str) -> str:
        reply = http.post(f"{url}/oauth/token", json=token_body(client_id, secret, url))
        if reply.status_code != 200:
            traffic.error_bodies.append(reply.text)
            return ""
        return str(reply.json()["access_token"])

    issuer_token = token(issuer["client_id"], issuer["client_secret"])
    verifier_token = token(verifier["client_id"], verifier["client_secret"])
    admin_token = token(admin["admin_client_id"], admin["admin_client_secret"])
    wrong = b64url_encode(os.urandom(32))
    traffic.forbid("attempted secret", secret_forms(wrong))
    token(issuer["client_id"], wrong)
    token(admin["admin_client_id"], wrong)

    def post(path: str, body: Any, bearer: str) -> httpx.Response:
        reply = http.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {bearer}"})
        if reply.status_code >= 400:
            traffic.error_bodies.append(reply.text)
        return reply

    key = issuer["encryption_key"]
    sealed: list[Sealed] = [
        sealed_record(key, schema, fmt)
        for schema, fmt in (
            ("au.payslip.v1", "AU2"),
            ("nz.payslip.v1", "NZ2"),
            ("au.payslip.v2", "P1"),
            ("nz.payslip.v2", "P2"),
        )
    ]
    for s in sealed:
        assert post("/v1/registerNonPII", s.body, issuer_token).status_code == 201
    batch = [sealed_record(key, pii_format="AU2") for _ in range(3)]
    records = [{**s.body, "external_id": f"emp-{i}"} for i, s in enumerate(batch)]
    assert post("/v1/registerNonPIIBatch", {"records": records}, issuer_token).status_code == 200
    built = sealed_record(key, pii_format="NZ2")
    reply = post("/v1/registerAndBuildBarcode", build_body(built), issuer_token)
    assert reply.status_code == 201, reply.text
    built_ref = reply.json()["service_reference"]
    everything = [*sealed, *batch, built]
    for s in everything:
        traffic.forbid(f"ciphertext {s.reference}", ciphertext_forms(s.ciphertext))
        traffic.forbid(f"plaintext {s.reference}", [s.pii_text.encode()])

    # Successful verifications in several forms.
    for s in [*sealed, *batch]:
        for text in (s.payload, s.scan_url(url), build_payload_v1(s.reference, s.ciphertext)):
            result = post("/v1/verifications/payload", {"barcode": text}, verifier_token)
            assert result.status_code == 200, result.text
            assert MARKER_NAME in result.text  # the verifier does see the employee
    built_text = f"{url}/v/{built_ref}#2.{base32_encode(built.ciphertext)}"
    assert (
        post("/v1/verifications/payload", {"barcode": built_text}, verifier_token).status_code
        == 200
    )

    # Failures that carry ciphertext or PII in the request.
    first = sealed[0]
    flipped = bytearray(first.ciphertext)
    flipped[3] ^= 0x10
    tampered = bytes(flipped)
    traffic.forbid("tampered ciphertext", ciphertext_forms(tampered))
    failing_barcodes = [
        f"2|{first.reference}|{base32_encode(tampered)}",
        f"1|{first.reference}|{b64url_encode(tampered)}",
        f"2|{first.reference}|{base32_encode(first.ciphertext).lower()}",
        f"2|{'Z' * 22}|{base32_encode(first.ciphertext)}",
        f"{MARKER_NAME} {MARKER_ACCOUNT}",
        f"https://h.example/v/{first.reference}#1.{b64url_encode(tampered)}",
    ]
    for text in failing_barcodes:
        post("/v1/verifications/payload", {"barcode": text}, verifier_token)
    post("/v1/verifications/payload", {"barcode": first.payload, "extra": 1}, verifier_token)
    again = build_body(built)
    post("/v1/registerAndBuildBarcode", again, issuer_token)  # IV_REUSED with a ciphertext
    bad_build = {**build_body(first), "encrypted_pii": b64url_encode(tampered)}
    post("/v1/registerAndBuildBarcode", bad_build, issuer_token)  # does not authenticate
    invalid_build = {**build_body(first), "schema": "xx", "service_reference": first.reference}
    post("/v1/registerAndBuildBarcode", invalid_build, issuer_token)
    conflict = {**first.body, "issued_at": "2026-01-01T00:00:00Z"}
    post("/v1/registerNonPII", conflict, issuer_token)
    post(
        "/v1/registerNonPII", {**first.body, "payslip_non_pii": {"note": MARKER_NAME}}, issuer_token
    )
    post(
        "/v1/registerNonPIIBatch",
        {"records": [{**batch[0].body, "employee": MARKER_ACCOUNT}]},
        issuer_token,
    )
    post("/v1/registerNonPII", first.body, f"{issuer_token}x")  # bad signature

    # Admin traffic: new secrets and keys must not be stored or logged either.
    created = post("/admin/v1/issuers", {"name": "Leak Check Payroll"}, admin_token).json()
    rotated = post(f"/admin/v1/issuers/{issuer['issuer_id']}/keys", None, admin_token).json()
    desk = post("/admin/v1/verifiers", {"name": "Leak Check Desk"}, admin_token).json()
    traffic.forbid("created issuer secret", secret_forms(created["client_secret"]))
    traffic.forbid("created issuer key", secret_forms(created["encryption_key"]))
    traffic.forbid("rotated key", secret_forms(rotated["encryption_key"]))
    traffic.forbid("created verifier secret", secret_forms(desk["client_secret"]))
    http.get(f"{url}/admin/v1/overview", headers={"Authorization": f"Bearer {admin_token}"})
    # The tokens themselves are bearer credentials too.
    for label, value in (("issuer token", issuer_token), ("admin token", admin_token)):
        traffic.forbid(label, [value.encode(), value.split(".")[2].encode()])
    http.close()
    return traffic


def data_dir_leaks(data_dir: Path, traffic: Traffic) -> dict[str, list[str]]:
    found = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            leaks = traffic.leaks(path.read_bytes())
            if leaks:
                found[str(path.relative_to(data_dir))] = leaks
    return found


def error_body_leaks(traffic: Traffic) -> list[str]:
    assert len(traffic.error_bodies) >= 10, "the failure paths were not exercised"
    labels = [label for label in traffic.needles if not label.startswith(("issuer token", "admin"))]
    return [
        body
        for body in traffic.error_bodies
        if any(traffic.needles[label] in body.encode() for label in labels)
    ]


def test_live_server_stores_and_logs_nothing_personal_or_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("service", "service.http", "service.server", "waitress"):
        caplog.set_level(logging.DEBUG, logger=name)
    data_dir = tmp_path / "data"
    admin, issuer, verifier = make_instance(data_dir)
    running = start(data_dir)
    try:
        traffic = exercise(running.url, admin, issuer, verifier)
        assert data_dir_leaks(data_dir, traffic) == {}
    finally:
        running.stop()  # compaction on close rewrites the files: look again below
    assert caplog.records, "the server logged nothing: the capture is not working"
    assert any("request_id=" in r.getMessage() for r in caplog.records)
    log_text = "\n".join(
        f"{r.name} {r.levelname} {r.getMessage()} {r.exc_text or ''} {r.stack_info or ''}"
        for r in caplog.records
    )
    assert traffic.leaks(log_text.encode("utf-8", "backslashreplace")) == []
    assert traffic.leaks(caplog.text.encode("utf-8", "backslashreplace")) == []
    assert error_body_leaks(traffic) == []
    assert data_dir_leaks(data_dir, traffic) == {}


@pytest.mark.slow
def test_cli_server_output_and_files_hold_nothing_personal_or_secret(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    created, issuer, verifier = make_instance(data_dir)
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", "0", "--data-dir", str(data_dir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        match = re.fullmatch(r"listening on (http://\S+)\n", line)
        assert match, line
        url = match.group(1)
        traffic = exercise(url, created, issuer, verifier)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate(timeout=20)
    output = line.encode() + stdout + stderr
    assert b"request_id=" in stderr, "the server logged no requests: the capture is not working"
    assert traffic.leaks(output) == []
    assert error_body_leaks(traffic) == []
    assert proc.returncode == 0, stderr.decode()
    assert data_dir_leaks(data_dir, traffic) == {}
