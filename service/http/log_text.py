"""What of a request may be written to a log: paths redacted, control characters escaped.

A request's path is the caller's text. A payslip's whole barcode (reference and ciphertext: the
payslip, for anyone with a verifier login) fits in one, sent by a confused client (`POST /v/...`,
`GET /x/<payload>`) or on purpose, and a percent-encoded newline in it would write a line of the
caller's choosing into the log. So a logged path is never the path as sent:

- a request that matched a route is logged as the route's template
  (`/v1/records/<reference>/revoke`): what support needs, with the request id for the rest;
- any other path keeps only its short, plain segments (letters, digits, `.`, `_`, `-`, `~`, at
  most SEGMENT_CHARS): a segment that could hold a payload, a fragment of one (base32 runs, `|`,
  percent escapes) or anything else becomes `…`, and the result is cut at PATH_CHARS.

Every other value taken from a request (the method) goes through `escaped`, which turns control
characters (C0, DEL, C1, and the Unicode line and paragraph separators) into `\\xNN` / `\\uNNNN`.
"""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

SEGMENT_CHARS = 24
"""Longer than any word of this API's paths, shorter than the 26-character base32 runs of even
the shortest ciphertext fragment worth having."""
PATH_CHARS = 160
REDACTED = "…"
_PLAIN_SEGMENT = re.compile(rf"^[A-Za-z0-9._~-]{{0,{SEGMENT_CHARS}}}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escaped(value: object) -> str:
    """`value` as text with every control character written as an escape."""
    return _CONTROL.sub(_escape, str(value))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def redacted_path(path: str) -> str:
    """An unmatched path with every segment that is not short and plain replaced by `…`."""
    segments = [s if _PLAIN_SEGMENT.match(s) else REDACTED for s in path.split("/")]
    shown = "/".join(segments)
    return shown if len(shown) <= PATH_CHARS else shown[: PATH_CHARS - 1] + REDACTED


def logged_path(environ: dict[str, Any]) -> str:
    """The path to log for a request: its route's template once routed, else redacted."""
    route = environ.get("bottle.route")
    if route is not None:
        return escaped(route.rule)
    return redacted_path(str(environ.get("PATH_INFO", "")))


def logged_method(environ: dict[str, Any]) -> str:
    return escaped(environ.get("REQUEST_METHOD", "-"))[:16]


_PATH_IN_TEXT = re.compile(r"(?<![\w:])/[^\s'\"]*")


def redacted_text(text: str) -> str:
    """A log message written by a server library (gunicorn's `GET /path` debug line, its
    refusals quoting a request line): every path in it redacted, control characters escaped."""
    return escaped(_PATH_IN_TEXT.sub(lambda m: redacted_path(m.group()), text))


class RedactingFilter(logging.Filter):
    """Rewrites each record of the logger it is added to through `redacted_text`, for the
    libraries (gunicorn, waitress) that log what a request sent."""

    def filter(self, record: logging.LogRecord) -> bool:
        with contextlib.suppress(Exception):  # a record that cannot be formatted stays as is
            record.msg = redacted_text(record.getMessage())
            record.args = None
        return True
