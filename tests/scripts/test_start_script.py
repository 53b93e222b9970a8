"""`scripts/start` installs only when needed and then starts without the network.

The real script runs in a copy of the project layout whose `scripts/bootstrap` (the installer:
apt-get and pip, which need the network) is replaced by one that records each run, and whose
`.venv/bin/python` records how the app was started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RECORDING_BOOTSTRAP = """#!/usr/bin/env bash
set -eu
echo installed >> bootstrap.log
mkdir -p .venv/bin
printf '#!/usr/bin/env bash\\necho "$@" >> started.log\\n' > .venv/bin/python
chmod +x .venv/bin/python
"""


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "start", project / "scripts" / "start")
    (project / "scripts" / "bootstrap").write_text(RECORDING_BOOTSTRAP, "utf-8")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n', "utf-8")
    return project


def _start(project: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PAYSLIP_REINSTALL"}
    subprocess.run(
        ["bash", str(project / "scripts" / "start"), *args],
        check=True,
        env=env,
        timeout=60,
        cwd=project,
    )


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


def test_start_installs_on_first_run_and_when_pyproject_changes_only(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _start(project)
    assert _lines(project / "bootstrap.log") == ["installed"]
    _start(project, "--kiosk")
    _start(project, "--service")
    assert _lines(project / "bootstrap.log") == ["installed"]  # no reinstall, no network
    assert _lines(project / "started.log") == [
        "-m app --demo",
        "-m app --demo --kiosk",
        "-m service serve --demo --port 8080",
    ]
    with (project / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write('dependencies = ["something==1.0"]\n')
    _start(project)
    assert _lines(project / "bootstrap.log") == ["installed", "installed"]
    _start(project)
    assert len(_lines(project / "bootstrap.log")) == 2


def test_a_deleted_venv_is_reinstalled(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _start(project)
    shutil.rmtree(project / ".venv")
    _start(project)
    assert _lines(project / "bootstrap.log") == ["installed", "installed"]


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PAYSLIP_REINSTALL"}
    return subprocess.run(
        ["bash", str(project / "scripts" / "start"), *args],
        env=env,
        timeout=60,
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_mistyped_option_is_named_by_scripts_start_itself(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = _run(project, "--servcie")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "scripts/start: unknown option '--servcie' (did you mean --service?)"
    assert lines[1].startswith("usage: scripts/start")
    assert "python -m app" not in done.stderr and "Traceback" not in done.stderr
    assert _lines(project / "bootstrap.log") == []  # nothing installed for a typo
    assert _lines(project / "started.log") == []


def test_each_slow_step_is_announced_first(tmp_path: Path) -> None:
    project = _project(tmp_path)
    first = _run(project, "--service")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "installing what Payslip Verify needs to run (first run only, or after pyproject.toml "
        "changed) ...",
        "starting the demo service (temporary: new credentials at every start) ...",
    ]
    again = _run(project)
    assert again.stdout.splitlines() == ["starting the app in demo mode ..."]
