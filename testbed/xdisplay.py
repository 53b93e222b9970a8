"""A real X display with a real window manager, for tests of what a desktop does to the app.

Offscreen Qt has no window manager: nothing there presses Super+D, minimises from a task bar or
unmaps a window, and a USB scanner's keys never pass through X. This starts Xvfb (its display
number chosen by Xvfb itself, ``-displayfd``) with openbox, whose default key bindings include
Super+D ("show desktop"), and offers xdotool and xwininfo against it. Debian packages: xvfb,
openbox, xdotool, x11-utils (scripts/bootstrap --test installs them); without them the tests
skip, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from testbed.cluster import unavailable
from testbed.waiting import wait_until

TOOLS = ("Xvfb", "openbox", "xdotool", "xwininfo")


@dataclass(frozen=True)
class XDisplay:
    """``DISPLAY`` of a running Xvfb with openbox managing its windows."""

    name: str

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for a program on this display (Qt's xcb platform, not offscreen)."""
        env = dict(os.environ if base is None else base)
        env["DISPLAY"] = self.name
        env.pop("QT_QPA_PLATFORM", None)
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), env=self.env(), capture_output=True, text=True, timeout=20, check=False
        )

    def xdotool(self, *args: str) -> str:
        done = self.run("xdotool", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def windows(self, title: str) -> list[str]:
        """Ids of the mapped-or-not top-level windows whose title is ``title``."""
        done = self.run("xdotool", "search", "--name", f"^{title}$")
        return done.stdout.split()

    def viewable(self, window: str) -> bool:
        """Is ``window`` mapped and on screen (xwininfo's "IsViewable")?"""
        done = self.run("xwininfo", "-id", window)
        return "Map State: IsViewable" in done.stdout

    def wait_viewable_window(self, title: str, timeout: float = 60) -> str:
        """The id of the viewable window titled ``title``, once there is one."""

        def found() -> str | None:
            return next((w for w in self.windows(title) if self.viewable(w)), None)

        return wait_until(found, f"a viewable window titled {title!r}", timeout=timeout)


def require_tools() -> None:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        unavailable(f"no X test tools: {', '.join(missing)} (apt-get install xvfb openbox ...)")


@contextmanager
def x_display(size: tuple[int, int] = (1366, 768)) -> Iterator[XDisplay]:
    """Xvfb at ``size`` with openbox, stopped (both) at the end."""
    require_tools()
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        [
            *("Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-noreset"),
            *("-screen", "0", f"{size[0]}x{size[1]}x24"),
        ],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    procs: list[subprocess.Popen[bytes]] = [xvfb]
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # Xvfb writes it once it accepts clients
        assert number, "Xvfb did not start"
        display = XDisplay(f":{number}")
        manager = subprocess.Popen(
            ["openbox", "--sm-disable"],
            env=display.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(manager)
        wait_until(
            lambda: "_NET_SUPPORTING_WM_CHECK(WINDOW)" in display.run("xprop", "-root").stdout,
            "openbox to manage the display",
            timeout=20,
        )
        yield display
    finally:
        stop(reversed(procs))


def stop(procs: Sequence[subprocess.Popen[bytes]] | Iterator[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
