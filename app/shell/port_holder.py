"""Which program holds a TCP port, and the error that says so when the office port is taken.

The office service keeps one port for life because badges and other desks carry it (issue 35):
when another program holds it at a start, the service must not move silently, and the screens
must say which program is in the way so someone can stop it. On Linux the holder is found from
/proc/net/tcp{,6} (the listening socket's inode) and /proc/<pid>/fd (who has that socket open);
a process of another user, or another system, cannot be seen, and the words then say "another
program". No dependency (psutil) is needed for this one lookup.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["PortTaken", "port_holder"]

PROC = Path("/proc")
_HELD_STATES = {"0A", "07"}
"""LISTEN, and CLOSE (bound but not listening yet): both keep the port from being bound."""


def _socket_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            lines = (proc / "net" / table).read_text("ascii").splitlines()[1:]
            for line in lines:
                parts = line.split()
                if len(parts) < 10:
                    continue
                local, state, inode = parts[1], parts[3], parts[9]
                if (
                    state in _HELD_STATES
                    and inode != "0"
                    and int(local.rsplit(":", 1)[1], 16) == port
                ):
                    inodes.add(inode)
    return inodes


def _program(pid: str, proc: Path) -> str:
    name = ""
    with contextlib.suppress(OSError):
        name = (proc / pid / "comm").read_text("utf-8", "replace").strip()
    return f"{name or 'a program'} (process {pid})"


def port_holder(port: int, proc: Path = PROC) -> str | None:
    """The program holding `port` in words ("nginx (process 812)"), or None when it cannot be
    seen (another user's process, no /proc)."""
    inodes = _socket_inodes(port, proc)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                for fd in (entry / "fd").iterdir():
                    with contextlib.suppress(OSError):
                        if os.readlink(fd) in wanted:
                            return _program(entry.name, proc)
    return None


class PortTaken(OSError):
    """The saved port of this computer's service is held by another program. `words` is the
    sentence for a screen; the service was not moved and nothing was saved."""

    def __init__(self, port: int, address: str, holder: str | None) -> None:
        super().__init__(f"port {port} is in use by {holder or 'another program'}")
        self.port = port
        self.address = address
        """The address other desks and phones use (the office address, or the kept one)."""
        self.holder = holder

    @property
    def words(self) -> str:
        who = self.holder or "another program"
        return (
            f"The office service is not running: its port {self.port} is in use by {who}. "
            f"Other desks and phones cannot reach {self.address} until that program stops "
            "or this service is given another port."
        )
