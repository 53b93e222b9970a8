"""Writing output files so that a crash never leaves a half-written badge, PDF or results file.

(Outside `app.issuer` so that pay-run worker processes can import it without the whole issuer
library, whose package imports its HTTP client and schemas.)

Every file is written to a temporary name in the same folder, flushed and fsynced, then renamed
over the final name (atomic on POSIX and on Windows NTFS via `os.replace`): the mechanics are
`service.files.durable`, shared with the service's store. A reader therefore sees either the
old file, or the complete new one. This module adds the app's policy: failures the user can fix
(a full disk, a read-only or missing folder) become `OutputError` with a plain message naming the
folder, never the data; a folder that cannot be fsynced (Windows) is no error.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from service.files import durable as _durable

__all__ = [
    "OutputError",
    "atomic_write_bytes",
    "atomic_writer",
    "check_writable",
    "explain",
    "fsync_dir",
    "unreadable",
    "write_new_file",
]


class OutputError(Exception):
    """An output file could not be written; the message is fit for a dialog or a CLI line."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code


def explain(exc: OSError, folder: Path) -> OutputError:
    """A plain message for an OS error while writing into `folder`."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        text = f"the disk holding {folder} is full; free some space and run again"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        text = f"no permission to write in {folder}; choose another output folder"
    elif exc.errno == errno.ENOENT:
        text = f"the folder {folder} does not exist"
    elif exc.errno == errno.ENOTDIR:
        text = f"{folder} is not a folder"
    else:
        text = f"cannot write in {folder} ({exc.strerror or type(exc).__name__})"
    return OutputError(exc.errno or 0, text)


def unreadable(path: Path, exc: OSError) -> str:
    """A plain message for an input file that cannot be opened or read: the pay-run file and
    the files a desk verifies say the same thing, naming the file and never its content."""
    if isinstance(exc, FileNotFoundError):
        return f"{path.name} does not exist"
    if isinstance(exc, IsADirectoryError):
        return f"{path.name} is a folder, not a file"
    if isinstance(exc, PermissionError):
        return f"{path.name} cannot be read: permission denied"
    return f"{path.name} cannot be read: {exc.strerror or 'I/O error'}"


def fsync_dir(folder: Path) -> None:
    """Make a rename durable (POSIX); a no-op where directories cannot be opened (Windows)."""
    _durable.fsync_dir(folder, strict=False)


@contextlib.contextmanager
def atomic_writer(path: Path, *, durable: bool = True) -> Iterator[IO[bytes]]:
    """Open a temporary sibling of `path`; on a clean exit it replaces `path`, else it vanishes.

    `durable` fsyncs the file before the rename (and the folder after), so after a power cut the
    final name holds the whole file or nothing.
    """
    try:
        with _durable.atomic_writer(path, sync=durable, strict=False) as handle:
            yield handle
    except OSError as exc:
        raise explain(exc, path.parent) from None


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to `path` via a temporary file and a rename."""
    with atomic_writer(path, durable=durable) as handle:
        handle.write(data)


def write_new_file(path: Path, data: bytes) -> None:
    """Write a small file atomically and fast: a temporary sibling named after this process
    (`.<name>.<pid>.tmp`, which `atomic_writer`'s clean-up pattern also matches), then a rename.
    No fsync: callers make a whole batch durable at once. About a fifth of `atomic_writer`'s
    cost (no random name, no Python file object), which shows when thousands of badges are
    written a second."""
    folder = path.parent
    tmp = folder / f".{path.name}.{os.getpid()}.tmp"
    try:
        _durable.write_file(tmp, [data], sync=False)
        _durable.replace_file(tmp, path, sync=False)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise explain(exc, folder) from None


def check_writable(folder: Path) -> None:
    """Create `folder` if needed and prove a file can be written there, before any work starts
    (so a pay run fails at once, not after registering the first batch)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise explain(exc, folder) from None
    if not folder.is_dir():
        raise OutputError(errno.ENOTDIR, f"{folder} is not a folder")
    atomic_write_bytes(folder / ".write-check", b"ok", durable=False)
    with contextlib.suppress(OSError):
        (folder / ".write-check").unlink()
