"""The chaos soak's faults that are not a process's own (issue 22): slowloris connections,
a small tmpfs for the TinyDB store and filling that disk up. Out of bench/chaos_soak.py to keep
it under the module size rule; restarts and kills are methods of bench/soak_processes.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def slowloris(url: str, count: int, seconds: float) -> None:
    host, port = url.split("//")[1].split(":")
    socks = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n")
            sock.setblocking(False)
            socks.append(sock)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.send(b"a")
        time.sleep(1)
    cut = 0
    for sock in socks:
        try:
            cut += sock.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        sock.close()
    print(f"  slowloris: {len(socks)} connections, {cut} cut by the server", flush=True)


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    mount = Path(tempfile.mkdtemp(prefix="soak-disk-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


def fill_disk(directory: Path, seconds: float) -> None:
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass  # ENOSPC: full to the last block
    finally:
        os.close(fd)
    time.sleep(seconds)
    filler.unlink()
    print(f"  disk full for {seconds:.0f} s, then freed", flush=True)
