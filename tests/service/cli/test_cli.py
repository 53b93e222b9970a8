"""`python -m service init | admin | serve` (PROTOCOL §8, §9): output, exit codes, and a running
server seeing CLI changes without a restart."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.cli.main import main
from service.hosting.server import start
from service.protocol.encoding import b64url_decode, b64url_encode
from testbed.factories import sealed_record
from testbed.oauth import fetch_token
from tests.commands import run_module
from tests.service.conftest import LiveService
from tests.service.http.http_helpers import expect_new_issuer

ROOT = Path(__file__).resolve().parents[3]
HTTP = httpx.Client(verify=False, timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_module("service", *args, env={**os.environ, **(env or {})}, timeout=60)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in-process (the same `main` the module runs), for speed."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def assert_one_line_error(code: int, out: str, err: str) -> None:
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err


def token(url: str, client_id: str, secret: str) -> str:
    return fetch_token(url, client_id, secret, http=HTTP)


class Serve:
    """A `python -m service serve` subprocess whose output is read line by line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._pumps = [
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
            for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))
        ]
        for pump in self._pumps:
            pump.start()

    def _pump(self, stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line)
            if sink is self.stdout:
                self.lines.put(line)

    def wait_listening(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no 'listening on' line; stderr: {''.join(self.stderr)}"
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                assert self.proc.poll() is None, f"exited early: {''.join(self.stderr)}"
                continue
            match = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))\n", line)
            if match:
                assert int(match.group(2)) > 0
                return match.group(1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._close_pipes()
        return int(self.proc.returncode)

    def _close_pipes(self) -> None:
        """Each pump ends at its pipe's end of file once the process is gone; then the pipes are
        closed here (left to the garbage collector they warn as unclosed files). A pipe a pump
        still reads is left alone: closing it would wait for that read."""
        for pump, stream in zip(self._pumps, (self.proc.stdout, self.proc.stderr), strict=True):
            pump.join(timeout=15)
            if stream is not None and not pump.is_alive():
                stream.close()


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[Serve, str]]:
    server = Serve(*args, env=env)
    try:
        yield server, server.wait_listening()
    finally:
        server.stop()


# --- init ----------------------------------------------------------------------------------


def test_init_prints_credentials_and_refuses_a_second_time(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh"
    done = cli("init", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    created = one_json_object(done.stdout)
    assert set(created) == {"data_dir", "admin_client_id", "admin_client_secret"}
    assert Path(created["data_dir"]) == data_dir
    master = data_dir / "master.key"
    assert master.stat().st_mode & 0o777 == 0o600
    key_text = master.read_text()
    assert len(b64url_decode(key_text.strip())) == 32
    again = cli("init", "--data-dir", str(data_dir))
    assert_one_line_error(again.returncode, again.stdout, again.stderr)
    assert master.read_text() == key_text  # untouched
    # The admin client works against a server on that directory.
    running = start(data_dir)
    try:
        token(running.url, created["admin_client_id"], created["admin_client_secret"])
    finally:
        running.stop()


def test_init_accepts_an_empty_directory_and_an_env_master_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run_main(capsys, "init", "--data-dir", str(empty))
    assert code == 0
    one_json_object(out)
    monkeypatch.setenv("PAYSLIP_MASTER_KEY", b64url_encode(bytes(range(32))))
    keyed = tmp_path / "keyed"
    code, out, _ = run_main(capsys, "init", "--data-dir", str(keyed))
    assert code == 0, out
    assert not (keyed / "master.key").exists()
    code, out, err = run_main(capsys, "admin", "--data-dir", str(keyed), "list")
    assert code == 0, err
    monkeypatch.setenv("PAYSLIP_MASTER_KEY", "too-short")
    assert_one_line_error(*run_main(capsys, "admin", "--data-dir", str(keyed), "list"))
    assert_one_line_error(*run_main(capsys, "init", "--data-dir", str(tmp_path / "bad")))


def test_data_dir_defaults_to_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYSLIP_DATA_DIR", str(tmp_path / "from-env"))
    code, out, _ = run_main(capsys, "init")
    assert code == 0
    assert one_json_object(out)["data_dir"] == str(tmp_path / "from-env")
    code, out, _ = run_main(capsys, "admin", "create-verifier", "--name", "Env Desk")
    assert code == 0
    assert one_json_object(out)["client_id"]


# --- admin ---------------------------------------------------------------------------------


def test_admin_commands_print_one_json_object_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = str(tmp_path / "d")
    code, out, _ = run_main(capsys, "init", "--data-dir", data_dir)
    admin = one_json_object(out)

    code, out, _ = run_main(
        capsys, "admin", "--data-dir", data_dir, "create-issuer", "--name", "CLI Payroll"
    )
    assert code == 0
    issuer = one_json_object(out)
    expect_new_issuer(issuer)

    code, out, _ = run_main(
        capsys, "admin", "--data-dir", data_dir, "create-verifier", "--name", "CLI Desk"
    )
    assert code == 0
    verifier = one_json_object(out)
    assert set(verifier) == {"verifier_id", "client_id", "client_secret"}

    code, out, _ = run_main(
        capsys, "admin", "--data-dir", data_dir, "rotate-key", "--issuer-id", issuer["issuer_id"]
    )
    assert code == 0
    rotated = one_json_object(out)
    assert set(rotated) == {"key_version", "encryption_key"}
    assert rotated["key_version"] == issuer["issuer_id"] + ".2"

    code, out, _ = run_main(
        capsys,
        "admin",
        "--data-dir",
        data_dir,
        "retire-key",
        "--key-version",
        issuer["key_version"],
    )
    assert code == 0
    assert one_json_object(out) == {"key_version": issuer["key_version"], "status": "retired"}

    code, out, _ = run_main(capsys, "admin", "--data-dir", data_dir, "list")
    assert code == 0
    overview = one_json_object(out)
    for secret in (
        admin["admin_client_secret"],
        issuer["client_secret"],
        issuer["encryption_key"],
        rotated["encryption_key"],
        verifier["client_secret"],
    ):
        assert secret not in out
    assert [i["name"] for i in overview["issuers"]] == ["CLI Payroll"]
    assert {k["key_version"]: k["state"] for k in overview["keys"]} == {
        issuer["key_version"]: "retired",
        rotated["key_version"]: "active",
    }

    # What the CLI made works on a server started afterwards.
    running = start(Path(data_dir))
    try:
        issuer_token = token(running.url, issuer["client_id"], issuer["client_secret"])
        sealed = sealed_record(rotated["encryption_key"], key_version=rotated["key_version"])
        reply = HTTP.post(
            f"{running.url}/v1/registerNonPII",
            json=sealed.body,
            headers={"Authorization": f"Bearer {issuer_token}"},
        )
        assert reply.status_code == 201, reply.text
        verifier_token = token(running.url, verifier["client_id"], verifier["client_secret"])
        verified = HTTP.post(
            f"{running.url}/v1/verifications/payload",
            json={"barcode": sealed.payload},
            headers={"Authorization": f"Bearer {verifier_token}"},
        )
        assert verified.json()["verified"] is True
    finally:
        running.stop()

    code, out, _ = run_main(
        capsys,
        "admin",
        "--data-dir",
        data_dir,
        "disable-client",
        "--client-id",
        verifier["client_id"],
    )
    assert code == 0
    assert one_json_object(out) == {"client_id": verifier["client_id"], "disabled": True}


def test_admin_errors_are_one_line_and_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = str(tmp_path / "d")
    assert main(["init", "--data-dir", data_dir]) == 0
    capsys.readouterr()
    unknown_uuid = "abcdef00-0000-4000-8000-00000000000f"
    bad_inputs = [
        ("rotate-key", "--issuer-id", unknown_uuid),
        ("rotate-key", "--issuer-id", "not-a-uuid"),
        ("retire-key", "--key-version", "not-a-version"),
        ("retire-key", "--key-version", f"{unknown_uuid}.1"),
        ("disable-client", "--client-id", "nobody"),
        ("create-issuer", "--name", ""),
        ("create-issuer", "--name", "   "),
        ("create-verifier", "--name", "x" * 201),
        ("create-verifier", "--name", "two\nlines"),
    ]
    for args in bad_inputs:
        assert_one_line_error(*run_main(capsys, "admin", "--data-dir", data_dir, *args))
    missing = str(tmp_path / "no-instance")
    assert_one_line_error(*run_main(capsys, "admin", "--data-dir", missing, "list"))


def test_admin_error_exit_code_through_the_module(tmp_path: Path) -> None:
    done = cli("admin", "--data-dir", str(tmp_path / "nothing-here"), "list")
    assert_one_line_error(done.returncode, done.stdout, done.stderr)


# --- serve ---------------------------------------------------------------------------------


def test_serve_prints_where_it_listens_and_answers(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    assert cli("init", "--data-dir", str(data_dir)).returncode == 0
    with serving("--data-dir", str(data_dir)) as (server, url):
        health = HTTP.get(f"{url}/healthz")
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}
        assert HTTP.get(f"{url}/readyz").status_code == 200
        doc = HTTP.get(f"{url}/openapi.json").json()
        assert doc["servers"] == [{"url": url}]
    assert server.proc.returncode == 0, "".join(server.stderr)


def test_serve_refuses_without_an_instance_or_with_bad_options(tmp_path: Path) -> None:
    done = cli("serve", "--port", "0", "--data-dir", str(tmp_path / "x"))
    assert_one_line_error(done.returncode, done.stdout, done.stderr)
    workers = cli("serve", "--port", "0", "--workers", "2")
    assert_one_line_error(workers.returncode, workers.stdout, workers.stderr)


def test_serve_demo_prints_credentials_and_barcodes_that_verify() -> None:
    with serving("--demo") as (server, url):
        printed = "".join(server.stdout)
        demo = json.loads(printed[: printed.rindex("listening on")])["demo"]
        verifier = demo["verifier"]
        verifier_token = token(url, verifier["client_id"], verifier["client_secret"])
        issuer = demo["issuer"]
        token(url, issuer["client_id"], issuer["client_secret"])
        samples = demo["samples"]
        assert len(samples) >= 2
        assert any(s["revoked"] for s in samples)
        for sample in samples:
            assert sample["scan_url"].startswith(f"{url}/v/{sample['service_reference']}#2.")
            for text in (sample["payload"], sample["scan_url"]):
                reply = HTTP.post(
                    f"{url}/v1/verifications/payload",
                    json={"barcode": text},
                    headers={"Authorization": f"Bearer {verifier_token}"},
                )
                assert reply.status_code == 200, reply.text
                result = reply.json()
                assert result["verified"] is (not sample["revoked"])
                assert result["service_reference"] == sample["service_reference"]
                assert result["employee"]


def test_cli_changes_reach_a_running_server_at_once(live: LiveService) -> None:
    done = cli("admin", "--data-dir", str(live.data_dir), "create-verifier", "--name", "Late Desk")
    assert done.returncode == 0, done.stderr
    verifier = one_json_object(done.stdout)
    verifier_token = token(live.url, verifier["client_id"], verifier["client_secret"])
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    assert live.verify(sealed.payload, verifier_token).json()["verified"] is True

    done = cli("admin", "--data-dir", str(live.data_dir), "create-issuer", "--name", "Late Payroll")
    issuer = one_json_object(done.stdout)
    issuer_token = token(live.url, issuer["client_id"], issuer["client_secret"])
    theirs = sealed_record(issuer["encryption_key"], key_version=issuer["key_version"])
    assert live.post("/v1/registerNonPII", theirs.body, issuer_token).status_code == 201

    done = cli(
        "admin", "--data-dir", str(live.data_dir), "rotate-key", "--issuer-id", issuer["issuer_id"]
    )
    rotated = one_json_object(done.stdout)
    newer = sealed_record(rotated["encryption_key"], key_version=rotated["key_version"])
    assert live.post("/v1/registerNonPII", newer.body, issuer_token).status_code == 201
    done = cli(
        "admin",
        "--data-dir",
        str(live.data_dir),
        "retire-key",
        "--key-version",
        issuer["key_version"],
    )
    assert done.returncode == 0, done.stderr
    reply = live.verify(theirs.payload, verifier_token)
    assert reply.status_code == 410, reply.text
    assert live.verify(newer.payload, verifier_token).json()["verified"] is True
