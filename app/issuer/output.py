"""Writing output files atomically: see `app.files`, where it lives so that pay-run worker
processes can import it without the whole issuer library. Re-exported here for the library."""

from __future__ import annotations

from app.files import (
    OutputError,
    atomic_write_bytes,
    atomic_writer,
    check_writable,
    explain,
    fsync_dir,
    write_new_file,
)

__all__ = [
    "OutputError",
    "atomic_write_bytes",
    "atomic_writer",
    "check_writable",
    "explain",
    "fsync_dir",
    "write_new_file",
]
