"""One plain line for every failure a person at a command line can cause (never a traceback).

`python -m service` (and the app's commands, which reuse this) turn an exception into a sentence
that says what is wrong and what to do. Anything unforeseen still gets one line, and its
traceback goes to a private log file whose path the line names, so support can see it without
the operator being shown a wall of internals.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from service.composition.instance import InstanceError
from service.composition.settings import SettingsError, read_settings
from service.domain.errors import MasterKeyMismatch, ServiceError
from service.files.private import private_dir
from service.storage.port import StoreUnavailable

ERROR_LOG_NAME = "payslip-verify-errors.log"


def log_dir() -> Path:
    """Where unexpected tracebacks go: PAYSLIP_LOG_DIR, else the user log directory (also when
    the settings cannot be read: this runs while reporting another failure)."""
    try:
        override = read_settings().log_dir
    except SettingsError:
        override = None
    if override:
        return override
    return Path(platformdirs.user_log_dir("payslip-verify", appauthor=False))


def operator_message(exc: BaseException, port: int | None = None, host: str | None = None) -> str:
    """The line to print for `exc`. Known conditions are explained; anything else is logged."""
    known = _known(exc, port, host)
    if known is not None:
        return known
    where = _write_traceback(exc)
    if where is None:
        return f"unexpected failure ({type(exc).__name__}); run again with PAYSLIP_LOG_LEVEL=DEBUG"
    return f"unexpected failure ({type(exc).__name__}); the details are in {where}"


def _known(exc: BaseException, port: int | None, host: str | None) -> str | None:
    if isinstance(exc, InstanceError | SettingsError):
        return str(exc)
    if isinstance(exc, ServiceError):
        return exc.detail
    if isinstance(exc, MasterKeyMismatch):
        return (
            "the master key does not open this store: the data directory (or PAYSLIP_MASTER_KEY) "
            "belongs to another instance; use the one the store was initialised with"
        )
    if isinstance(exc, StoreUnavailable):
        return f"the store cannot answer: {exc}"
    if isinstance(exc, OSError):
        return _os_message(exc, port, host)
    return None


def _os_message(exc: OSError, port: int | None, host: str | None) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use: stop the other server or choose another "
            "port (--port 0 picks a free one)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: it is not an address of this computer"
    if isinstance(exc, PermissionError):
        target = f" {exc.filename}" if exc.filename else ""
        return f"permission denied:{target} (check the owner and mode of the data directory)"
    if isinstance(exc, NotADirectoryError | FileExistsError | IsADirectoryError):
        return f"{exc.strerror}: {exc.filename} (the data directory path is not usable)"
    if exc.errno == errno.ENOSPC:
        return "the disk is full: free some space and try again"
    name = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or type(exc).__name__}{name}"


def _write_traceback(exc: BaseException) -> Path | None:
    try:
        folder = private_dir(log_dir())
        path = folder / ERROR_LOG_NAME
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(f"--- {datetime.now(UTC).isoformat()} ---\n")
            handle.write("".join(traceback.format_exception(exc)))
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)
        return path
    except OSError:
        return None


def tell(text: str) -> None:
    """A note for the operator on stderr (a warning, not a failure). Where stderr is a log file
    on a full disk (or a closed pipe) the note is lost, not the service: a server that could not
    print a warning must still start and answer verifications (reads never depend on writes)."""
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)
