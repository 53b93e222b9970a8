"""What the desk reads: money in the payslip's currency, dates, masked accounts, plain errors."""

from __future__ import annotations

import pytest

from app.api.errors import fallback_code_for_status
from app.verify.presentation import (
    employee_lines,
    error_message,
    format_abn,
    line_items,
    long_date,
    mask_account,
    money,
    summary_lines,
    timestamp,
)
from app.verify.verdicts import (
    EXIT_STATUS,
    INPUT_PROBLEMS,
    MEANINGS,
    NOT_A_PAYSLIP_CODE,
    meaning_of,
)
from service.protocol.errors import ErrorCode
from service.protocol.schemas import EmployeePii
from service.protocol.vocabulary import Verdict
from testbed.factories import AU_V1, verification_result


@pytest.mark.parametrize(
    ("value", "currency", "cents", "shown"),
    [
        (384615, "AUD", True, "$3,846.15 AUD"),
        (-1250, "NZD", True, "-$12.50 NZD"),
        ("3200.00", "NZD", False, "$3,200.00 NZD"),
        ("1.5", "EUR", False, "€1.5 EUR"),
        ("384615", "JPY", False, "¥384,615 JPY"),
        (100, "GBP", True, "£1.00 GBP"),
    ],
)
def test_money_is_formatted_in_the_payslips_currency(
    value: object, currency: str, cents: bool, shown: str
) -> None:
    assert money(value, currency, cents=cents) == shown


def test_dates_read_as_dates() -> None:
    assert long_date("2026-11-13") == "13 Nov 2026"
    assert long_date("not a date") == "not a date"


def test_bank_accounts_show_only_the_last_three_digits() -> None:
    assert mask_account("12345678") == "•••••678"
    assert mask_account("12-3456-7890123-00") == "••-••••-••••••3-00"
    assert mask_account("12") == "12"


def test_employee_block_masks_unless_revealed() -> None:
    employee = EmployeePii(employee_name="Alex Example", account_number="12345678")
    assert ("Account", "•••••678") in employee_lines(employee, reveal=False)
    assert ("Account", "12345678") in employee_lines(employee, reveal=True)
    assert ("Employee", "Alex Example") in employee_lines(employee, reveal=False)


def test_summary_and_lines_of_a_v1_payslip() -> None:
    earnings = [{"type": "ordinary", "units": 76, "rate_cents": 4800, "amount_cents": 364800}]
    result = verification_result({**AU_V1["payslip_non_pii"], "earnings": earnings})
    lines = dict(summary_lines(result))
    assert lines["Issuer"] == "Demo Payroll"
    assert lines["Net pay"] == "$3,064.15 AUD"
    assert lines["Pay period"] == "30 Oct 2026 – 12 Nov 2026"
    rows = line_items(result.payslip.payslip_non_pii)
    assert rows == [("Earnings", "Ordinary", "76 × $48.00 AUD", "$3,648.00 AUD")]


PROTOCOL_CODES = [str(code) for code in ErrorCode]
"""PROTOCOL §6's error table, every row (tests/service/protocol/test_error_codes.py holds it to
§6)."""
CLIENT_CODES = [
    "SERVICE_UNREACHABLE",
    "INVALID_RESPONSE",
    "API_ERROR",
    *(fallback_code_for_status(s) for s in (400, 418, 502, 599)),
]


@pytest.mark.parametrize("code", PROTOCOL_CODES + CLIENT_CODES)
def test_every_error_code_has_a_verdict_and_plain_words(code: str) -> None:
    meaning = MEANINGS[code]
    assert meaning.verdict in EXIT_STATUS
    assert code not in meaning.words and "_" not in meaning.words
    assert meaning.instruction and meaning.instruction.endswith(".")
    assert error_message(code) == meaning.words


@pytest.mark.parametrize("code", list(ErrorCode), ids=str)
def test_every_wire_code_has_the_protocols_verdict(code: ErrorCode) -> None:
    """The app's table covers every wire code, and the verdict is the protocol's own."""
    assert code in MEANINGS
    assert MEANINGS[code].verdict == code.verdict
    assert meaning_of(str(code)) is MEANINGS[code]


def test_the_three_verdicts_mean_one_thing_each() -> None:
    not_verified = {c for c, m in MEANINGS.items() if m.verdict == Verdict.NOT_VERIFIED}
    assert not_verified == {
        "REVOKED",
        "DECRYPTION_FAILED",
        "SERVICE_REFERENCE_NOT_FOUND",
        "KEY_VERSION_UNAVAILABLE",
        "VALIDATION_FAILED",
        "CONFLICTING_CODES",
        "DOCUMENT_ALTERED",
    }
    assert {c for c, m in MEANINGS.items() if m.verdict == Verdict.VERIFIED} == {"VERIFIED"}
    for code in (
        "SERVICE_UNREACHABLE",
        "RATE_LIMITED",
        "SERVICE_UNAVAILABLE",
        "INTERNAL_ERROR",
        "UNAUTHORIZED",
    ):
        assert MEANINGS[code].verdict == Verdict.CANNOT_VERIFY
    assert all(
        m.instruction.startswith("Do not accept") for c, m in MEANINGS.items() if c in not_verified
    )
    assert MEANINGS["VERIFIED"].instruction == "Accept this payslip."
    # A code from a newer service never turns into "not verified".
    assert meaning_of("SOMETHING_NEW").verdict == Verdict.CANNOT_VERIFY
    assert EXIT_STATUS == {Verdict.VERIFIED: 0, Verdict.NOT_VERIFIED: 1, Verdict.CANNOT_VERIFY: 2}
    assert INPUT_PROBLEMS["NOT_A_PAYSLIP_CODE"] == NOT_A_PAYSLIP_CODE
    assert set(INPUT_PROBLEMS).isdisjoint(MEANINGS)


def test_ird_numbers_are_masked_like_accounts_and_abns_are_grouped() -> None:
    employee = EmployeePii(
        employee_name="Sam Sample", ird_number="123-456-789", employer_identity="51824753556"
    )
    lines = employee_lines(employee, reveal=False)
    assert ("IRD number", "•••-•••-789") in lines
    assert ("Employer ABN", "51 824 753 556") in lines
    assert ("IRD number", "123-456-789") in employee_lines(employee, reveal=True)
    named = employee_lines(EmployeePii(employer_identity="Acme Stores Pty Ltd"), reveal=False)
    assert named == [("Employer", "Acme Stores Pty Ltd")]
    assert format_abn("51 824 753 556") == "51 824 753 556"
    assert format_abn("5182475355") is None and format_abn("ABC51824753556") is None


def test_times_are_local_to_the_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Pacific/Auckland")
    time.tzset()
    try:
        assert timestamp("2026-11-21T10:00:59.123Z") == "21 Nov 2026 23:00"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert timestamp("") == "" and timestamp("garbage") == "garbage"
