"""The error vocabulary (service/protocol/errors.py) against the contract, and the bytes and
headers an error becomes (service/http/errors.py), which must not change with the vocabulary."""

from __future__ import annotations

import json

import pytest

from service.domain.errors import ServiceError
from service.http.errors import error_body, error_headers, error_json
from service.protocol.errors import ErrorBody, ErrorCode, FieldError
from service.protocol.vocabulary import Verdict

PROTOCOL_6 = {
    "VALIDATION_FAILED": 400,
    "DECRYPTION_FAILED": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "SERVICE_REFERENCE_NOT_FOUND": 404,
    "CONFLICT": 409,
    "IV_REUSED": 409,
    "KEY_VERSION_UNAVAILABLE": 410,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "SERVICE_UNAVAILABLE": 503,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
}
"""PROTOCOL §6's table: code and status, every row."""


def test_the_codes_and_statuses_are_protocol_6() -> None:
    assert {str(code): code.status for code in ErrorCode} == PROTOCOL_6
    for code in ErrorCode:
        assert code == code.name == code.value, "members are the wire strings"
        assert ErrorCode.known(code.value) is code
        assert code.summary and code.summary[0].isupper()
    assert ErrorCode.known("SOMETHING_NEW") is None
    assert ErrorCode.known(None) is None


def test_retry_after_and_verdicts() -> None:
    """spec "Errors": Retry-After is required on RATE_LIMITED and SERVICE_UNAVAILABLE. Only codes
    about the document itself mean NOT VERIFIED at a desk; the rest mean the check failed."""
    assert {c for c in ErrorCode if c.retry_after} == {
        ErrorCode.RATE_LIMITED,
        ErrorCode.SERVICE_UNAVAILABLE,
    }
    assert {c for c in ErrorCode if c.verdict == Verdict.NOT_VERIFIED} == {
        ErrorCode.VALIDATION_FAILED,
        ErrorCode.DECRYPTION_FAILED,
        ErrorCode.SERVICE_REFERENCE_NOT_FOUND,
        ErrorCode.KEY_VERSION_UNAVAILABLE,
    }
    assert {c.verdict for c in ErrorCode} == {Verdict.NOT_VERIFIED, Verdict.CANNOT_VERIFY}


def test_the_error_object_round_trips_and_leaves_out_what_is_absent() -> None:
    wire = {
        "error": "The request failed validation",
        "code": "VALIDATION_FAILED",
        "detail": "records: required",
        "field_errors": [{"path": "records", "message": "required"}],
    }
    body = ErrorBody.model_validate(wire)
    assert body.code is ErrorCode.VALIDATION_FAILED
    assert body.field_errors == [FieldError("records", "required")]
    assert body.wire() == wire
    assert ErrorBody(error="Not found", code=ErrorCode.NOT_FOUND).wire() == {
        "error": "Not found",
        "code": "NOT_FOUND",
    }
    with pytest.raises(ValueError):
        ErrorBody.model_validate({"error": "x", "code": "SOMETHING_NEW"})
    assert len({FieldError("a", "b"), FieldError("a", "b"), FieldError("a", "c")}) == 2


@pytest.mark.parametrize(
    ("error", "wire", "headers"),
    [
        (
            ServiceError(
                ErrorCode.VALIDATION_FAILED,
                "barcode: required",
                field_errors=[FieldError("barcode", "required")],
            ),
            b'{"error": "The request failed validation", "code": "VALIDATION_FAILED", '
            b'"detail": "barcode: required", '
            b'"field_errors": [{"path": "barcode", "message": "required"}]}',
            {},
        ),
        (
            ServiceError(
                ErrorCode.UNAUTHORIZED,
                "unknown client or wrong secret",
                oauth_error="invalid_client",
            ),
            # RFC 6749 §5.2's error_description beside our detail (issue 36).
            b'{"error": "invalid_client", "code": "UNAUTHORIZED", '
            b'"detail": "unknown client or wrong secret", '
            b'"error_description": "unknown client or wrong secret"}',
            {"WWW-Authenticate": 'Bearer error="invalid_token"'},
        ),
        (
            ServiceError(
                ErrorCode.RATE_LIMITED, "too many requests; retry after 7 s", retry_after=7
            ),
            b'{"error": "Too many requests", "code": "RATE_LIMITED", '
            b'"detail": "too many requests; retry after 7 s"}',
            {"Retry-After": "7"},
        ),
        (
            ServiceError(ErrorCode.SERVICE_UNAVAILABLE, "busy", retry_after=0),
            b'{"error": "Service unavailable", "code": "SERVICE_UNAVAILABLE", "detail": "busy"}',
            {"Retry-After": "1"},
        ),
        (
            ServiceError(ErrorCode.CONFLICT, "taken", reason="different content"),
            b'{"error": "Reference already registered with different data", "code": "CONFLICT", '
            b'"detail": "taken", "reason": "different content"}',
            {},
        ),
        (
            ServiceError(ErrorCode.NOT_FOUND, "no such path \u00e9"),
            b'{"error": "Not found", "code": "NOT_FOUND", "detail": "no such path \\u00e9"}',
            {},
        ),
    ],
    ids=lambda value: str(getattr(value, "code", "")),
)
def test_an_error_becomes_the_same_bytes_and_headers_as_before(
    error: ServiceError, wire: bytes, headers: dict[str, str]
) -> None:
    """The bytes the service sent before the vocabulary moved into the protocol (key order,
    separators, absent fields left out), and the headers each code needs."""
    assert error_json(error) == wire
    assert error_body(error) == json.loads(wire)
    assert error_headers(error) == {
        "Content-Type": "application/json",
        "Cache-Control": "no-store",
        # every answer, refusals before the body included (issue 37)
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        **headers,
    }
