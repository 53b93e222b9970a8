"""Running the project's commands as an operator does: `python -m service ...` and
`python -m app ...` in a child process from the repository root, output captured as text.

One helper, so every CLI test starts the command the same way (the same interpreter, working
directory and capture) and differs only in what it passes and expects.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_module(
    module: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m <module> <args>`; `env` is the child's whole environment (None: this one's).
    A non-zero exit is returned, not raised: tests assert on it."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        check=False,
    )


def run_in_process(
    command: Callable[[list[str]], int],
    *args: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The same command's function in this process, answered as `run_module` answers: exit code,
    stdout and stderr. A process start costs about a second of CPU; each CLI module keeps one
    real process (`run_module`) for what only a process shows (its exit, its environment) and
    calls the function for the rest. `env`: variables set on top of this process's."""
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin or ""))
    capsys.readouterr()
    # The process's console: warnings and worse on stderr (app.__main__._setup_logging), so a
    # stray log line fails a test that expects one plain line there, as it would in a shell.
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    logging.getLogger().addHandler(console)
    try:
        code = command(list(args))
    except SystemExit as exit_:  # argparse's refusal of the arguments ends the process so
        code = _exit_status(exit_.code)
    finally:
        logging.getLogger().removeHandler(console)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([command.__name__, *args], code, out, err)


def _exit_status(code: object) -> int:
    """The status a process ends with on `SystemExit(code)`: None is 0, a number is itself,
    anything else is printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
