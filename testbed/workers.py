"""Which process of a server answered a request, so a test can wait for every worker.

A request on a new connection goes to whichever worker accepts it, so asking a server N times
shows nothing about each of its N workers, and "every worker has looked at the store again"
(a signing-key rotation reaches each within REFRESH_SECONDS) used to be waited for by the wall
clock. The kernel knows who answered: the server side of an open connection is a socket in the
file table of the process that accepted it (/proc/net/tcp names its inode, /proc/PID/fd holds
it). The accepting processes are those holding the listening socket, less a gunicorn master
that only watches its workers. `wait_for_every_acceptor` asks on new connections (polling, with
a deadline) until each of them has given the answer a test waits for.
"""

from __future__ import annotations

import contextlib
import http.client
import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from testbed.waiting import wait_until

Ask = Callable[[http.client.HTTPConnection], bool]
"""One request on the given connection (read in full); True when the answer is the awaited one."""

_LISTEN = "0A"


def _sockets(port: int, *, listening: bool, peer_port: int | None = None) -> set[int]:
    """Inodes of IPv4 TCP sockets on local `port`: listening ones, or the one to `peer_port`."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
        if int(local.rsplit(":", 1)[1], 16) != port or not inode:
            continue
        if (listening and state == _LISTEN) or (
            not listening and int(remote.rsplit(":", 1)[1], 16) == peer_port
        ):
            found.add(inode)
    return found


def _holding(inodes: set[int], pids: Iterable[int]) -> set[int]:
    """The processes among `pids` with one of the sockets `inodes` in their file table."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders = set()
    for pid in pids:
        with contextlib.suppress(OSError), os.scandir(f"/proc/{pid}/fd") as fds:
            for fd in fds:  # OSError: the process is gone, or not ours to look at
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) in wanted:
                        holders.add(pid)
                        break
    return holders


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (comm)": state, then ppid


def accepting_processes(port: int) -> set[int]:
    """The processes that accept connections on local `port`: the holders of its listening
    socket whose parent holds it too (gunicorn's workers), or, when none has such a parent,
    the holders themselves (a single-process server)."""
    with os.scandir("/proc") as entries:
        every = [int(entry.name) for entry in entries if entry.name.isdigit()]
    holders = _holding(_sockets(port, listening=True), every)
    assert holders, f"nothing listens on port {port}"
    workers = {pid for pid in holders if _parent(pid) in holders}
    return workers or holders


def wait_for_every_acceptor(url: str, ask: Ask, what: str, timeout: float = 60.0) -> None:
    """Ask `ask` on new connections until every accepting process of the server at `url` has
    answered it with True; an AssertionError naming `what` if not all have within `timeout`.

    Each connection first has one /healthz answered on it (kept alive), which tells which
    process holds it before `ask` sends its own request on the same connection. Which worker
    accepts a connection is the kernel's choice and can favour some for a while (one in 15 on
    an idle 2-core machine), hence the long deadline and the short pause between tries."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    acceptors = accepting_processes(port)
    seen: set[int] = set()
    held_by: Counter[int] = Counter()

    def one_more() -> bool:
        conn = http.client.HTTPConnection(host, port, timeout=10)
        try:
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            if conn.sock is None:  # not kept alive after all: `ask` would go elsewhere
                return False
            local_port = conn.sock.getsockname()[1]
            holder = _holding(_sockets(port, listening=False, peer_port=local_port), acceptors)
            held_by.update(holder)
            if holder - seen and ask(conn):  # same connection, so answered by the same process
                seen.update(holder)
        finally:
            conn.close()
        return seen >= acceptors

    try:
        wait_until(one_more, what, timeout, interval=0.01)
    except AssertionError as late:
        raise AssertionError(
            f"{what}: answered so by {sorted(seen)} of the processes {sorted(acceptors)}"
            f" (connections held: {dict(held_by)})"
        ) from late
