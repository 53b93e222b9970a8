"""The date and timestamp rules are regular expressions (so pydantic-core runs them without a
Python call per value); these tests hold them to what `datetime` calls a real date and time."""

from __future__ import annotations

import re
from datetime import date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.protocol.schemas import validate_register_non_pii
from service.protocol.schemas.scalars import UTC_TIMESTAMP, is_calendar_date
from tests.service.protocol.test_schemas import P, changed, errors, record


def _by_datetime(text: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


# Days that decide the calendar: the ends of every month, one past them, and 00.
EDGES = (
    "01-00",
    "01-01",
    "01-31",
    "01-32",
    "02-28",
    "02-29",
    "02-30",
    "04-30",
    "04-31",
    "06-31",
    "09-31",
    "11-31",
    "12-31",
    "12-32",
    "00-01",
    "13-01",
    "19-01",
    "10-31",
)


def test_every_year_agrees_with_datetime_on_the_days_that_decide() -> None:
    wrong = [
        text
        for year in range(10_000)
        for day in EDGES
        if is_calendar_date(text := f"{year:04d}-{day}") != _by_datetime(text)
    ]
    assert wrong == []


@pytest.mark.parametrize("year", [0, 4, 100, 400, 1900, 2000, 2023, 2024, 2100, 9999])
def test_every_month_and_day_agrees_with_datetime(year: int) -> None:
    texts = [f"{year:04d}-{month:02d}-{day:02d}" for month in range(100) for day in range(100)]
    assert [t for t in texts if is_calendar_date(t) != _by_datetime(t)] == []


@given(st.text(alphabet="0123456789-T:.Z ", max_size=24))
def test_any_text_agrees_with_datetime(text: str) -> None:
    assert is_calendar_date(text) == _by_datetime(text)
    expected = bool(
        re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z", text)
    )
    if expected:
        try:
            datetime.fromisoformat(text[:19])
        except ValueError:
            expected = False
    assert bool(re.fullmatch(UTC_TIMESTAMP, text)) == expected


@pytest.mark.parametrize("value", ["2024-02-29", "2000-02-29", "0001-01-01", "9999-12-31"])
def test_real_dates_pass_validation_as_sent(value: str) -> None:
    body = changed(record(), f"{P}.payment_date", value)
    assert validate_register_non_pii(body).payslip_non_pii_json()["payment_date"] == value


def test_every_time_of_day_agrees_with_datetime() -> None:
    texts = [
        f"2024-02-29T{hour:02d}:{minute:02d}:{second}Z"
        for hour in range(100)
        for minute in range(100)
        for second in ("00", "59", "60", "59.5")
    ]
    wrong = []
    for text in texts:
        try:
            real = datetime.fromisoformat(text[:19]) is not None
        except ValueError:
            real = False
        if bool(re.fullmatch(UTC_TIMESTAMP, text)) != real:
            wrong.append(text)
    assert wrong == []


@pytest.mark.parametrize(
    "value", ["1900-02-29", "2100-02-29", "2024-04-31", "0000-02-29", 20240229]
)
def test_unreal_dates_fail_validation_with_their_message(value: object) -> None:
    body = changed(record(), f"{P}.payment_date", value)
    assert [(e.path, e.message) for e in errors(validate_register_non_pii, body)] == [
        (f"{P}.payment_date", "expected a real calendar date as YYYY-MM-DD")
    ]


@pytest.mark.parametrize("value", ["2024-07-01T24:00:00Z", "2023-02-29T00:00:00Z", 1719792000])
def test_unreal_timestamps_fail_validation_with_their_message(value: object) -> None:
    assert [
        (e.path, e.message)
        for e in errors(validate_register_non_pii, changed(record(), "issued_at", value))
    ] == [
        (
            "issued_at",
            "expected a UTC timestamp as YYYY-MM-DDTHH:MM:SS with optional fractional seconds "
            "and a trailing Z",
        )
    ]
