"""Every command line explains itself (issue 36): each option of `python -m service` has help
text, no help names a file a user does not have (a PROTOCOL section, a docs page), and a
mistyped subcommand is named, with the closest one, before anything else is blamed."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from service.cli.main import _parser, main
from tests.commands import run_in_process

FILES_A_USER_LACKS = ("PROTOCOL", "§", "docs/", ".md", "README")
"""What help text must not send a person to: the repository's own documents."""


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """`parser` and every subcommand's parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from parsers(child)


def missing_help(parser: argparse.ArgumentParser) -> list[str]:
    """`prog option` for each option or argument of `parser` (and below) without help text."""
    return [
        f"{each.prog} {'/'.join(action.option_strings) or action.dest}"
        for each in parsers(parser)
        for action in each._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and not action.help
    ]


def texts(parser: argparse.ArgumentParser) -> list[str]:
    """Every piece of help a user can see: descriptions, epilogs, subcommand and option help."""
    found: list[str] = []
    for each in parsers(parser):
        found += [each.description or "", each.epilog or "", each.format_help()]
    return found


def naming_files(parser: argparse.ArgumentParser) -> list[str]:
    return [
        line.strip()
        for text in texts(parser)
        for line in text.splitlines()
        if any(word in line for word in FILES_A_USER_LACKS)
    ]


def test_every_service_option_has_help_and_no_help_names_a_file() -> None:
    assert missing_help(_parser()) == []
    assert naming_files(_parser()) == []


def test_service_help_lists_every_command_with_a_line() -> None:
    shown = _parser().format_help()
    for command in ("init", "admin", "migrate", "migrate-store", "serve"):
        assert f"    {command}" in shown, shown
    serve = next(p for p in parsers(_parser()) if p.prog.endswith(" serve")).format_help()
    for option in ("--public-url", "--host", "--port", "--data-dir"):
        assert option in serve


@pytest.mark.parametrize(
    ("argv", "usage", "said"),
    [
        (("sevre", "--port", "8090"), "python -m service", "'sevre'; did you mean serve?"),
        (("admin", "--data-dir", "D", "lst"), "python -m service admin", "did you mean list?"),
        (("admin", "--data-dir=D", "craete-issuer"), "python -m service admin", "create-issuer?"),
        (("frobnicate",), "python -m service", "unknown command 'frobnicate' (choose from init"),
    ],
)
def test_a_mistyped_subcommand_is_named_with_the_closest_one(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    usage: str,
    said: str,
) -> None:
    done = run_in_process(main, *argv, capsys=capsys, monkeypatch=monkeypatch)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"usage: {usage} ")
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and said in errors[0], done.stderr
    assert "--port" not in errors[0]
