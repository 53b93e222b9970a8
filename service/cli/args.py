"""Command-line mistakes told so a person can act on them (issue 26 item 7).

argparse alone blames the wrong thing: an unknown option of a subcommand is reported with the
top-level usage (`serve --prot 8083`), and a mistyped option before a subcommand's own
subcommand makes its value look like the subcommand (`admin --data-dri D list`: "invalid
choice: 'D'"). Here every unknown option is found before parsing, named with the closest known
one, and reported with the usage of the subcommand it was given to.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence

from service.storage.port import Store


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for action in parser._actions for s in action.option_strings]


def _chosen(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The deepest subcommand named in `argv` (`serve`, `admin list`), else `parser`."""
    current = parser
    for token in argv:
        if token == "--":
            break
        children = _subparsers(current)
        if token in children:
            current = children[token]
    return current


def _known(option: str, parser: argparse.ArgumentParser) -> bool:
    """`option` is one of the parser's, or a prefix that argparse expands to exactly one."""
    options = _options(parser)
    return option in options or len([o for o in options if o.startswith(option)]) == 1


def unknown_option_message(option: str, parser: argparse.ArgumentParser) -> str:
    close = difflib.get_close_matches(option, _options(parser), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown option {option}{hint}"


def _takes_value(option: str, parsers: Sequence[argparse.ArgumentParser]) -> bool:
    """`option` (as typed, perhaps abbreviated) is one of these parsers' options with a value."""
    for parser in parsers:
        for action in parser._actions:
            names = action.option_strings
            if option in names or any(name.startswith(option) for name in names):
                return action.nargs != 0
    return False


def unknown_command(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[argparse.ArgumentParser, str] | None:
    """(the parser, the word) where `argv` names a subcommand its parser does not have (`sevre`),
    else None. Without this check argparse blamed whatever option came next (`--port`)."""
    path = [parser]
    skip_value = False
    for token in argv:
        if token == "--":
            return None
        if skip_value:
            skip_value = False
            continue
        if token.startswith("-"):
            option = token.split("=", 1)[0]
            if option.startswith("--") and not any(_known(option, p) for p in path):
                return None  # an unknown option comes first: `parse_cli` names it
            skip_value = "=" not in token and _takes_value(option, path)
            continue
        children = _subparsers(path[-1])
        if not children:
            return None  # a subcommand's own positional arguments
        if token not in children:
            return path[-1], token
        path.append(children[token])
    return None


def unknown_command_message(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown command {word!r}{hint} (choose from {', '.join(choices)})"


def parse_cli(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, with unknown options reported by the subcommand they were given
    to (its usage, the option, the closest known one), never as another argument's value, and a
    mistyped subcommand named as such, with the closest one."""
    argv = list(argv)
    mistyped = unknown_command(parser, argv)
    if mistyped is not None:
        where, word = mistyped
        where.error(unknown_command_message(word, list(_subparsers(where))))
    chosen = _chosen(parser, argv)
    # Options of every parser on the way down may be given (`--data-dir` before `list`).
    path = [parser]
    for token in argv:
        children = _subparsers(path[-1])
        if token in children:
            path.append(children[token])
    for token in argv:
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        option = token.split("=", 1)[0]
        if not any(_known(option, p) for p in path):
            chosen.error(unknown_option_message(option, chosen))
    args, extras = parser.parse_known_args(argv)
    if extras:
        chosen.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def duplicate_name_refusal(store: Store, kind: str, name: str) -> str | None:
    """The refusal of a second issuer or verifier of the same name (as the GUI asks first), else
    None. Two front desks named alike cannot be told apart in `list` or when disabling one."""
    existing = store.list_issuers() if kind == "issuer" else store.list_verifiers()
    if any(e.name.casefold() == name.strip().casefold() for e in existing):
        article = "an" if kind == "issuer" else "a"
        return (
            f"{article} {kind} named {name!r} already exists; add --allow-duplicate-name to "
            "create another one"
        )
    return None
