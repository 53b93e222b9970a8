"""Rows of the PostgreSQL schema to and from the port's dataclasses.

Column lists are spelled out in every statement (no string building), so every query is a literal
that a reviewer and ruff's injection check can read as is.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import orjson
from psycopg.types.json import Jsonb

from service.protocol.vocabulary import KeyState, RecordStatus
from service.storage.port import Client, KeyVersion, Record

RECORD_INSERT: Final = (
    'INSERT INTO records (service_reference, issuer_id, "schema", issued_at, payslip_non_pii, '
    "iv, tag, key_version, fingerprint, registered_at, status, revoked_at, revoke_reason) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def record_params(record: Record) -> tuple[Any, ...]:
    """The values of `RECORD_INSERT`, in its column order."""
    return _record_values(record, Jsonb(record.payslip_non_pii))


RECORD_COPY: Final = (
    'COPY records (service_reference, issuer_id, "schema", issued_at, payslip_non_pii, '
    "iv, tag, key_version, fingerprint, registered_at, status, revoked_at, revoke_reason) "
    "FROM STDIN"
)


def _json_text(value: Any) -> str:
    """JSON text for a jsonb column. orjson: the stdlib encoder was a tenth of a batch's
    insert; values it cannot encode (integers beyond 64 bits) fall back to the stdlib."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, ensure_ascii=False, allow_nan=False)


def record_copy_values(record: Record) -> tuple[Any, ...]:
    """One row of `RECORD_COPY`: as `record_params`, the JSON column as text."""
    return _record_values(record, _json_text(record.payslip_non_pii))


def _record_values(record: Record, non_pii: Any) -> tuple[Any, ...]:
    """A record's values in the column order of `RECORD_INSERT` and `RECORD_COPY`, with
    `non_pii` (the payslip_non_pii column, as the statement wants it) in its place."""
    return (
        record.service_reference,
        record.issuer_id,
        record.schema,
        record.issued_at,
        non_pii,
        record.iv,
        record.tag,
        record.key_version,
        record.fingerprint,
        record.registered_at,
        record.status,
        record.revoked_at,
        record.revoke_reason,
    )


_Row = TypeVar("_Row", Record, KeyVersion, Client)
_COLUMNS: Final[dict[type[Any], tuple[str, ...]]] = {
    kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in (Record, KeyVersion, Client)
}


def _from_row(kind: type[_Row], row: Mapping[str, Any]) -> _Row:
    """The port's dataclasses name their fields as the schema names its columns, so a row (or
    a JSON object built from one with `to_jsonb`) maps onto one field by field."""
    return kind(**{name: row[name] for name in _COLUMNS[kind]})


def record_from_row(row: Mapping[str, Any]) -> Record:
    """A record with its status as the enum (the column holds the word)."""
    values = {name: row[name] for name in _COLUMNS[Record]}
    values["status"] = RecordStatus(values["status"])
    return Record(**values)


def key_from_row(row: Mapping[str, Any]) -> KeyVersion:
    """A key with its state as the enum (the column holds the word)."""
    values = {name: row[name] for name in _COLUMNS[KeyVersion]}
    values["state"] = KeyState(values["state"])
    return KeyVersion(**values)


def client_from_row(row: Mapping[str, Any]) -> Client:
    return _from_row(Client, row)
