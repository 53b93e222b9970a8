"""Writing output files atomically: see `app.files`, where it lives so that pay-run worker
processes can import it without the whole issuer library. Re-exported here for the library,
name for name (`app.files.__all__`)."""

from __future__ import annotations

from app import files as _files
from app.files import *  # noqa: F403

__all__ = list(_files.__all__)
