"""Barcode text: the payload forms and scan URLs of PROTOCOL §3.

Readers accept every form; writers produce version 2. Parsing never fetches anything and never
trusts the URL's host: authenticity comes from the registry and the GCM tag alone.

Besides the forms in PROTOCOL §3's table, readers take the legacy JSON form the vendor's own
verifier read (issue 22): a text starting with `{`, an object of exactly three members,
`{"v": 1, "service_reference": "<ref>", "ciphertext": "<base64url>"}`. No writer here produces
it; badges in the field may carry it. Decided, since no public definition of the form exists:
`v` is the JSON integer 1 or 2 and says how `ciphertext` is encoded, as the leading digit of a
payload does (1: unpadded base64url, 2: unpadded upper-case Base32, PROTOCOL §1); the reference
is 22 base64url characters; a duplicate, missing or unknown member, a nested value, `true` for 1
and anything else malformed is refused like any other malformed text. The whole text is held to
the same 13000-character ceiling as every barcode, before it is parsed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import unquote

from service.protocol.encoding import (
    EncodingError,
    b64url_decode,
    b64url_encode,
    base32_decode,
    base32_encode,
)

REFERENCE_RE = re.compile(r"^[A-Za-z0-9_-]{22}$")
MAX_BARCODE_CHARS = 13000
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*(?P<rest>.*)$", re.DOTALL)


class BarcodeTextError(ValueError):
    """The text is not any barcode form the protocol knows. The message never quotes the text."""


@dataclass(frozen=True, slots=True)
class Payload:
    """A parsed barcode: the record's reference and the ciphertext without its tag."""

    version: int
    service_reference: str
    ciphertext: bytes


def build_payload_v2(reference: str, ciphertext: bytes) -> str:
    return f"2|{reference}|{base32_encode(ciphertext)}"


def build_payload_v1(reference: str, ciphertext: bytes) -> str:
    return f"1|{reference}|{b64url_encode(ciphertext)}"


def scan_url_prefix(scan_base: str, reference: str) -> str:
    """The byte-mode part of the QR text: everything up to and including `#2.`."""
    return f"{scan_base.rstrip('/')}/v/{reference}#2."


def build_scan_url_v2(scan_base: str, reference: str, ciphertext: bytes) -> str:
    return scan_url_prefix(scan_base, reference) + base32_encode(ciphertext)


def build_scan_url_v1_fragment(scan_base: str, reference: str, ciphertext: bytes) -> str:
    """The `#1.` form other issuer libraries write. This project never prints it; it exists so
    tests can produce what those libraries produce and prove that readers take it."""
    return f"{scan_base.rstrip('/')}/v/{reference}#1.{b64url_encode(ciphertext)}"


def build_payload_json_v1(reference: str, ciphertext: bytes) -> str:
    """The legacy JSON form (see the module docstring). Never written on a badge here; it
    exists so tests can produce what the field carries and prove that readers take it."""
    return json.dumps(
        {"v": 1, "service_reference": reference, "ciphertext": b64url_encode(ciphertext)},
        separators=(",", ":"),
    )


def parse_barcode(text: str) -> Payload:
    """Read any form of PROTOCOL §3 (surrounding whitespace ignored)."""
    stripped = text.strip()
    if not stripped:
        raise BarcodeTextError("barcode text is empty")
    if stripped.startswith("{"):
        return _parse_json(stripped)
    match = _URL_RE.match(stripped)
    if match:
        return _parse_url(match.group("rest"))
    return _parse_payload(stripped)


def _parse_url(rest: str) -> Payload:
    path, _, fragment = rest.partition("#")
    path = path.split("?", 1)[0]
    if path.startswith("/v/") and len(path) > 3:
        tail = unquote(path[3:])
        if REFERENCE_RE.match(tail):
            return _parse_fragment(tail, unquote(fragment))
        return _parse_payload(tail)
    if path in ("/v", "/v/") and fragment:
        return _parse_payload(unquote(fragment))
    raise BarcodeTextError("not a payslip scan URL")


def _parse_fragment(reference: str, fragment: str) -> Payload:
    """`#2.<BASE32>` is what writers print; `#1.<base64url>` is what other issuer libraries'
    v1 option (and one library's default) print, so readers take it too and never write it."""
    version, dot, encoded = fragment.partition(".")
    if not dot or version not in ("1", "2"):
        raise BarcodeTextError("scan URL fragment is not a version 1 or 2 ciphertext")
    return _payload(int(version), reference, encoded)


def _parse_payload(text: str) -> Payload:
    parts = text.split("|")
    if len(parts) != 3 or parts[0] not in ("1", "2"):
        raise BarcodeTextError("not a payslip barcode payload")
    return _payload(int(parts[0]), parts[1], parts[2])


_JSON_MEMBERS = frozenset(("v", "service_reference", "ciphertext"))


def _parse_json(text: str) -> Payload:
    """The legacy JSON form. Only scalar members are allowed, so nesting (which the standard
    parser follows recursively) ends in RecursionError at worst, caught here like any error."""
    if len(text) > MAX_BARCODE_CHARS:
        raise BarcodeTextError("the barcode text is too long")
    try:
        fields = json.loads(text, object_pairs_hook=_unique_members, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError, as are the hooks'
        raise BarcodeTextError("not a valid JSON barcode payload") from None
    if not isinstance(fields, dict) or set(fields) != _JSON_MEMBERS:
        raise BarcodeTextError(
            "a JSON barcode payload has exactly the members v, service_reference and ciphertext"
        )
    version, reference, encoded = fields["v"], fields["service_reference"], fields["ciphertext"]
    if type(version) is not int or version not in (1, 2):  # `true` is an int in Python
        raise BarcodeTextError("the JSON barcode payload's v is not 1 or 2")
    if not isinstance(reference, str) or not isinstance(encoded, str):
        raise BarcodeTextError("the JSON barcode payload's reference and ciphertext are not text")
    # The shared patterns end in `$`, which also matches before a final newline: harmless in a
    # stripped payload, but a JSON string can end in one.
    if not REFERENCE_RE.fullmatch(reference):
        raise BarcodeTextError("the reference is not 22 base64url characters")
    if "\n" in encoded:
        raise BarcodeTextError("the ciphertext has a line break")
    return _payload(version, reference, encoded)


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """Refuse duplicate members (two parsers may disagree on which wins) and nested objects."""
    members = dict(pairs)
    if len(members) != len(pairs):
        raise ValueError("duplicate member")
    if any(isinstance(value, (dict, list)) for value in members.values()):
        raise ValueError("nested value")
    return members


def _no_constant(name: str) -> object:
    raise ValueError("NaN and Infinity are not JSON")


def _payload(version: int, reference: str, encoded: str) -> Payload:
    if not REFERENCE_RE.match(reference):
        raise BarcodeTextError("the reference is not 22 base64url characters")
    if not encoded:
        raise BarcodeTextError("the ciphertext is empty")
    try:
        ciphertext = base32_decode(encoded) if version == 2 else b64url_decode(encoded)
    except EncodingError as exc:
        kind = "Base32" if version == 2 else "base64url"
        raise BarcodeTextError(f"the ciphertext is not valid {kind}") from exc
    return Payload(version=version, service_reference=reference, ciphertext=ciphertext)
