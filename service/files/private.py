"""Owner-only folders and files for local secrets, whatever the process's umask.

A folder's mode from `mkdir` is masked by the umask, and an existing folder keeps whatever mode it
was made with (older versions made them 0755; under umask 000 they were 0777, so another local
user could swap `master.key`, the store or the desk's settings). Every folder that holds the
app's settings, an instance's data or a log is therefore made, and kept, 0700 here, and settings
files 0600; the mode is set with `chmod` after creation, so neither the umask nor an older folder
decides it. Only the leaf folder is ours: missing parents (`~/.config`) get the usual mode.

On Windows `chmod` only toggles read-only; there the user profile's ACLs keep these folders private.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "private_dir", "write_private_text"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` if missing and make it owner-only (an existing folder is tightened too).

    A folder this user does not own (a shared mount chosen as a data directory) cannot be
    chmodded; that is left as it is rather than stopping the app."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if os.name == "posix":
        with contextlib.suppress(PermissionError):
            os.chmod(path, PRIVATE_DIR_MODE)
    return path


def write_private_text(path: Path, text: str) -> None:
    """Replace `path` with `text`, mode 0600, atomically (a temporary file then a rename): a
    reader finds the old file or the new one, and the file is never readable by others, not even
    between its creation and a later chmod."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    try:
        if os.name == "posix":
            os.fchmod(fd, PRIVATE_FILE_MODE)  # an old .tmp keeps its mode through O_CREAT
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = -1
            handle.write(text)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    os.replace(tmp, path)
