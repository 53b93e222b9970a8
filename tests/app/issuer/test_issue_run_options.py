"""`python -m app issue-run` refusing to start or stopping (issue 21): each option mistake is one
line on stderr and exit code 2, checked in a fixed order before any service is started or
contacted; a service that cannot be reached stops the run with exit code 3.

`app.commands.issue_run.main` is split into option checks, connecting and running; these tests
pin every refusal, which one wins when several apply, and the stop. In-process: no service is
started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.commands.issue_run import main

RESOURCES = Path(__file__).resolve().parents[3] / "resources"


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding run.csv, combined.pdf and pdfs/, with no secrets in the environment."""
    monkeypatch.delenv("PAYSLIP_CLIENT_SECRET", raising=False)
    monkeypatch.delenv("PAYSLIP_ENCRYPTION_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.csv").write_text("schema\n", encoding="utf-8")
    (tmp_path / "combined.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "pdfs").mkdir()
    return tmp_path


REMOTE = ["--service-url", "http://127.0.0.1:9", "--client-id", "c", "--client-secret", "s"]
PIN_SHORT = ["--tls-fingerprint", "3F2A 9C41"]
NO_SERVICE = (
    "give --demo, or --service-url, --client-id, a client secret and an encryption key "
    "(options or PAYSLIP_CLIENT_SECRET / PAYSLIP_ENCRYPTION_KEY)"
)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run.csv", "--batch-size", "0"], "--out is required (the output folder)"),
        (
            ["run.csv", "--out", "out", "--mapping", "none.json", "--pdf-dir", "x", "--demo"],
            "none.json does not exist",
        ),
        (
            ["run.csv", "--out", "out", "--combined-pdf", "combined.pdf", "--pdf-dir", "pdfs"],
            "give either --pdf-dir or --combined-pdf, not both",
        ),
        (
            ["run.csv", "--out", "out", "--combined-pdf", "pdfs", "--batch-size", "0"],
            "--combined-pdf pdfs is not a file",
        ),
        (["missing.csv", "--out", "out", "--batch-size", "1001"], "--batch-size must be 1 to 1000"),
        (["missing.csv", "--out", "out", "--demo"], "missing.csv does not exist"),
        (["pdfs", "--out", "out", "--pdf-dir", "x"], "pdfs is a folder, not a pay-run file"),
        (
            ["run.csv", "--out", "out", "--pdf-dir", "run.csv", "--demo"],
            "--pdf-dir run.csv is not a folder",
        ),
        (["run.csv", "--out", "out"], NO_SERVICE),
        (["run.csv", "--out", "out", *REMOTE], NO_SERVICE),
        (
            ["run.csv", "--out", "out", *REMOTE, "--encryption-key", "c2hvcnQ"],
            "the encryption key is not 32 bytes of base64url text",
        ),
        (
            ["run.csv", "--out", "out", *REMOTE, "--encryption-key", "é" * 43],
            "the encryption key is not 32 bytes of base64url text",
        ),
        (
            ["run.csv", "--out", "out", *REMOTE, "--encryption-key", "A" * 43, *PIN_SHORT],
            "--tls-fingerprint is not a SHA-256 fingerprint (64 hex digits, as Admin shows it)",
        ),
    ],
)
def test_a_run_that_cannot_start_says_why_in_one_line(
    place: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"issue-run: {message}\n")
    assert not (place / "out").exists()


def test_a_run_that_loses_its_service_stops_with_exit_3_and_says_how_to_resume(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on the discard port: the run stops part way (exit 3), not exit 2."""
    (place / "run.csv").write_bytes((RESOURCES / "sample_payrun.csv").read_bytes())
    key = "A" * 43  # 32 bytes of base64url text
    argv = ["run.csv", "--out", "out", *REMOTE, "--encryption-key", key, "--quiet"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    warning, stopped = err.splitlines()
    assert out == ""
    assert warning.startswith("issue-run: warning: http://127.0.0.1:9 is this computer's own")
    assert stopped.startswith("issue-run: the service at http://127.0.0.1:9 refused the connect")
    assert stopped.endswith("run again with the same output folder to resume")
    assert (place / "out").is_dir()
