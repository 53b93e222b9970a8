"""`python -m app issue-run` refusing to start (issue 21): each option mistake is one line on
stderr and exit code 2, checked in a fixed order before any service is started or contacted.

`app.issuer.cli.main` is split into option checks, connecting and running; this table pins every
refusal and which one wins when several apply. Runs in-process: nothing here starts a service.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.issuer.cli import main


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
    ],
)
def test_a_run_that_cannot_start_says_why_in_one_line(
    place: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"issue-run: {message}\n")
    assert not (place / "out").exists()
