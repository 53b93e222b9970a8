"""The response models (service.protocol.schemas.responses / admin_responses): what they send,
what they read, and that the OpenAPI document's success bodies are exactly them."""

from __future__ import annotations

from typing import Any

import pytest

from service.composition.instance import make_config
from service.domain.records import new_record
from service.http.openapi import build_openapi
from service.protocol.errors import ErrorCode
from service.protocol.pii_text import FORMATS, build_pii_text, parse_pii_text
from service.protocol.schemas import (
    BatchResultItem,
    EmployeePii,
    KeySummary,
    Overview,
    TokenResponse,
    VerificationResult,
    validate_register_non_pii,
)
from service.protocol.schemas.openapi import RESPONSE_MODELS


@pytest.mark.parametrize("prefix", sorted(FORMATS))
def test_the_employee_object_keeps_each_formats_own_field_order(prefix: str) -> None:
    names = FORMATS[prefix]
    fields = {name: f"value {i}" for i, name in enumerate(names) if i != 2}  # one left empty
    parsed = parse_pii_text(build_pii_text(prefix, fields).encode("utf-8"))
    sent = EmployeePii.model_validate(parsed).wire()
    assert list(sent) == [name for name in names if name in fields]
    assert sent == parsed


def test_unknown_pii_text_is_sent_as_raw_alone() -> None:
    sent = EmployeePii.model_validate(parse_pii_text(b"X9|a|b")).wire()
    assert sent == {"raw": "X9|a|b"}


def test_absent_fields_are_left_out_but_a_keys_retired_at_is_sent_as_null() -> None:
    item = BatchResultItem(status="error", code=ErrorCode.CONFLICT, detail="taken")
    assert item.wire() == {"status": "error", "code": "CONFLICT", "detail": "taken"}
    key = KeySummary(
        key_version="k.1", issuer_id="k", state="active", created_at="t", retired_at=None
    )
    overview = Overview(issuers=[], verifiers=[], clients=[], keys=[key], record_count=0)
    assert overview.wire()["keys"] == [
        {
            "key_version": "k.1",
            "issuer_id": "k",
            "state": "active",
            "created_at": "t",
            "retired_at": None,
        }
    ]


def _verification(**extra: Any) -> dict[str, Any]:
    return {
        "verified": True,
        "service_reference": "A" * 22,
        "payslip": {
            "schema": "au.payslip.v9",
            "issued_at": "2026-11-13T09:00:00Z",
            "payslip_non_pii": {"currency": "AUD", "new_field": [1, 2]},
            "status": "active",
            "issuer": {"issuer_id": "i", "name": "Acme"},
            "registered_at": "2026-11-13T09:00:01Z",
        },
        "employee": {"employee_name": "A", "shoe_size": "44"},
        "decrypted_at": "2026-11-13T09:00:02Z",
        **extra,
    }


def test_a_newer_services_answer_is_read_and_passed_on_whole() -> None:
    """Fields and schema versions this side does not know never make a good answer unreadable,
    and `wire()` gives back what was read."""
    answer = _verification(confidence="high")
    result = VerificationResult.model_validate(answer)
    assert result.payslip.schema_id == "au.payslip.v9"
    assert result.employee.employee_name == "A"
    assert result.employee.fields() == [("employee_name", "A"), ("shoe_size", "44")]
    assert result.wire() == answer


def test_a_status_or_code_added_by_a_newer_service_is_read() -> None:
    """A batch answer arrives after its records were stored: a record status, batch status or
    batch error code this side does not list yet must not make it unreadable (the pay run would
    report stored records as failed). The document still lists the values known today."""
    answer = _verification()
    answer["payslip"]["status"] = "suspended"
    assert VerificationResult.model_validate(answer).payslip.status == "suspended"
    item = BatchResultItem.model_validate({"status": "queued", "code": "RATE_LIMITED_RECORD"})
    assert (item.status, item.code) == ("queued", "RATE_LIMITED_RECORD")
    schema = BatchResultItem.model_json_schema()["properties"]
    assert schema["status"]["enum"] == ["created", "duplicate", "error"]


def test_a_token_answer_without_expires_in_is_readable() -> None:
    token = TokenResponse.model_validate(
        {"access_token": "t", "token_type": "Bearer", "scope": "s"}
    )
    assert token.expires_in is None


def test_every_success_body_in_the_document_is_a_response_model() -> None:
    document = build_openapi(make_config(b"\0" * 32, "http://responses.test"))
    used: set[str] = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2"):
                    continue
                schema = response["content"]["application/json"]["schema"]
                if path == "/openapi.json":
                    assert schema == {"type": "object"}
                    continue
                assert "$ref" in schema, (method, path)
                used.add(schema["$ref"].rsplit("/", 1)[-1])
    assert used == {model.__name__ for model in RESPONSE_MODELS}
    schemas = document["components"]["schemas"]
    assert schemas["VerificationResult"]["required"] == [
        "verified",
        "service_reference",
        "payslip",
        "employee",
        "decrypted_at",
    ]
    assert {
        rule["then"]["properties"]["payslip_non_pii"]["$ref"]
        for rule in schemas["PayslipView"]["allOf"]
    } == {
        f"#/components/schemas/{name}"
        for name in ("AuPayslipV1", "NzPayslipV1", "AuPayslipV2", "NzPayslipV2")
    }


def test_the_idempotency_fingerprint_is_unchanged() -> None:
    """Stored records carry this fingerprint: a retry after an upgrade must still match it."""
    request = validate_register_non_pii(
        {
            "schema": "au.payslip.v2",
            "issued_at": "2026-11-13T09:00:00Z",
            "service_reference": "A" * 22,
            "payslip_non_pii": {
                "period_end": "2026-11-12",
                "payment_date": "2026-11-13",
                "currency": "JPY",
                "gross": "384615",
                "paygw": "78200",
                "net": "306415.0",
            },
            "encryption_metadata": {"iv": "A" * 16, "tag": "A" * 22},
        }
    )
    record = new_record(request, "A" * 22, "issuer", "2026-11-13T09:00:00Z")
    assert record.fingerprint == "623f311cb3d280d864476a9b6526eeca56720fe3c10a2f26ef74a754d0f16f10"
