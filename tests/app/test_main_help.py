"""`python -m app` explains itself (issue 36): `--help` lists every command with one line, a
mistyped command is named with the closest one, every option of every app command has help
text, and none sends the user to a file they do not have."""

from __future__ import annotations

import pytest

from app.__main__ import COMMANDS, _gui_parser, main
from app.commands.issue_run import _parser as issue_run_parser
from app.commands.receipt import parser as receipt_parser
from app.commands.run import verify_parser
from tests.commands import run_in_process
from tests.service.cli.test_help_texts import missing_help, naming_files

PARSERS = {
    "app": _gui_parser,
    "verify": verify_parser,
    "issue-run": issue_run_parser,
    "receipt": receipt_parser,
}


def test_help_lists_every_command_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run_in_process(main, "--help", capsys=capsys, monkeypatch=monkeypatch)
    assert done.returncode == 0
    listed = done.stdout.split("commands", 1)[1].splitlines()[1:]
    assert [line.split()[0] for line in listed if line.strip()] == [
        "verify",
        "issue-run",
        "receipt",
        "service",
    ]
    assert set(COMMANDS) == {"verify", "issue-run", "receipt", "service"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("verfy", "x"), "unknown command 'verfy'; did you mean verify?"),
        (("isue-run",), "did you mean issue-run?"),
        (("service", "sevre", "--port", "8090"), "'sevre'; did you mean serve?"),
        (("zzz",), "unknown command 'zzz' (choose from verify, issue-run, receipt, service)"),
    ],
)
def test_a_mistyped_command_is_named_with_the_closest_one(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    said: str,
) -> None:
    done = run_in_process(main, *argv, capsys=capsys, monkeypatch=monkeypatch)
    assert done.returncode == 2 and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and said in errors[0], done.stderr
    assert "unrecognized arguments" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_option_has_help_and_none_names_a_file(name: str) -> None:
    parser = PARSERS[name]()
    assert missing_help(parser) == []
    assert naming_files(parser) == []
