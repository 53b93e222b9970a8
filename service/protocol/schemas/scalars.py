"""The value types of the request bodies (spec "Resources and their fields", PROTOCOL §1 and §5).

Each type is a plain validator with a hand-written JSON Schema instead of pydantic's coercing or
strict built-ins, for three reasons: the wire rules differ from both (`100.0` is an integer here,
`true` and `"100"` are not); dates and timestamps must come back as the exact strings sent, because
the registered text is what a verifier is shown and what idempotency compares; and every message
must say what is expected without quoting the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, GetCoreSchemaHandler, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError
from pydantic_core import core_schema as cs

from .abn import is_valid_abn
from .currencies import ISO_4217_WITH_MINOR_UNIT

MAX_SAFE_INTEGER = 9_007_199_254_740_991
"""Largest integer a JSON reader using IEEE doubles (JavaScript) still reads exactly."""

T = TypeVar("T")


def _fail(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


@dataclass(frozen=True, eq=False)
class _Native:
    """A check pydantic-core runs itself, with no Python call per value, that fails with our
    own `kind` and `message` whatever is wrong (the wrong type, length, pattern or range), just
    as the Python check it replaced did. A 1000-record batch makes ~10,000 of these checks; as
    Python calls they were a third of its validation time. `eq=False`: a core schema is a dict,
    and typing hashes `Annotated` metadata."""

    schema: cs.CoreSchema
    kind: str
    message: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> cs.CoreSchema:
        return cs.custom_error_schema(
            self.schema, custom_error_type=self.kind, custom_error_message=self.message
        )


def _reject_null(value: T | None) -> T:
    if value is None:
        raise _fail("null_value", "must not be null; leave the field out instead")
    return value


Opt = Annotated[T | None, AfterValidator(_reject_null)]
"""An optional field: may be absent, but an explicit null is refused, so "absent" has one spelling
and the stored content (compared for idempotency) has one form."""


# --- numbers -------------------------------------------------------------------------------------


def _integer_in(low: int, high: int) -> Callable[[object], int]:
    expected = f"expected an integer from {low} to {high} (no fractional part, not a string)"

    def check(value: object) -> int:
        if isinstance(value, bool):
            raise _fail("integer", expected)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or not low <= value <= high:
            raise _fail("integer", expected)
        return value

    return check


def _quantity(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail("quantity", "expected a finite number >= 0")
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise _fail("quantity", "expected a finite number >= 0")
        # Same normalisation as integers, so 7 and 7.0 are one stored content.
        if value.is_integer() and value <= MAX_SAFE_INTEGER:
            return int(value)
        return value
    if value < 0:
        raise _fail("quantity", "expected a finite number >= 0")
    return value


def _integer(low: int, high: int) -> _Native:
    """An integer from `low` to `high`: an `int` is checked natively; anything else (`100.0`,
    which the wire allows, or a wrong value) goes to the Python check, which normalises or
    refuses it."""
    check = _integer_in(low, high)
    return _Native(
        cs.union_schema(
            [
                cs.int_schema(strict=True, ge=low, le=high),
                cs.no_info_plain_validator_function(check),
            ],
            mode="left_to_right",
        ),
        "integer",
        f"expected an integer from {low} to {high} (no fractional part, not a string)",
    )


Cents = Annotated[
    int,
    _integer(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    WithJsonSchema({"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}),
]
BasisPoints = Annotated[
    int,
    _integer(0, 10_000),
    WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 10_000}),
]
Quantity = Annotated[
    int | float, PlainValidator(_quantity), WithJsonSchema({"type": "number", "minimum": 0})
]

_DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?$"

DecimalText = Annotated[
    str,
    _Native(
        cs.str_schema(strict=True, pattern=_DECIMAL_PATTERN),
        "decimal",
        'expected a decimal string such as "12.50" (not a JSON number)',
    ),
    WithJsonSchema({"type": "string", "pattern": _DECIMAL_PATTERN}),
]
"""A v2 amount, rate or quantity, kept as the exact string sent ("1.50" stays "1.50")."""


# --- dates and times -----------------------------------------------------------------------------

_DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
"""The JSON Schema pattern of a date: the shape only (a schema reader checks the calendar by
`format`). A timestamp has no `format` in the document, so its pattern is the whole rule."""
_YEAR = r"(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"
"""0001 to 9999: Python's dates (and ISO 8601 without an agreement) have no year 0."""
_MONTH_DAY = (
    r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"  # day 1-28 of any month
    r"|(?:0[13-9]|1[0-2])-(?:29|30)"  # 29 and 30 of every month but February
    r"|(?:0[13578]|1[02])-31)"  # 31 of the long months
)
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
"""Divisible by 4 but not by 100, or divisible by 400 (year 0 excluded)."""
CALENDAR_DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
"""A real Gregorian date as YYYY-MM-DD, as a regular expression: the one definition of a date,
run by pydantic-core while validating (no Python call per value: a record has four dates and
timestamps, which as Python checks cost ~1 µs per record) and by `re` in `is_calendar_date`.
Tests compare it with `datetime.date` over every year."""
UTC_TIMESTAMP = rf"{CALENDAR_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?Z"
"""A UTC time as YYYY-MM-DDTHH:MM:SS, optional fractional seconds, a trailing Z."""
_CALENDAR_DATE_RE = re.compile(CALENDAR_DATE)


def is_calendar_date(text: str) -> bool:
    return _CALENDAR_DATE_RE.fullmatch(text) is not None


def _anchored(pattern: str) -> str:
    """pydantic-core's regex searches, so a whole-value pattern is anchored; `$` in that engine
    is the very end, as `re.fullmatch` is."""
    return f"^(?:{pattern})$"


Date = Annotated[
    str,
    _Native(
        cs.str_schema(strict=True, pattern=_anchored(CALENDAR_DATE)),
        "date",
        "expected a real calendar date as YYYY-MM-DD",
    ),
    WithJsonSchema({"type": "string", "format": "date", "pattern": _DATE_PATTERN}),
]
Timestamp = Annotated[
    str,
    _Native(
        cs.str_schema(strict=True, pattern=_anchored(UTC_TIMESTAMP)),
        "timestamp",
        "expected a UTC timestamp as YYYY-MM-DDTHH:MM:SS with optional fractional seconds and a "
        "trailing Z",
    ),
    # No `format: date-time`: a generated client types such a field as a datetime and sends
    # Python's `+00:00`, which spec.md ("Conventions": a trailing Z) refuses. As text, with the
    # whole rule (the calendar too) in the pattern, the client sends what its caller wrote
    # (issue 36).
    WithJsonSchema(
        {
            "type": "string",
            "pattern": _anchored(UTC_TIMESTAMP),
            "description": "A UTC timestamp with a trailing Z, e.g. 2026-11-13T09:00:00Z",
        }
    ),
]


# --- text ----------------------------------------------------------------------------------------


def _text(pattern: str, expected: str) -> _Native:
    """A string matching all of `pattern`."""
    return _Native(cs.str_schema(strict=True, pattern=_anchored(pattern)), "text", expected)


NO_NUL_PATTERN = "^[^\\u0000]*$"
"""Free text never holds U+0000: PostgreSQL cannot store it in jsonb or text, so a record that
held one would be accepted by one store and refused by the other."""


def _length(low: int, high: int) -> _Native:
    """Free text of `low` to `high` characters (code points, as Python's `len`), without NUL."""
    return _Native(
        cs.str_schema(strict=True, min_length=low, max_length=high, pattern=r"^[^\x00]*$"),
        "text",
        f"expected a string of {low} to {high} characters, without NUL (U+0000)",
    )


B64URL_PATTERN = r"^[A-Za-z0-9_-]+$"
# Canonical unpadded base64url (what registration accepts): the unused low bits of the last
# character are zero, so a 16-byte tag ends in A, Q, g or w, and no text is 1 mod 4 long.
TAG_PATTERN = r"^[A-Za-z0-9_-]{21}[AQgw]$"
CANONICAL_B64URL_PATTERN = (
    r"^(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-][AQgw]|[A-Za-z0-9_-]{2}[AEIMQUYcgkosw048])?$"
)

Iv = Annotated[
    str,
    _text(r"[A-Za-z0-9_-]{16}", "expected exactly 16 base64url characters"),
    WithJsonSchema({"type": "string", "minLength": 16, "maxLength": 16, "pattern": B64URL_PATTERN}),
]
Tag = Annotated[
    str,
    _text(r"[A-Za-z0-9_-]{22}", "expected exactly 22 base64url characters"),
    WithJsonSchema({"type": "string", "minLength": 22, "maxLength": 22, "pattern": TAG_PATTERN}),
]
ServiceReference = Annotated[
    str,
    _text(r"[A-Za-z0-9_-]{22}", "expected exactly 22 characters of A-Z a-z 0-9 _ -"),
    WithJsonSchema({"type": "string", "minLength": 22, "maxLength": 22, "pattern": B64URL_PATTERN}),
]
_KEY_VERSION_PATTERN = (
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[1-9][0-9]{0,5}"
)
KeyVersion = Annotated[
    str,
    _text(
        _KEY_VERSION_PATTERN,
        "expected <lowercase uuid>.<n> with n from 1 to 999999 and no leading zero",
    ),
    WithJsonSchema({"type": "string", "pattern": f"^{_KEY_VERSION_PATTERN}$"}),
]
EncryptedPii = Annotated[
    str,
    _text(r"[A-Za-z0-9_-]{1,2886}", "expected 1 to 2886 base64url characters"),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": 2886, "pattern": CANONICAL_B64URL_PATTERN}
    ),
]
ExternalId = Annotated[
    str,
    _text(r"[ -~]{1,255}", "expected 1 to 255 printable ASCII characters"),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"}),
]
Barcode = Annotated[
    str,
    _length(1, 13_000),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": 13_000, "pattern": NO_NUL_PATTERN}
    ),
]
Text50 = Annotated[
    str,
    _length(1, 50),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 50, "pattern": NO_NUL_PATTERN}),
]
Text200 = Annotated[
    str,
    _length(1, 200),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 200, "pattern": NO_NUL_PATTERN}),
]
NzTaxCode = Annotated[
    str,
    _text(r"[A-Z]{1,4}( SL)?", "expected an IRD tax code such as M, M SL or ND"),
    WithJsonSchema({"type": "string", "pattern": r"^[A-Z]{1,4}( SL)?$"}),
]


# --- identifiers with checksums and code lists ---------------------------------------------------


def _fund_abn(value: object) -> str:
    if not isinstance(value, str) or not is_valid_abn(value):
        raise _fail("abn", "expected an 11-digit ABN that passes the ABN checksum")
    return value


_USI_RE = re.compile(r"[0-9]{14}|[A-Z]{3}[0-9]{4}[A-Z]{2}")


def _usi(value: object) -> str:
    if (
        not isinstance(value, str)
        or not _USI_RE.fullmatch(value)
        or (value.isdigit() and not is_valid_abn(value[:11]))
    ):
        raise _fail(
            "usi",
            "expected a USI: 14 digits (an ABN passing the ABN checksum, then a 3-digit product "
            "number) or a SPIN of 3 letters, 4 digits and 2 letters",
        )
    return value


FundAbn = Annotated[
    str, PlainValidator(_fund_abn), WithJsonSchema({"type": "string", "pattern": r"^[0-9]{11}$"})
]
Usi = Annotated[
    str,
    PlainValidator(_usi),
    WithJsonSchema({"type": "string", "pattern": r"^([0-9]{14}|[A-Z]{3}[0-9]{4}[A-Z]{2})$"}),
]


IsoCurrency = Annotated[
    str,
    _Native(
        cs.literal_schema(sorted(ISO_4217_WITH_MINOR_UNIT)),
        "currency",
        "expected an active ISO 4217 currency code with a minor unit (fund and metal codes "
        "are not accepted)",
    ),
    WithJsonSchema({"type": "string", "enum": sorted(ISO_4217_WITH_MINOR_UNIT)}),
]
