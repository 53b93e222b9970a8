"""Request validation agrees with the OpenAPI document (issue 15's gate), on generated bodies.

Schemathesis generates bodies from the document the service serves. A body the document calls
valid is either accepted by the service's validator or refused only for a rule JSON Schema cannot
state (period order, ABN and USI checksums). A body the document calls invalid is never accepted
unless it is in fact valid against the document (the generator's negative cases are not always
invalid). So the document neither promises what the service refuses nor hides what it accepts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.openapi import from_dict

from service.composition.instance import make_config
from service.http.openapi import build_openapi
from service.protocol.schemas import (
    SchemaValidationError,
    validate_register_and_build,
    validate_register_non_pii,
    validate_verify,
)

DOCUMENT = build_openapi(make_config(os.urandom(32), "http://127.0.0.1:1"))
SCHEMA = from_dict(DOCUMENT)
SEMANTIC_ONLY = (
    "must not be before period_start",
    "ABN checksum",
)
OPERATIONS: dict[str, Callable[[object], Any]] = {
    "/v1/registerNonPII": validate_register_non_pii,
    "/v1/registerAndBuildBarcode": validate_register_and_build,
    "/v1/verifications/payload": validate_verify,
}


def _document_validator(path: str) -> Any:
    content = DOCUMENT["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    root = {**content["schema"], "components": DOCUMENT["components"]}
    return jsonschema_rs.validator_for(root)


VALIDATORS = {path: _document_validator(path) for path in OPERATIONS}
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


@pytest.mark.parametrize("path", sorted(OPERATIONS))
def test_bodies_the_document_allows_are_accepted_or_refused_for_a_semantic_rule(path: str) -> None:
    validate = OPERATIONS[path]

    @SETTINGS
    @given(SCHEMA[path]["POST"].as_strategy())
    def check(case: Any) -> None:
        try:
            validate(case.body)
        except SchemaValidationError as exc:
            reasons = [e.message for e in exc.field_errors]
            assert all(any(rule in r for rule in SEMANTIC_ONLY) for r in reasons), (
                reasons,
                case.body,
            )

    check()


@pytest.mark.parametrize("path", sorted(OPERATIONS))
def test_bodies_the_service_accepts_are_allowed_by_the_document(path: str) -> None:
    validate, document = OPERATIONS[path], VALIDATORS[path]

    @SETTINGS
    @given(SCHEMA[path]["POST"].as_strategy(generation_mode=GenerationMode.NEGATIVE))
    def check(case: Any) -> None:
        try:
            validate(case.body)
        except SchemaValidationError:
            return
        assert document.is_valid(case.body), case.body

    check()


@SETTINGS
@given(st.text(max_size=200))
def test_a_barcode_of_any_text_is_allowed_by_the_document(text: str) -> None:
    """verifyPayload's document takes any barcode text up to 13000 characters: the barcode's
    structure is checked by the parser (VALIDATION_FAILED at `barcode`), not by the schema."""
    body = {"barcode": text}
    document_ok = VALIDATORS["/v1/verifications/payload"].is_valid(body)
    try:
        validate_verify(body)
        service_ok = True
    except SchemaValidationError:
        service_ok = False
    assert document_ok == service_ok, body
