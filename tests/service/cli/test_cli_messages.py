"""Command-line mistakes of issue 26 item 7, each told in one plain line that names the flag
to type next (argparse mistakes also show the usage of the subcommand they were made in)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from service.cli.main import main
from tests.commands import run_module


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exit_:  # argparse
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error: " in line]
    assert len(errors) == 1, err
    return errors[0]


def test_no_master_key_hint_names_the_data_dir_and_works_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "my data"
    code, out, err = _run(capsys, "admin", "--data-dir", str(data_dir), "list")
    assert code != 0 and out == ""
    line = _one_error_line(err)
    assert err.strip() == line
    hint = line.split("run `", 1)[1].split("`", 1)[0]
    assert f"--data-dir {shlex.quote(str(data_dir))}" in hint
    words = shlex.split(hint)
    assert words[:3] == ["python", "-m", "service"]
    assert _run(capsys, *words[3:])[0] == 0  # following the hint initialises that folder
    assert _run(capsys, "admin", "--data-dir", str(data_dir), "list")[0] == 0


def test_a_mistyped_option_before_the_action_is_named_not_its_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, "admin", "--data-dri", str(tmp_path), "list")
    assert code == 2 and out == ""
    line = _one_error_line(err)
    assert "--data-dri" in line and "did you mean --data-dir?" in line
    assert "invalid choice" not in err and str(tmp_path) not in line
    assert err.startswith("usage: python -m service admin")


def test_data_dir_works_before_or_after_an_admin_action(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data_dir = str(tmp_path / "d")
    assert _run(capsys, "init", "--data-dir", data_dir)[0] == 0
    code, _, err = _run(capsys, "admin", "create-issuer", "--name", "Acme", "--data-dir", data_dir)
    assert code == 0, err
    code, out, err = _run(capsys, "admin", "--data-dir", data_dir, "list")
    assert code == 0, err
    assert "Acme" in out


def test_a_mistyped_serve_option_shows_serves_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "serve", "--prot", "8083")
    assert code == 2 and out == ""
    assert err.startswith("usage: python -m service serve ")
    line = _one_error_line(err)
    assert line.startswith("python -m service serve: error: ")
    assert "--prot" in line and "did you mean --port?" in line


def test_a_duplicate_client_name_asks_for_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data_dir = str(tmp_path / "d")
    assert _run(capsys, "init", "--data-dir", data_dir)[0] == 0
    create = ("admin", "--data-dir", data_dir, "create-verifier", "--name", "Front desk")
    assert _run(capsys, *create)[0] == 0
    code, out, err = _run(
        capsys, "admin", "--data-dir", data_dir, "create-verifier", "--name", "front DESK"
    )
    assert code != 0 and out == ""
    line = _one_error_line(err)
    assert err.strip() == line
    assert "--allow-duplicate-name" in line and "front DESK" in line
    assert _run(capsys, *create, "--allow-duplicate-name")[0] == 0
    _, listed, _ = _run(capsys, "admin", "--data-dir", data_dir, "list")
    names = [v["name"] for v in json.loads(listed)["verifiers"]]
    assert names == ["Front desk", "Front desk"]


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_issue_run_names_the_path_it_was_given(tmp_path: Path, kind: str) -> None:
    given = tmp_path / "runs" / "november.csv"
    if kind == "folder":
        given.mkdir(parents=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = run_module(
        "app", "issue-run", str(given), "--out", str(tmp_path / "out"), "--demo", env=env
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(given) in lines[0]
