"""Durable file writes, defined once for the service and the app: a file is written under a
temporary name in its own folder, fsynced, renamed over the final name (atomic on POSIX, and on
Windows via `os.replace`), and the folder is fsynced so the rename itself survives a power cut.
A reader, or the next start after a crash, therefore finds the old file or the complete new one,
never a mix.

Users: the TinyDB store's snapshot and journal files (service/storage/journal.py,
tinydb_compaction.py), the pay run's journal (app/issuer/journal.py) and the pay run's outputs
(app/output/files.py). Only plain files and `os` calls live here, no policy: which errors a caller
reports how, and how it names and cleans up temporary files, stay with the caller. It sits in
`service.protocol` because that is the package both the service and the app may import
(pyproject.toml, [tool.importlinter]).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

__all__ = [
    "FILE_MODE",
    "atomic_writer",
    "fsync_dir",
    "replace_file",
    "write_all",
    "write_file",
]

FILE_MODE = 0o600
"""New files are readable by their owner only: the store holds wrapped keys and secret HMACs,
the pay run's journal its key and ciphertexts."""


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (`os.write` may write fewer than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(folder: Path, *, strict: bool = True) -> None:
    """Make a creation, rename or deletion in `folder` durable (the directory entry itself).

    `strict=False` is best effort: where a directory cannot be opened or fsynced (Windows, some
    network filesystems) nothing happens, for callers whose output stays correct without it.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        if strict:
            raise
        return
    try:
        os.fsync(fd)
    except OSError:
        if strict:
            raise
    finally:
        os.close(fd)


def write_file(
    path: Path,
    chunks: Iterable[bytes],
    *,
    mode: int = FILE_MODE,
    sync: bool = True,
    exclusive: bool = False,
) -> None:
    """Write a new file completely (created, or truncated; with `exclusive` it must not exist)
    and, with `sync`, fsync it. On any failure, the chunks' iterator's included, the partial
    file is removed. To replace a file atomically, write a temporary sibling with this and put
    it in place with `replace_file`."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, mode)
    try:
        for chunk in chunks:
            write_all(fd, chunk)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def replace_file(tmp: Path, path: Path, *, sync: bool = True, strict: bool = True) -> None:
    """Atomically put a fully written (and, for durability, fsynced) file in place and, with
    `sync`, make the rename durable (`strict` as for `fsync_dir`)."""
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent, strict=strict)


@contextlib.contextmanager
def atomic_writer(path: Path, *, sync: bool = True, strict: bool = True) -> Iterator[IO[bytes]]:
    """A binary file to write `path`'s new content into; on a clean exit it replaces `path`,
    on an exception (the caller's or a failed write) it vanishes and `path` is untouched.

    The temporary file is `.<name>.<random>.tmp` in the same folder (so the rename is atomic and
    a caller can recognise leftovers of a killed process). `sync` fsyncs the file before the
    rename and the folder after it (`strict` as for `fsync_dir`). OSErrors propagate.
    """
    folder = path.parent
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync:
        fsync_dir(folder, strict=strict)
