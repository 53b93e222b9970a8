"""Remembering a confirmed mapping for the next export with the same headers.

Payroll systems export the same columns every pay run, so once a clerk has confirmed which
header feeds which field, next fortnight's file should go straight to the preview. Mappings are
kept in the desk's settings (`settings.json`, under `export_mappings`), keyed by a hash of the
export's set of headers (trimmed, case-folded, order ignored). A mapping holds header names and
field names only: never a cell, so no personal data reaches the settings file.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from typing import Any

from app.issuer.export.mapping import ExportMapping, MappingError, norm_header
from app.settings.desk import Settings

__all__ = ["SETTINGS_KEY", "header_key", "remember_mapping", "remembered_mapping"]

SETTINGS_KEY = "export_mappings"
_KEEP = 50  # payroll systems per desk are few; old entries go first


def header_key(headers: Iterable[object]) -> str:
    names = sorted({norm_header(h) for h in headers} - {""})
    return hashlib.sha256("\x1f".join(names).encode()).hexdigest()[:32]


def remembered_mapping(settings: Settings, headers: Iterable[object]) -> ExportMapping | None:
    """The mapping last confirmed for this set of headers (None: none, or no longer valid)."""
    store = settings.extra.get(SETTINGS_KEY) if settings.extra else None
    data = store.get(header_key(headers)) if isinstance(store, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        return ExportMapping.from_json(data)
    except MappingError:
        return None


def remember_mapping(settings: Settings, headers: Iterable[object], mapping: ExportMapping) -> None:
    store = settings.extra.get(SETTINGS_KEY)
    if not isinstance(store, dict):
        store = settings.extra[SETTINGS_KEY] = {}
    key = header_key(headers)
    data: dict[str, Any] = mapping.to_json()
    if store.get(key) == data:
        return
    store.pop(key, None)
    store[key] = data
    while len(store) > _KEEP:
        store.pop(next(iter(store)))
    with contextlib.suppress(OSError):  # not remembering is no reason to stop a pay run
        settings.save()
