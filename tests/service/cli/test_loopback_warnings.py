"""Commands that print badges or links say so when their address is this computer's own
(issue 27, item 2): one `warning:` line from `serve`, `issue-run` and `pair-verifier`; none for
an address phones can reach. Also `serve --tls-cert/--tls-key` with a bad pair: one plain line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli.main import main
from service.hosting.network_address import is_loopback_url, loopback_warning
from testbed import web
from tests.app.issuer.test_payrun import good_row, write_csv
from tests.service.cli.test_cli import ROOT
from tests.service.conftest import make_instance
from tests.service.hosting.test_tls_serve import self_signed


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080", True),
        ("http://127.5.0.1", True),
        ("https://localhost:8443", True),
        ("http://[::1]:8080", True),
        ("http://0.0.0.0:8080", True),
        ("http://192.168.1.20:8080", False),
        ("https://verify.example.com", False),
        ("verify.example.com:8080", False),
    ],
)
def test_which_addresses_are_this_computer_only(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback
    assert (loopback_warning(url) is not None) is loopback


def _pair(data_dir: Path, client_id: str, url: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(
        [
            *("admin", "--data-dir", str(data_dir), "pair-verifier"),
            *("--client-id", client_id, "--public-url", url),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    return err


def test_pair_verifier_warns_once_for_a_loopback_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    _, _, verifier = make_instance(data_dir)
    err = _pair(data_dir, verifier["client_id"], "http://127.0.0.1:8080", capsys)
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "http://127.0.0.1:8080" in warnings[0]
    assert "phones" in warnings[0]
    assert warnings[0].endswith("with --public-url)")  # the option that fixes it (issue 36)
    err = _pair(data_dir, verifier["client_id"], "https://verify.example.test", capsys)
    assert "warning:" not in err


def test_serve_warns_once_when_badges_would_carry_a_loopback_address() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--demo", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the demo's JSON, then "listening on ..."
            if line.startswith("listening on "):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=15)  # waits, and closes the pipes
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "127.0.0.1" in warnings[0]
    assert "--public-url" in warnings[0]


def test_serve_starts_and_answers_when_its_log_cannot_be_written() -> None:
    """stderr on a full disk (/dev/full: every write is ENOSPC), as when the log file shares the
    data directory's filled disk: the warning is lost, the service is not (it used to exit 1,
    which a chaos soak's restart on a full disk found)."""
    with (
        open("/dev/full", "w") as full,
        subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--demo", "--port", "0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
        ) as proc,
    ):
        try:
            assert proc.stdout is not None
            url = next(
                (line.split()[-1] for line in proc.stdout if line.startswith("listening on ")),
                None,
            )
            assert url is not None, f"serve exited {proc.wait(timeout=15)} without listening"
            with web.client(timeout=10) as client:
                assert client.get(f"{url}/healthz").status_code == 200
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_serve_with_a_mismatched_certificate_is_one_plain_line(tmp_path: Path) -> None:
    cert, _ = self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, key = self_signed(other)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "service", "serve", "--demo", "--port", "0"),
            *("--tls-cert", str(cert), "--tls-key", str(key)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --tls-cert/--tls-key: the certificate and key could not be read as a matching "
        "PEM pair"
    ]


def test_issue_run_warns_once_for_loopback_badges(tmp_path: Path) -> None:
    source = write_csv(tmp_path / "run.csv", [good_row(1)])
    done = subprocess.run(
        [
            *(sys.executable, "-m", "app", "issue-run", "--demo", str(source)),
            *("--out", str(tmp_path / "out")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and warnings[0].startswith("issue-run: warning: http://127.0.0.1:")
    assert "--scan-base" in warnings[0]
