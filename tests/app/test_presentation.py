"""What the desk reads: money in the payslip's currency, dates, masked accounts, plain errors."""

from __future__ import annotations

import pytest

from app.presentation import (
    ERROR_MESSAGES,
    employee_lines,
    error_message,
    line_items,
    long_date,
    mask_account,
    money,
    summary_lines,
)


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
    employee = {"employee_name": "Alex Example", "account_number": "12345678"}
    assert ("Account", "•••••678") in employee_lines(employee, reveal=False)
    assert ("Account", "12345678") in employee_lines(employee, reveal=True)
    assert ("Employee", "Alex Example") in employee_lines(employee, reveal=False)


def test_summary_and_lines_of_a_v1_payslip() -> None:
    result = {
        "payslip": {
            "issuer": {"name": "Demo Payroll"},
            "payslip_non_pii": {
                "period_start": "2026-10-30",
                "period_end": "2026-11-12",
                "payment_date": "2026-11-13",
                "currency": "AUD",
                "gross_cents": 384615,
                "paygw_cents": 78200,
                "net_cents": 306415,
                "earnings": [{"type": "ordinary", "units": 76, "rate_cents": 4800,
                              "amount_cents": 364800}],
            },
        }
    }
    lines = dict(summary_lines(result))
    assert lines["Issuer"] == "Demo Payroll"
    assert lines["Net pay"] == "$3,064.15 AUD"
    assert lines["Pay period"] == "30 Oct 2026 – 12 Nov 2026"
    rows = line_items(result["payslip"]["payslip_non_pii"])  # type: ignore[index]
    assert rows == [("Earnings", "Ordinary", "76 × $48.00 AUD", "$3,648.00 AUD")]


def test_every_service_error_code_has_plain_words() -> None:
    codes = ["DECRYPTION_FAILED", "SERVICE_REFERENCE_NOT_FOUND", "VALIDATION_FAILED",
             "KEY_VERSION_UNAVAILABLE", "UNAUTHORIZED", "FORBIDDEN", "RATE_LIMITED",
             "SERVICE_UNAVAILABLE", "SERVICE_UNREACHABLE", "PAYLOAD_TOO_LARGE",
             "UNSUPPORTED_MEDIA_TYPE", "INTERNAL_ERROR"]
    for code in codes:
        assert code in ERROR_MESSAGES
        assert code not in error_message(code)
    assert "altered" in error_message("DECRYPTION_FAILED")
    assert error_message("SOMETHING_NEW")
