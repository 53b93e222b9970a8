"""Ctrl+C (SIGINT) in the terminal quits the GUI cleanly, as closing the window does (issue 36).

The real `python -m app --demo` runs (offscreen); once its log says the window is open, the test
sends SIGINT as a terminal's Ctrl+C does and the app must end by itself with exit 0 and no
traceback (it used to print "unhandled KeyboardInterrupt" from an event filter and stay open).
A locked kiosk ends the same way on SIGTERM (whoever can signal it can end it anyway).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.settings.desk import Settings
from testbed.waiting import wait_until

pytestmark = [pytest.mark.gui, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    logs = tmp_path / "logs"
    env = dict(os.environ)
    env.update(
        QT_QPA_PLATFORM="offscreen",
        PAYSLIP_CONFIG_DIR=str(tmp_path / "config"),
        PAYSLIP_NO_KEYRING="1",
        PAYSLIP_LOG_DIR=str(logs),
    )
    app = subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return app, logs / "app.log"


def _open(app: subprocess.Popen[str], log: Path) -> None:
    def opened() -> bool:
        assert app.poll() is None, "the app ended before its window opened"
        return log.exists() and "window open" in log.read_text()

    wait_until(opened, "the app's window to open", timeout=90)


@pytest.mark.parametrize(("mode", "sig"), [("desk", signal.SIGINT), ("kiosk", signal.SIGTERM)])
def test_a_signal_quits_the_gui_as_closing_it_does(
    tmp_path: Path, mode: str, sig: signal.Signals
) -> None:
    args = ["--demo"]
    if mode == "kiosk":
        settings = Settings(camera=str(tmp_path / "no-camera.avi"))
        settings.set_pin("2468")
        settings.save(tmp_path / "config")
        args.append("--kiosk")
    app, log = _start(tmp_path, *args)
    try:
        _open(app, log)
        app.send_signal(sig)
        _, err = app.communicate(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
            app.communicate()
    assert app.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
