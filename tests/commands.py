"""Running the project's commands as an operator does: `python -m service ...` and
`python -m app ...` in a child process from the repository root, output captured as text.

One helper, so every CLI test starts the command the same way (the same interpreter, working
directory and capture) and differs only in what it passes and expects.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

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
