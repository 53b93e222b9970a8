"""The client's typed errors read the protocol's vocabulary: one class per wire code, the
protocol's FieldError, and a status-only answer mapped to a code that travels with that status."""

from __future__ import annotations

import pickle

import pytest

from app.api.errors import (
    ApiError,
    EndpointNotFound,
    FieldError,
    NotFound,
    ValidationFailed,
    error_class_for,
    fallback_code_for_status,
)
from service.protocol import errors as protocol


@pytest.mark.parametrize("code", list(protocol.ErrorCode), ids=str)
def test_every_wire_code_has_its_exception_class(code: protocol.ErrorCode) -> None:
    cls = error_class_for(code)
    assert cls is not ApiError, code
    if code is protocol.ErrorCode.METHOD_NOT_ALLOWED:
        assert cls is EndpointNotFound  # a wrong base URL either way
    else:
        assert cls.default_code == code
    assert error_class_for(str(code)) is cls
    assert type(cls().code) is str


def test_a_bare_status_maps_to_a_code_sent_with_that_status() -> None:
    for status in range(400, 600):
        code = protocol.ErrorCode.known(fallback_code_for_status(status))
        if code is not None and status in {c.status for c in protocol.ErrorCode}:
            assert code.status == status, status
    # A bare 404 is a wrong address, never "no such payslip".
    assert error_class_for(fallback_code_for_status(404)) is EndpointNotFound
    assert error_class_for(fallback_code_for_status(404)) is not NotFound
    assert fallback_code_for_status(502) == "SERVICE_UNAVAILABLE"
    assert fallback_code_for_status(418) == "HTTP_ERROR"


def test_field_errors_are_the_protocols_type() -> None:
    assert FieldError is protocol.FieldError
    error = ValidationFailed(
        None,
        400,
        "bad",
        [{"path": "barcode", "message": "required"}, FieldError("", "expected an object")],
    )
    assert error.field_errors == [
        FieldError("barcode", "required"),
        FieldError("", "expected an object"),
    ]
    assert "(fields: barcode, <body>)" in str(error)
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is ValidationFailed and clone.field_errors == error.field_errors
