"""Print the README's table of `PAYSLIP_*` variables, made from the settings model.

    python scripts/settings_table.py           # print the table
    python scripts/settings_table.py --write   # put it into README.md between the markers
    python scripts/settings_table.py --check   # exit 1 when README.md's table is not the model's

The model (service/composition/settings.py) is the one place a variable is defined; the README only shows
it, so a variable added there reaches the README by `--write` and tests/service/composition/test_settings.py
fails until it does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START = "<!-- settings-table:start -->"
END = "<!-- settings-table:end -->"


def readme_table(text: str) -> str:
    """What stands between the markers (without them), or a ValueError saying they are missing."""
    _, start, rest = text.partition(START)
    body, end, _ = rest.partition(END)
    if not start or not end:
        raise ValueError(f"README.md has no {START} ... {END} block")
    return body.strip("\n") + "\n"


def with_table(text: str, table: str) -> str:
    readme_table(text)  # the markers must be there
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from service.composition.settings import settings_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="update README.md")
    mode.add_argument("--check", action="store_true", help="fail when README.md differs")
    args = parser.parse_args(argv)
    table = settings_table()
    if not (args.write or args.check):
        sys.stdout.write(table)
        return 0
    text = README.read_text("utf-8")
    try:
        current = readme_table(text)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if current != table:
            print(
                "error: README.md's settings table differs from service/composition/settings.py; "
                "run python scripts/settings_table.py --write",
                file=sys.stderr,
            )
            return 1
        return 0
    README.write_text(with_table(text, table), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
