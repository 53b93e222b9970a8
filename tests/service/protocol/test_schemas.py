"""Strict request validation (spec "Resources and their fields"; PROTOCOL §1, §5, §6)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from service.protocol.schemas import (
    MAX_SAFE_INTEGER,
    PAYSLIP_SCHEMAS,
    FieldError,
    SchemaValidationError,
    canonical_json,
    openapi_components,
    validate_batch_envelope,
    validate_batch_record,
    validate_register_and_build,
    validate_register_non_pii,
    validate_verify,
)

VALID_ABN = "51824753556"
REFERENCE = "AbCdEfGhIjKlMnOpQrSt_-"
KEY_VERSION = "0b7c3c1e-9d4f-4a51-8e0f-2a6b9c1d3e4f.1"
ENCRYPTION = {"iv": "AAECAwQFBgcICQoL", "tag": "AAECAwQFBgcICQoLDA0ODw"}
DELETE = object()

AU_V1_MIN: dict[str, Any] = {
    "period_start": "2024-06-17",
    "period_end": "2024-06-30",
    "payment_date": "2024-07-03",
    "currency": "AUD",
    "gross_cents": 250000,
    "paygw_cents": 52000,
    "net_cents": 198000,
    "ytd_gross_cents": 250000,
    "ytd_paygw_cents": 52000,
}
AU_V1_FULL: dict[str, Any] = {
    **AU_V1_MIN,
    "pay_frequency": "fortnightly",
    "employment_basis": "full_time",
    "engagement_type": "permanent",
    "hourly": {"ordinary_rate_cents": 3289, "hours": 76, "amount_cents": 249964},
    "annual_rate_cents": 6500000,
    "taxable_gross_cents": 240000,
    "stsl_withholding_cents": 3100,
    "earnings": [
        {"type": "ordinary", "units": 76, "rate_cents": 3289, "amount_cents": 249964},
        {"type": "overtime", "units": 2.5, "rate_cents": 4934, "amount_cents": 12335},
        {"type": "paid_leave", "leave_type": "cash_out_in_service", "amount_cents": 5000},
        {"type": "allowance", "allowance_type": "tools", "amount_cents": 1500},
        {
            "type": "allowance",
            "allowance_type": "other",
            "other_category": "home_office",
            "amount_cents": 800,
        },
        {"type": "bonus_commission", "amount_cents": 10000},
        {"type": "directors_fees", "amount_cents": 1},
        {"type": "lump_sum", "amount_cents": 2},
        {"type": "return_to_work", "amount_cents": -3},
    ],
    "salary_sacrifice": [{"type": "super", "amount_cents": 10000}],
    "deductions": [
        {"type": "union_professional_fees", "amount_cents": 1200},
        {"type": "workplace_giving", "amount_cents": 500},
    ],
    "superannuation": [
        {
            "contribution_type": "superannuation_guarantee",
            "amount_cents": 28750,
            "usi": VALID_ABN + "001",
            "fund_abn": VALID_ABN,
        },
        {"contribution_type": "resc", "amount_cents": 100, "usi": "ABC1234AB"},
    ],
    "reimbursements_cents": 4400,
    "ytd": {
        "taxable_cents": 240000,
        "super_cents": 28750,
        "non_taxable_cents": 0,
        "post_tax_deductions_cents": 1700,
        "reimbursements_cents": 4400,
    },
}
NZ_V1_MIN: dict[str, Any] = {
    "period_start": "2024-06-17",
    "period_end": "2024-06-30",
    "payment_date": "2024-07-03",
    "currency": "NZD",
    "gross_cents": 300000,
    "paye_cents": 60000,
    "net_cents": 240000,
}
NZ_V1_FULL: dict[str, Any] = {
    **NZ_V1_MIN,
    "ytd_gross_cents": 300000,
    "ytd_paye_cents": 60000,
    "student_loan_cents": 4000,
    "pay_cycle": "four_weekly",
    "tax_code": "M SL",
    "employment_type": "fixed_term",
    "hours_paid": 80.5,
    "earnings": [
        {"type": "ordinary", "units": 80, "rate_cents": 3500, "amount_cents": 280000},
        {"type": "holiday_pay", "amount_cents": 20000},
    ],
    "kiwisaver": {
        "employee_deduction_cents": 9000,
        "employee_rate_basis_points": 300,
        "employer_contribution_cents": 9000,
        "esct_cents": 1500,
    },
    "leave_balances": {
        "annual": {"value": 80, "unit": "hours"},
        "sick": {"value": 5, "unit": "days"},
        "alternative": {"value": 0, "unit": "days"},
        "long_service": {"value": 1.5, "unit": "weeks"},
    },
}
AU_V2_MIN: dict[str, Any] = {
    "period_end": "2024-06-30",
    "payment_date": "2024-07-03",
    "currency": "AUD",
    "gross": "2500.00",
    "paygw": "520.00",
    "net": "1980.00",
}
AU_V2_FULL: dict[str, Any] = {
    **AU_V2_MIN,
    "period_start": "2024-06-17",
    "ytd_gross": "2500.00",
    "ytd_paygw": "520",
    "annual_rate": "65000",
    "taxable_gross": "2400.00",
    "stsl_withholding": "31.00",
    "reimbursements": "44.00",
    "pay_frequency": "semi_monthly",
    "employment_basis": "casual",
    "engagement_type": "fixed_term",
    "award": "Clerks - Private Sector Award 2020",
    "hourly": {"ordinary_rate": "32.89", "hours": "76.0", "amount": "2499.64"},
    "earnings": [
        {"type": "ordinary", "amount": "2499.64", "units": "76", "rate": "32.89"},
        {"type": "paid_leave", "leave_type": "paid_parental", "amount": "1.50", "ytd_amount": "3"},
        {
            "type": "allowance",
            "allowance_type": "other",
            "other_category": "uniform",
            "amount": "5",
        },
        {"type": "lump_sum", "lump_sum_type": "a_redundancy", "amount": "100"},
        {"type": "etp", "etp_type": "death_trustee", "etp_component": "tax_free", "amount": "9"},
        {"type": "other", "amount": "-1.25"},
    ],
    "salary_sacrifice": [{"type": "other", "amount": "10", "ytd_amount": "20"}],
    "deductions": [{"type": "child_support_garnishee", "amount": "15.00", "ytd_amount": "30"}],
    "superannuation": [
        {
            "contribution_type": "salary_sacrifice",
            "amount": "287.50",
            "rate": "11.5",
            "ytd_amount": "575.00",
            "usi": "ABC1234AB",
        }
    ],
    "ytd": {
        "taxable": "2400",
        "super": "287.50",
        "non_taxable": "0",
        "post_tax_deductions": "17",
        "reimbursements": "44",
    },
}
NZ_V2_MIN: dict[str, Any] = {
    "period_end": "2024-06-30",
    "payment_date": "2024-07-03",
    "currency": "NZD",
    "gross": "3000.00",
    "paye": "600.00",
    "net": "2400.00",
}
NZ_V2_FULL: dict[str, Any] = {
    **NZ_V2_MIN,
    "period_start": "2024-06-17",
    "ytd_gross": "3000",
    "ytd_paye": "600",
    "hours_paid": "80.5",
    "annual_rate": "72000",
    "earnings_not_liable_for_acc": "0",
    "employee_share_scheme": "0",
    "student_loan": "40",
    "child_support": "0",
    "kiwisaver_employee_deduction": "90",
    "kiwisaver_employee_rate": "3",
    "kiwisaver_employer_contribution": "90",
    "esct": "15",
    "reimbursements": "12.00",
    "prior_period_gross_adjustment": "-120.50",
    "prior_period_paye_adjustment": "-30.10",
    "payroll_donation_tax_credit": "1.67",
    "slcir": "40.00",
    "slbor": "25",
    "pay_cycle": "fortnightly",
    "tax_code": "M SL",
    "employment_type": "permanent full time",
    "hourly": {"ordinary_rate": "35", "hours": "80", "amount": "2800"},
    "earnings": [
        {"type": "ordinary", "amount": "2800", "units": "80", "rate": "35", "ytd_amount": "2800"},
        {"type": "paid_leave", "leave_type": "annual_holiday", "amount": "200"},
        {"type": "allowance", "allowance_type": "on_call", "amount": "50"},
        {"type": "holiday_pay_on_termination", "amount": "0"},
    ],
    "deductions": [{"type": "payroll_donation", "amount": "5", "ytd_amount": "10"}],
    "leave_balances": {
        "annual": {"amount": "80", "unit": "hours"},
        "annual_accrued_this_period": {"amount": "6.15", "unit": "hours"},
        "sick": {"amount": "5", "unit": "days"},
        "sick_accrued_this_period": {"amount": "0", "unit": "days"},
        "alternative": {"amount": "-1", "unit": "weeks"},
    },
    "ytd": {
        "student_loan": "40",
        "kiwisaver_employee": "90",
        "kiwisaver_employer": "90",
        "child_support": "0",
        "non_taxable": "12",
        "post_tax_deductions": "5",
        "reimbursements": "12",
    },
}
EXAMPLES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "au.payslip.v1": (AU_V1_MIN, AU_V1_FULL),
    "nz.payslip.v1": (NZ_V1_MIN, NZ_V1_FULL),
    "au.payslip.v2": (AU_V2_MIN, AU_V2_FULL),
    "nz.payslip.v2": (NZ_V2_MIN, NZ_V2_FULL),
}


def record(schema: str = "au.payslip.v1", payslip: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "schema": schema,
        "issued_at": "2024-07-01T09:30:00Z",
        "payslip_non_pii": copy.deepcopy(payslip if payslip is not None else EXAMPLES[schema][0]),
        "encryption_metadata": dict(ENCRYPTION),
    }


def build_body(**kw: Any) -> dict[str, Any]:
    return {**record(**kw), "encrypted_pii": "Q2lwaGVydGV4dA"}


def batch_item(**kw: Any) -> dict[str, Any]:
    return {**record(**kw), "service_reference": REFERENCE, "external_id": "run-7/slip-1"}


def changed(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `body` with the dot-and-index `path` set to `value` (or removed with DELETE)."""
    result = copy.deepcopy(body)
    *parents, last = path.split(".")
    target: Any = result
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    key: Any = int(last) if isinstance(target, list) else last
    if value is DELETE:
        del target[key]
    else:
        target[key] = value
    return result


def errors(validate: Callable[[Any], object], body: Any) -> list[FieldError]:
    with pytest.raises(SchemaValidationError) as info:
        validate(body)
    return info.value.field_errors


def paths(validate: Callable[[Any], object], body: Any) -> list[str]:
    return [e.path for e in errors(validate, body)]


def payslip_paths(body: dict[str, Any]) -> list[str]:
    return paths(validate_register_non_pii, body)


P = "payslip_non_pii"


# --- valid examples ------------------------------------------------------------------------------


@pytest.mark.parametrize("schema", list(EXAMPLES))
@pytest.mark.parametrize("variant", [0, 1], ids=["minimal", "full"])
def test_valid_examples_pass_on_every_registration_operation(schema: str, variant: int) -> None:
    payslip = EXAMPLES[schema][variant]
    plain = validate_register_non_pii(record(schema, payslip))
    built = validate_register_and_build(build_body(schema=schema, payslip=payslip))
    item = validate_batch_record(batch_item(schema=schema, payslip=payslip))
    for request in (plain, built, item):
        assert request.schema_id == schema
        assert isinstance(request.payslip_non_pii, PAYSLIP_SCHEMAS[schema])
        assert request.payslip_non_pii_json() == payslip
    assert plain.service_reference is None
    assert item.service_reference == REFERENCE
    assert item.external_id == "run-7/slip-1"
    assert built.encrypted_pii == "Q2lwaGVydGV4dA"


def _models_under(model: type[BaseModel]) -> set[type[BaseModel]]:
    """`model` and every model its fields hold, however nested."""
    found: set[type[BaseModel]] = set()
    pending = [model]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        for info in current.model_fields.values():
            stack = [info.annotation]
            while stack:
                kind = stack.pop()
                if isinstance(kind, type) and issubclass(kind, BaseModel):
                    pending.append(kind)
                stack.extend(typing.get_args(kind))
    return found


def test_payslip_models_dump_as_their_fields_are_named() -> None:
    """`as_sent` builds the stored JSON from field names; that is only pydantic's dump while no
    payslip model renames a field or serializes one its own way."""
    for payslip in PAYSLIP_SCHEMAS.values():
        for model in _models_under(payslip):
            for name, info in model.model_fields.items():
                assert (info.alias, info.serialization_alias) == (None, None), (model, name)
            decorators = model.__pydantic_decorators__
            assert not decorators.field_serializers and not decorators.model_serializers, model


@pytest.mark.parametrize("schema", list(EXAMPLES))
@pytest.mark.parametrize("variant", [0, 1], ids=["minimal", "full"])
def test_stored_payslip_is_pydantics_dump(schema: str, variant: int) -> None:
    request = validate_register_non_pii(record(schema, EXAMPLES[schema][variant]))
    dumped = request.payslip_non_pii.model_dump(mode="json", exclude_unset=True)
    assert request.payslip_non_pii_json() == dumped == EXAMPLES[schema][variant]


def test_payslip_json_keeps_exactly_what_was_sent() -> None:
    body = record(
        "au.payslip.v1",
        {
            **AU_V1_MIN,
            "gross_cents": 100.0,
            "hourly": {"ordinary_rate_cents": 3000.0, "hours": 7.0, "amount_cents": 21000},
            "earnings": [{"type": "overtime", "amount_cents": 5, "units": 1.25}],
        },
    )
    body["issued_at"] = "2024-07-01T09:30:00.120Z"
    request = validate_register_non_pii(body)
    dumped = request.payslip_non_pii_json()
    assert dumped["gross_cents"] == 100 and type(dumped["gross_cents"]) is int
    assert dumped["hourly"] == {"ordinary_rate_cents": 3000, "hours": 7, "amount_cents": 21000}
    assert dumped["earnings"] == [{"type": "overtime", "amount_cents": 5, "units": 1.25}]
    assert "pay_frequency" not in dumped
    assert request.issued_at == "2024-07-01T09:30:00.120Z"
    assert json.loads(json.dumps(dumped)) == dumped


def test_v2_decimal_strings_are_kept_as_sent() -> None:
    payslip = {**AU_V2_MIN, "gross": "1.50", "paygw": "-0.00", "net": "007"}
    dumped = validate_register_non_pii(record("au.payslip.v2", payslip)).payslip_non_pii_json()
    assert (dumped["gross"], dumped["paygw"], dumped["net"]) == ("1.50", "-0.00", "007")


def test_idempotency_content_is_canonical() -> None:
    body = record("au.payslip.v1", {**AU_V1_MIN, "gross_cents": 250000.0})
    body["encryption_metadata"]["key_version"] = KEY_VERSION
    a = validate_register_non_pii(body)
    b = validate_batch_record({**record(), "service_reference": REFERENCE})
    content = a.idempotency_content()
    assert content["key_version"] == KEY_VERSION
    assert canonical_json(content) != canonical_json(b.idempotency_content())
    b_content = b.idempotency_content()
    b_content["key_version"] = KEY_VERSION
    assert canonical_json(content) == canonical_json(b_content)


def test_canonical_json() -> None:
    assert canonical_json({"b": [1, {"d": 2, "c": "é"}], "a": None}) == (
        '{"a":null,"b":[1,{"c":"é","d":2}]}'
    )
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


# --- what a wrong scalar is told ------------------------------------------------------------------

_INTEGER = (
    "expected an integer from -9007199254740991 to 9007199254740991 (no fractional part, not a "
    "string)"
)
_IV = "expected exactly 16 base64url characters"
_KEY = "expected <lowercase uuid>.<n> with n from 1 to 999999 and no leading zero"
_CURRENCY = (
    "expected an active ISO 4217 currency code with a minor unit (fund and metal codes are not "
    "accepted)"
)
_DECIMAL = 'expected a decimal string such as "12.50" (not a JSON number)'
_TEXT200 = "expected a string of 1 to 200 characters, without NUL (U+0000)"


@pytest.mark.parametrize(
    ("schema", "path", "value", "message"),
    [
        ("au.payslip.v1", f"{P}.gross_cents", "100", _INTEGER),
        ("au.payslip.v1", f"{P}.gross_cents", 100.5, _INTEGER),
        ("au.payslip.v1", f"{P}.gross_cents", True, _INTEGER),
        ("au.payslip.v1", f"{P}.gross_cents", MAX_SAFE_INTEGER + 1, _INTEGER),
        ("au.payslip.v1", "encryption_metadata.iv", 16, _IV),
        ("au.payslip.v1", "encryption_metadata.iv", "AAECAwQFBgcICQo", _IV),
        ("au.payslip.v1", "encryption_metadata.iv", "AAECAwQFBgcICQoL\n", _IV),
        ("au.payslip.v1", "encryption_metadata.iv", "xAAECAwQFBgcICQoL", _IV),
        ("au.payslip.v1", "encryption_metadata.iv", "AAECAwQFBgcICQo=", _IV),
        ("au.payslip.v1", "encryption_metadata.key_version", KEY_VERSION.upper(), _KEY),
        ("au.payslip.v1", "encryption_metadata.key_version", KEY_VERSION + ".1", _KEY),
        ("au.payslip.v2", f"{P}.currency", "XAU", _CURRENCY),
        ("au.payslip.v2", f"{P}.currency", "aud", _CURRENCY),
        ("au.payslip.v2", f"{P}.currency", 36, _CURRENCY),
        ("au.payslip.v2", f"{P}.gross", 1.5, _DECIMAL),
        ("au.payslip.v2", f"{P}.gross", "1.", _DECIMAL),
        ("au.payslip.v2", f"{P}.gross", "1.50\n", _DECIMAL),
        ("au.payslip.v2", f"{P}.award", "", _TEXT200),
        ("au.payslip.v2", f"{P}.award", "a" * 201, _TEXT200),
        ("au.payslip.v2", f"{P}.award", "Clerks\x00Award", _TEXT200),
    ],
)
def test_a_wrong_scalar_is_told_what_is_expected_and_never_its_value(
    schema: str, path: str, value: object, message: str
) -> None:
    """The checks pydantic-core runs natively say exactly what the Python checks said, for a
    wrong type, length, pattern or range alike, and stay anchored at both ends."""
    body = changed(record(schema), path, value)
    with pytest.raises(SchemaValidationError) as caught:
        validate_register_non_pii(body)
    assert [(e.path, e.message) for e in caught.value.field_errors] == [(path, message)]


@pytest.mark.parametrize(
    ("path", "value"),
    [(f"{P}.award", "a" * 200), (f"{P}.award", "é" * 200), (f"{P}.gross", "-0.00")],
)
def test_scalars_accept_their_edges(path: str, value: str) -> None:
    """Lengths count characters, not bytes: 200 accented letters are 200 characters."""
    request = validate_register_non_pii(changed(record("au.payslip.v2"), path, value))
    assert request.payslip_non_pii_json()[path.split(".")[-1]] == value


# --- integers and quantities ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        *(100.5, "100", True, False, None, [], {}),
        *(MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 1e16, float("nan"), float("inf")),
    ],
)
def test_bad_integers_fail_at_their_path(value: object) -> None:
    body = changed(record(), f"{P}.gross_cents", value)
    assert payslip_paths(body) == [f"{P}.gross_cents"]


@pytest.mark.parametrize("value", [0, -5, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 100.0, -0.0])
def test_integers_accept_whole_numbers_in_range(value: float) -> None:
    request = validate_register_non_pii(changed(record(), f"{P}.gross_cents", value))
    assert request.payslip_non_pii_json()["gross_cents"] == int(value)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("hourly.amount_cents", 1.5),
        ("earnings.0.amount_cents", "5"),
        ("earnings.0.rate_cents", True),
        ("superannuation.0.amount_cents", 2**60),
        ("ytd.super_cents", 0.1),
    ],
)
def test_nested_bad_integers_fail_at_their_path(path: str, value: object) -> None:
    body = changed(record("au.payslip.v1", AU_V1_FULL), f"{P}.{path}", value)
    assert payslip_paths(body) == [f"{P}.{path}"]


@pytest.mark.parametrize("value", [-1, -0.5, float("nan"), float("inf"), "7.5", True, None])
def test_bad_quantities_fail(value: object) -> None:
    body = changed(record("au.payslip.v1", AU_V1_FULL), f"{P}.hourly.hours", value)
    assert payslip_paths(body) == [f"{P}.hourly.hours"]


@pytest.mark.parametrize("value", [-1, 10001, 2.5, "300"])
def test_basis_points_range(value: object) -> None:
    body = changed(
        record("nz.payslip.v1", NZ_V1_FULL), f"{P}.kiwisaver.employee_rate_basis_points", value
    )
    assert payslip_paths(body) == [f"{P}.kiwisaver.employee_rate_basis_points"]


# --- dates and timestamps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "2024-2-1",
        "2023-02-29",
        "2024-02-30",
        "2024-13-01",
        "2024-00-10",
        "20240201",
        "2024-02-01T00:00:00Z",
        "2024-02-01\n",
        " 2024-02-01",
        "２０２４-02-01",
        "0000-01-01",
        20240201,
        None,
    ],
)
def test_bad_dates_fail(value: object) -> None:
    body = changed(record(), f"{P}.payment_date", value)
    assert payslip_paths(body) == [f"{P}.payment_date"]


def test_leap_day_is_a_date() -> None:
    body = changed(record(), f"{P}.payment_date", "2024-02-29")
    assert validate_register_non_pii(body).payslip_non_pii_json()["payment_date"] == "2024-02-29"


@pytest.mark.parametrize("schema", list(EXAMPLES))
def test_period_end_before_start_fails(schema: str) -> None:
    body = record(schema, EXAMPLES[schema][1])
    body = changed(body, f"{P}.period_end", "2024-06-16")
    assert payslip_paths(body) == [f"{P}.period_end"]
    validate_register_non_pii(changed(body, f"{P}.period_end", "2024-06-17"))


def test_period_order_is_reported_with_other_errors() -> None:
    body = changed(record(), f"{P}.period_end", "2024-06-01")
    body = changed(body, f"{P}.net_cents", "1")
    assert sorted(payslip_paths(body)) == [f"{P}.net_cents", f"{P}.period_end"]


def test_v2_period_start_is_optional() -> None:
    body = record("nz.payslip.v2", {**NZ_V2_MIN})
    assert "period_start" not in validate_register_non_pii(body).payslip_non_pii_json()


@pytest.mark.parametrize(
    "value",
    [
        "2024-07-01T00:00:00",
        "2024-07-01T00:00:00+00:00",
        "2024-07-01 00:00:00Z",
        "2024-07-01t00:00:00z",
        "2024-07-01T24:00:00Z",
        "2024-07-01T00:60:00Z",
        "2024-07-01T00:00:60Z",
        "2023-02-29T00:00:00Z",
        "2024-07-01T00:00:00.Z",
        "2024-07-01T0:00:00Z",
        "2024-07-01",
        1719792000,
    ],
)
def test_bad_timestamps_fail(value: object) -> None:
    assert payslip_paths(changed(record(), "issued_at", value)) == ["issued_at"]


@pytest.mark.parametrize(
    "value", ["2024-07-01T00:00:00Z", "2024-02-29T23:59:59.999999999Z", "2024-07-01T12:00:00.5Z"]
)
def test_timestamps_are_kept_as_sent(value: str) -> None:
    assert validate_register_non_pii(changed(record(), "issued_at", value)).issued_at == value


# --- closed objects ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("au.payslip.v1", "surprise"),
        ("au.payslip.v1", "encryption_metadata.nonce"),
        ("au.payslip.v1", f"{P}.employee_name"),
        ("au.payslip.v1", f"{P}.hourly.overtime"),
        ("au.payslip.v1", f"{P}.earnings.1.note"),
        ("au.payslip.v1", f"{P}.superannuation.1.fund_name"),
        ("au.payslip.v1", f"{P}.ytd.tax_cents"),
        ("nz.payslip.v1", f"{P}.kiwisaver.rate"),
        ("nz.payslip.v1", f"{P}.leave_balances.parental"),
        ("nz.payslip.v1", f"{P}.leave_balances.annual.accrued"),
        ("au.payslip.v2", f"{P}.gross_cents"),
        ("au.payslip.v2", f"{P}.superannuation.0.fund_abn"),
        ("nz.payslip.v2", f"{P}.leave_balances.long_service"),
        ("nz.payslip.v2", f"{P}.ytd.paye"),
    ],
)
def test_unknown_keys_fail_with_their_path(schema: str, path: str) -> None:
    body = changed(record(schema, EXAMPLES[schema][1]), path, {"amount": "1", "unit": "days"})
    found = errors(validate_register_non_pii, body)
    assert found == [FieldError(path, "unknown field")]


def test_schema_field_is_only_accepted_by_its_wire_name() -> None:
    body = record()
    body["schema_id"] = body.pop("schema")
    assert sorted(payslip_paths(body)) == ["schema", "schema_id"]


@pytest.mark.parametrize("path", [f"{P}.pay_frequency", f"{P}.earnings", f"{P}.ytd"])
def test_explicit_null_for_an_optional_field_fails(path: str) -> None:
    body = changed(record("au.payslip.v1", AU_V1_FULL), path, None)
    assert payslip_paths(body) == [path]


@pytest.mark.parametrize("body", [[], "x", None, 3, True])
def test_body_not_an_object_fails_at_the_root(body: object) -> None:
    for validate in (validate_register_non_pii, validate_register_and_build, validate_verify):
        assert errors(validate, body) == [FieldError("", "expected an object")]


@pytest.mark.parametrize("missing", ["schema", "issued_at", P, "encryption_metadata"])
def test_required_record_fields(missing: str) -> None:
    found = errors(validate_register_non_pii, changed(record(), missing, DELETE))
    assert found == [FieldError(missing, "required")]


@pytest.mark.parametrize("schema", list(EXAMPLES))
def test_required_payslip_fields(schema: str) -> None:
    for key in EXAMPLES[schema][0]:
        body = changed(record(schema), f"{P}.{key}", DELETE)
        assert payslip_paths(body) == [f"{P}.{key}"], key


# --- schema selection ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["au.payslip.v3", "AU.PAYSLIP.V1", "", 1, None, ["au.payslip.v1"]]
)
def test_unknown_schema_fails_once_at_schema(value: object) -> None:
    body = changed(record(), "schema", value)
    body = changed(body, f"{P}.gross_cents", "not checked")
    assert payslip_paths(body) == ["schema"]


def test_payslip_is_checked_against_the_named_schema() -> None:
    body = record("nz.payslip.v1", AU_V1_MIN)
    assert errors(validate_register_non_pii, body) == [
        FieldError(f"{P}.paye_cents", "required"),
        FieldError(f"{P}.paygw_cents", "unknown field"),
        FieldError(f"{P}.ytd_paygw_cents", "unknown field"),
    ]


def test_payslip_not_an_object() -> None:
    assert errors(validate_register_non_pii, changed(record(), P, [])) == [
        FieldError(P, "expected an object")
    ]


# --- enumerations, patterns and checksums --------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "path", "value"),
    [
        ("au.payslip.v1", "currency", "JPY"),
        ("au.payslip.v1", "currency", "aud"),
        ("au.payslip.v1", "pay_frequency", "four_weekly"),
        ("au.payslip.v1", "employment_basis", "contractor"),
        ("au.payslip.v1", "engagement_type", "temporary"),
        ("au.payslip.v1", "earnings.0.type", "etp"),
        ("au.payslip.v1", "earnings.2.leave_type", "annual"),
        ("au.payslip.v1", "salary_sacrifice.0.type", "car"),
        ("au.payslip.v1", "deductions.0.type", "union_fees"),
        ("au.payslip.v1", "superannuation.0.contribution_type", "voluntary"),
        ("nz.payslip.v1", "pay_cycle", "monthly_ish"),
        ("nz.payslip.v1", "tax_code", "m"),
        ("nz.payslip.v1", "tax_code", "M  SL"),
        ("nz.payslip.v1", "tax_code", "ABCDE"),
        ("nz.payslip.v1", "employment_type", "permanent"),
        ("nz.payslip.v1", "earnings.0.type", "paid_leave"),
        ("nz.payslip.v1", "leave_balances.annual.unit", "months"),
        ("au.payslip.v2", "pay_frequency", "daily"),
        ("au.payslip.v2", "award", ""),
        ("au.payslip.v2", "award", "x" * 201),
        ("nz.payslip.v2", "tax_code", ""),
        ("nz.payslip.v2", "employment_type", "x" * 51),
        ("nz.payslip.v2", "earnings.0.type", "lump_sum"),
        ("nz.payslip.v2", "deductions.0.type", "union_professional_fees"),
        ("nz.payslip.v2", "leave_balances.sick.unit", "fortnights"),
    ],
)
def test_bad_values_fail_at_their_path(schema: str, path: str, value: object) -> None:
    body = changed(record(schema, EXAMPLES[schema][1]), f"{P}.{path}", value)
    assert payslip_paths(body) == [f"{P}.{path}"]


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("fund_abn", VALID_ABN, True),
        ("fund_abn", "51824753557", False),
        ("fund_abn", "5182475355", False),
        ("fund_abn", "518247535560", False),
        ("fund_abn", "51 824 753 556", False),
        ("fund_abn", 51824753556, False),
        ("usi", VALID_ABN + "001", True),
        ("usi", "51824753557001", False),
        ("usi", VALID_ABN + "01", False),
        ("usi", "ABC1234AB", True),
        ("usi", "abc1234ab", False),
        ("usi", "AB1234ABC", False),
    ],
)
def test_super_fund_identifiers(field: str, value: object, ok: bool) -> None:
    body = changed(record("au.payslip.v1", AU_V1_FULL), f"{P}.superannuation.0.{field}", value)
    if ok:
        validate_register_non_pii(body)
    else:
        assert payslip_paths(body) == [f"{P}.superannuation.0.{field}"]


def test_v2_usi_checksum() -> None:
    body = changed(record("au.payslip.v2", AU_V2_FULL), f"{P}.superannuation.0.usi", "1" * 14)
    assert payslip_paths(body) == [f"{P}.superannuation.0.usi"]


# --- conditional earning fields ------------------------------------------------------------------


def earning_paths(schema: str, earning: dict[str, Any]) -> list[FieldError]:
    base = EXAMPLES[schema][0]
    amount = "amount_cents" if schema.endswith("v1") else "amount"
    payslip = {**base, "earnings": [{amount: 1 if amount == "amount_cents" else "1", **earning}]}
    try:
        validate_register_non_pii(record(schema, payslip))
    except SchemaValidationError as exc:
        return [
            FieldError(e.path.removeprefix(f"{P}.earnings.0."), e.message) for e in exc.field_errors
        ]
    return []


@pytest.mark.parametrize("schema", ["au.payslip.v1", "au.payslip.v2"])
@pytest.mark.parametrize(
    ("earning", "expected"),
    [
        ({"type": "allowance"}, [("allowance_type", "required when type is allowance")]),
        ({"type": "allowance", "allowance_type": "tools"}, []),
        (
            {"type": "ordinary", "allowance_type": "tools"},
            [("allowance_type", "not allowed unless type is allowance")],
        ),
        (
            # A refused field is not also checked for its value.
            {"type": "ordinary", "allowance_type": "not-a-kind"},
            [("allowance_type", "not allowed unless type is allowance")],
        ),
        (
            {"type": "allowance", "allowance_type": "other"},
            [("other_category", "required when type is allowance and allowance_type is other")],
        ),
        ({"type": "allowance", "allowance_type": "other", "other_category": "general"}, []),
        (
            {"type": "allowance", "allowance_type": "laundry", "other_category": "general"},
            [
                (
                    "other_category",
                    "not allowed unless type is allowance and allowance_type is other",
                )
            ],
        ),
        (
            {"type": "overtime", "other_category": "general"},
            [
                (
                    "other_category",
                    "not allowed unless type is allowance and allowance_type is other",
                )
            ],
        ),
        ({"type": "paid_leave"}, [("leave_type", "required when type is paid_leave")]),
        (
            {"type": "bonus_commission", "leave_type": "paid_parental"},
            [("leave_type", "not allowed unless type is paid_leave")],
        ),
    ],
)
def test_au_conditional_earning_fields(
    schema: str, earning: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert earning_paths(schema, earning) == [FieldError(*e) for e in expected]


@pytest.mark.parametrize(
    ("earning", "expected"),
    [
        ({"type": "lump_sum"}, ["lump_sum_type"]),
        ({"type": "lump_sum", "lump_sum_type": "c"}, ["lump_sum_type"]),
        ({"type": "ordinary", "lump_sum_type": "b"}, ["lump_sum_type"]),
        ({"type": "etp"}, ["etp_type", "etp_component"]),
        ({"type": "etp", "etp_type": "redundancy"}, ["etp_component"]),
        ({"type": "etp", "etp_type": "redundancy", "etp_component": "taxable"}, []),
        ({"type": "etp", "etp_type": "golden", "etp_component": "taxable"}, ["etp_type"]),
        ({"type": "other", "etp_component": "taxable"}, ["etp_component"]),
        ({"type": "lump_sum", "lump_sum_type": "d", "etp_type": "other"}, ["etp_type"]),
    ],
)
def test_au_v2_lump_sum_and_etp_fields(earning: dict[str, Any], expected: list[str]) -> None:
    assert [e.path for e in earning_paths("au.payslip.v2", earning)] == expected


def test_au_v1_has_no_etp() -> None:
    found = earning_paths("au.payslip.v1", {"type": "lump_sum", "lump_sum_type": "a_other"})
    assert found == [FieldError("lump_sum_type", "unknown field")]


@pytest.mark.parametrize(
    ("earning", "expected"),
    [
        ({"type": "paid_leave"}, ["leave_type"]),
        ({"type": "paid_leave", "leave_type": "cash_out_in_service"}, ["leave_type"]),
        ({"type": "paid_leave", "leave_type": "bereavement_leave"}, []),
        ({"type": "allowance"}, ["allowance_type"]),
        ({"type": "allowance", "allowance_type": "laundry"}, ["allowance_type"]),
        ({"type": "allowance", "allowance_type": "other"}, []),
        ({"type": "allowance", "allowance_type": "other", "other_category": "general"}, []),
        ({"type": "ordinary", "allowance_type": "meal"}, ["allowance_type"]),
        ({"type": "ordinary", "leave_type": "sick_leave"}, ["leave_type"]),
    ],
)
def test_nz_v2_conditional_earning_fields(earning: dict[str, Any], expected: list[str]) -> None:
    found = [e.path for e in earning_paths("nz.payslip.v2", earning)]
    if "other_category" in earning:
        expected = ["other_category"]
    assert found == expected


def test_conditional_rules_report_alongside_other_errors() -> None:
    found = earning_paths("au.payslip.v1", {"type": "allowance", "units": -1})
    assert sorted(e.path for e in found) == ["allowance_type", "units"]


def test_conditional_rules_wait_for_a_valid_type() -> None:
    found = earning_paths("au.payslip.v1", {"type": "mystery", "allowance_type": "tools"})
    assert [e.path for e in found] == ["type"]


# --- v2 decimals and currencies ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [12.5, 12, "1.", ".5", "1e3", "+1", " 1", "1,000", "", True, None]
)
@pytest.mark.parametrize(
    ("schema", "path"),
    [
        ("au.payslip.v2", "gross"),
        ("au.payslip.v2", "hourly.hours"),
        ("au.payslip.v2", "earnings.0.units"),
        ("au.payslip.v2", "superannuation.0.rate"),
        ("au.payslip.v2", "ytd.super"),
        ("nz.payslip.v2", "hours_paid"),
        ("nz.payslip.v2", "leave_balances.annual.amount"),
        ("nz.payslip.v2", "earnings.0.ytd_amount"),
        ("nz.payslip.v2", "prior_period_gross_adjustment"),
        ("nz.payslip.v2", "prior_period_paye_adjustment"),
        ("nz.payslip.v2", "payroll_donation_tax_credit"),
        ("nz.payslip.v2", "slcir"),
        ("nz.payslip.v2", "slbor"),
    ],
)
def test_v2_figures_must_be_decimal_strings(schema: str, path: str, value: object) -> None:
    body = changed(record(schema, EXAMPLES[schema][1]), f"{P}.{path}", value)
    assert payslip_paths(body) == [f"{P}.{path}"]


@pytest.mark.parametrize("schema", ["au.payslip.v2", "nz.payslip.v2"])
@pytest.mark.parametrize(
    ("currency", "ok"),
    [
        ("JPY", True),
        ("XOF", True),
        ("KWD", True),
        ("EUR", True),
        ("XAU", False),
        ("XTS", False),
        ("XXX", False),
        ("XDR", False),
        ("CHE", False),
        ("CLF", False),
        ("UYW", False),
        ("HRK", False),
        ("jpy", False),
        ("ABC", False),
        (392, False),
    ],
)
def test_v2_currency(schema: str, currency: object, ok: bool) -> None:
    body = changed(record(schema), f"{P}.currency", currency)
    if ok:
        validate_register_non_pii(body)
    else:
        assert payslip_paths(body) == [f"{P}.currency"]


# --- encryption metadata and per-operation fields ------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("iv", "A" * 16, True),
        ("iv", "A" * 15, False),
        ("iv", "A" * 17, False),
        ("iv", "A" * 15 + "=", False),
        ("iv", "A" * 15 + "+", False),
        ("tag", "_-" * 11, True),
        ("tag", "A" * 21, False),
        ("tag", "A" * 22 + "==", False),
        ("key_version", KEY_VERSION, True),
        ("key_version", KEY_VERSION[:-2] + ".999999", True),
        ("key_version", KEY_VERSION[:-2] + ".0", False),
        ("key_version", KEY_VERSION[:-2] + ".01", False),
        ("key_version", KEY_VERSION[:-2] + ".1000000", False),
        ("key_version", KEY_VERSION.upper(), False),
        ("key_version", "not-a-uuid.1", False),
        ("key_version", None, False),
    ],
)
def test_encryption_metadata(field: str, value: object, ok: bool) -> None:
    body = changed(record(), f"encryption_metadata.{field}", value)
    if ok:
        validate_register_non_pii(body)
    else:
        assert payslip_paths(body) == [f"encryption_metadata.{field}"]


@pytest.mark.parametrize("missing", ["iv", "tag"])
def test_iv_and_tag_are_required(missing: str) -> None:
    body = changed(record(), f"encryption_metadata.{missing}", DELETE)
    assert payslip_paths(body) == [f"encryption_metadata.{missing}"]


def test_register_non_pii_reference_is_optional_and_strict() -> None:
    body = {**record(), "service_reference": REFERENCE}
    assert validate_register_non_pii(body).service_reference == REFERENCE
    for bad in ["A" * 21, "A" * 23, "A" * 21 + "=", "A" * 21 + ".", 5]:
        assert payslip_paths({**body, "service_reference": bad}) == ["service_reference"]
    assert payslip_paths({**body, "encrypted_pii": "abc"}) == ["encrypted_pii"]
    assert payslip_paths({**body, "external_id": "x"}) == ["external_id"]


def test_register_and_build_needs_ciphertext_and_refuses_a_reference() -> None:
    body = build_body()
    assert paths(validate_register_and_build, changed(body, "encrypted_pii", DELETE)) == [
        "encrypted_pii"
    ]
    found = errors(validate_register_and_build, {**body, "service_reference": REFERENCE})
    assert found == [FieldError("service_reference", "unknown field")]
    validate_register_and_build({**body, "encrypted_pii": "A" * 2886})
    for bad in ["", "A" * 2887, "QQ==", "a b", "é"]:
        assert paths(validate_register_and_build, {**body, "encrypted_pii": bad}) == [
            "encrypted_pii"
        ]


# --- batch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], [FieldError("", "expected an object")]),
        (None, [FieldError("", "expected an object")]),
        ({}, [FieldError("records", "required")]),
        ({"records": {}}, [FieldError("records", "expected an array")]),
        ({"records": "x"}, [FieldError("records", "expected an array")]),
        ({"records": []}, [FieldError("records", "expected at least 1 item(s)")]),
        ({"records": [{}] * 1001}, [FieldError("records", "expected at most 1000 item(s)")]),
        (
            {"records": [{}, 3, []]},
            [
                FieldError("records.1", "expected an object"),
                FieldError("records.2", "expected an object"),
            ],
        ),
        ({"records": [{}], "dry_run": True}, [FieldError("dry_run", "unknown field")]),
    ],
)
def test_batch_envelope_failures(body: object, expected: list[FieldError]) -> None:
    assert errors(validate_batch_envelope, body) == expected


def test_batch_envelope_leaves_records_to_per_record_validation() -> None:
    items = [batch_item(), {"nonsense": True}, {}]
    assert validate_batch_envelope({"records": items}) == items
    assert len(validate_batch_envelope({"records": [{}] * 1000})) == 1000


def test_batch_record_errors_are_relative_to_the_record() -> None:
    item = changed(batch_item(), f"{P}.gross_cents", "1")
    found = errors(validate_batch_record, item)
    assert found == [FieldError(f"{P}.gross_cents", found[0].message)]
    assert SchemaValidationError(found).detail.startswith(f"{P}.gross_cents: expected an integer")


def test_batch_record_reference_required_external_id_optional() -> None:
    item = batch_item()
    assert paths(validate_batch_record, changed(item, "service_reference", DELETE)) == [
        "service_reference"
    ]
    assert validate_batch_record(changed(item, "external_id", DELETE)).external_id is None
    assert validate_batch_record({**item, "external_id": " ~" + "x" * 253}).external_id
    for bad in ["", "x" * 256, "café", "line\nbreak", "tab\t", 7, None]:
        assert paths(validate_batch_record, {**item, "external_id": bad}) == ["external_id"]
    assert paths(validate_batch_record, {**item, "encrypted_pii": "abc"}) == ["encrypted_pii"]


# --- verify --------------------------------------------------------------------------------------


def test_verify_body() -> None:
    assert validate_verify({"barcode": "2|" + "A" * 12998}).barcode.startswith("2|")
    assert validate_verify({"barcode": " x "}).barcode == " x "
    for bad in ["", "x" * 13001, 5, None, ["x"]]:
        assert paths(validate_verify, {"barcode": bad}) == ["barcode"]
    assert paths(validate_verify, {}) == ["barcode"]
    assert paths(validate_verify, {"barcode": "x", "fragment": "y"}) == ["fragment"]


# --- no value in any message ---------------------------------------------------------------------

SECRET = "Jane Citizen 0412 555 019"


def test_messages_never_echo_the_submitted_values() -> None:
    body = record("au.payslip.v1", AU_V1_FULL)
    for path in [
        "schema",
        "issued_at",
        "encryption_metadata.iv",
        "encryption_metadata.tag",
        "encryption_metadata.key_version",
        f"{P}.period_start",
        f"{P}.currency",
        f"{P}.gross_cents",
        f"{P}.pay_frequency",
        f"{P}.hourly.hours",
        f"{P}.earnings.0.type",
        f"{P}.earnings.3.allowance_type",
        f"{P}.superannuation.0.usi",
        f"{P}.superannuation.0.fund_abn",
        f"{P}.ytd",
    ]:
        body = changed(body, path, SECRET)
    body["service_reference"] = SECRET
    with pytest.raises(SchemaValidationError) as info:
        validate_register_non_pii(body)
    exc = info.value
    assert len(exc.field_errors) >= 3
    assert SECRET not in repr(exc.field_errors)
    assert SECRET not in str(exc)
    assert exc.__cause__ is None and exc.__suppress_context__

    v2 = record("nz.payslip.v2", NZ_V2_FULL)
    for path in ["currency", "gross", "tax_code", "earnings.1.leave_type", "leave_balances"]:
        v2 = changed(v2, f"{P}.{path}", SECRET if path != "tax_code" else SECRET * 3)
    v2_errors = errors(validate_register_non_pii, v2)
    assert len(v2_errors) == 5
    assert SECRET not in repr(v2_errors)


@settings(max_examples=60, deadline=None)
@given(
    value=st.one_of(
        st.text(alphabet="#@!~&*%|", min_size=3),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    ),
    path=st.sampled_from(
        [
            "schema",
            "issued_at",
            f"{P}.payment_date",
            f"{P}.gross_cents",
            f"{P}.currency",
            f"{P}.earnings.0.units",
            f"{P}.deductions.0.type",
        ]
    ),
)
def test_messages_never_echo_generated_values(value: object, path: str) -> None:
    body = changed(record("au.payslip.v1", AU_V1_FULL), path, value)
    try:
        validate_register_non_pii(body)
    except SchemaValidationError as exc:
        assert exc.field_errors and all(e.path == path for e in exc.field_errors)
        assert str(value) not in str(exc)
    else:
        assert path == f"{P}.earnings.0.units" and isinstance(value, float) and value >= 0


# --- OpenAPI components and layering -------------------------------------------------------------


def test_openapi_components_are_self_contained_json_schemas() -> None:
    components = openapi_components()
    for name in [
        "RegisterNonPiiRequest",
        "RegisterAndBuildRequest",
        "BatchRequest",
        "BatchRecord",
        "VerifyRequest",
        "EncryptionMetadata",
        "AuPayslipV1",
        "NzPayslipV1",
        "AuPayslipV2",
        "NzPayslipV2",
    ]:
        assert components[name]["type"] == "object"
        assert components[name]["additionalProperties"] is False
    text = json.dumps(components)
    refs = {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}
    assert refs <= set(components)
    assert '"null"' not in text
    record_schema = components["RegisterNonPiiRequest"]
    assert "service_reference" not in record_schema["required"]
    assert "encrypted_pii" in components["RegisterAndBuildRequest"]["required"]
    assert "service_reference" not in components["RegisterAndBuildRequest"]["properties"]
    assert components["BatchRequest"]["properties"]["records"]["maxItems"] == 1000
    assert {rule["if"]["properties"]["schema"]["const"] for rule in record_schema["allOf"]} == set(
        PAYSLIP_SCHEMAS
    )
    assert "JPY" in components["AuPayslipV2"]["properties"]["currency"]["enum"]
    assert "XAU" not in components["AuPayslipV2"]["properties"]["currency"]["enum"]


def test_schemas_import_no_framework_store_or_gui() -> None:
    code = (
        "import sys, service.protocol.schemas\n"
        "bad = [m for m in ('bottle', 'tinydb', 'psycopg', 'PySide6') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
