"""Reading a pay run given as JSON: an array of objects, or JSON Lines (one object a line).

An array is decoded one item at a time from a buffered stream (`json_array_items`), so a
50,000-row file is never held in memory and a progress bar can count its items up front; a
syntax error ends the file there, because nothing after it can be placed. Each object becomes a
`RowInput`, the neutral shape `rows.check_row` checks, with every reason it cannot be read.
The layout is described in `app.issuer.run.source` and docs/issuer.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TextIO

from app.issuer.run.rows import META_COLUMNS, PayrunFileError, RowInput

__all__ = ["json_array_items", "json_rows", "jsonl_rows"]

_JSON_KEYS = frozenset({*META_COLUMNS, "payslip_non_pii", "pii"})
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")
"""What may still follow a number's decoded part within it, when a read cut the number."""


def _json_object_row(number: int, item: Any) -> RowInput:
    """One JSON object in the neutral shape: meta values must be text (a whole page number is
    taken as its digits), PII fields text, and `payslip_non_pii` kept with its wire types for
    the schema to judge."""
    row = RowInput(number, {}, {}, None)
    if not isinstance(item, dict):
        row.reasons.append("row: expected a JSON object")
        return row
    for key in sorted(set(item) - _JSON_KEYS):
        row.reasons.append(f"{key}: unknown key")
    for key in META_COLUMNS:
        value = item.get(key)
        if value is None:
            continue
        if key == "pdf_page" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            row.reasons.append(f"{key}: expected text")
            continue
        row.meta[key] = value
    pii = item.get("pii", {})
    if not isinstance(pii, dict):
        row.reasons.append("pii: expected an object of text fields")
    else:
        for key, value in pii.items():
            if key == "format":
                row.pii_format = value if isinstance(value, str) else None
            elif isinstance(value, str):
                row.pii[key] = value
            else:
                row.reasons.append(f"pii.{key}: expected text")
    row.non_pii = item.get("payslip_non_pii")
    if row.non_pii is None:
        row.non_pii = {}
    if row.meta.get("pii_format") and row.pii_format is None:
        row.pii_format = row.meta["pii_format"]
    return row


class _JsonStream:
    """A text stream read a chunk at a time into a buffer that JSON values are decoded from,
    so the file is never held at once and a value cut by a chunk's end is read on."""

    def __init__(self, handle: TextIO, chunk: int) -> None:
        self.handle = handle
        self.chunk = chunk
        self.buffer = ""
        self.eof = False
        self.decoder = json.JSONDecoder()

    def fill(self) -> bool:
        """Read one more chunk; False at the end of the stream."""
        if self.eof:
            return False
        data = self.handle.read(self.chunk)
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def skip_ws(self) -> None:
        """Drop white space, reading on until something else (or the end) comes."""
        while True:
            self.buffer = self.buffer.lstrip()
            if self.buffer or not self.fill():
                return

    def take(self, token: str) -> bool:
        """Consume `token` when the buffer starts with it."""
        if not self.buffer.startswith(token):
            return False
        self.buffer = self.buffer[len(token) :]
        return True

    def value(self) -> tuple[Any, bool]:
        """The next JSON value and True; (None, False) when the text is not JSON.

        A number followed by nothing but what could still continue it (digits, `.`, `e`, a
        sign) up to the buffer's end is read on: a read may have cut it anywhere, `12.` then
        `5` included (which the decoder would take as 12, leaving `.5` to fail)."""
        while True:
            try:
                item, end = self.decoder.raw_decode(self.buffer)
            except json.JSONDecodeError:
                if self.fill():
                    continue
                return None, False
            if (
                isinstance(item, int | float)
                and not self.eof
                and _NUMBER_TAIL.fullmatch(self.buffer, end)
            ):
                self.fill()  # the number may continue in the next chunk
                continue
            self.buffer = self.buffer[end:]
            return item, True


def json_array_items(handle: TextIO, chunk: int = 1 << 16) -> Iterator[tuple[Any, bool]]:
    """Items of a top-level JSON array, decoded one at a time from a buffered stream.

    Yields (item, ok); a syntax error ends the file (the position after it is unknowable).
    """
    stream = _JsonStream(handle, chunk)
    stream.skip_ws()
    if not stream.take("["):
        raise PayrunFileError("a JSON pay run must be an array of objects (or JSON Lines)")
    first = True
    while True:
        stream.skip_ws()
        if stream.buffer.startswith("]"):
            return
        if not first:
            if not stream.take(","):
                yield None, False
                return
            stream.skip_ws()
        first = False
        item, ok = stream.value()
        yield item, ok
        if not ok:
            return


def json_rows(handle: TextIO) -> Iterator[RowInput]:
    """The rows of a JSON array; a syntax error is the last row (nothing after it is known)."""
    for number, (item, ok) in enumerate(json_array_items(handle), start=1):
        if not ok:
            yield RowInput(
                number,
                {},
                {},
                None,
                reasons=["row: not valid JSON; the rest of the file cannot be read"],
            )
            return
        yield _json_object_row(number, item)


def jsonl_rows(handle: TextIO) -> Iterator[RowInput]:
    """The rows of JSON Lines, one object a line; a line that is not JSON is a row with a
    reason, and reading goes on."""
    number = 0
    for line in handle:
        if not line.strip():
            continue
        number += 1
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            yield RowInput(number, {}, {}, None, reasons=["row: not valid JSON"])
            continue
        yield _json_object_row(number, item)
