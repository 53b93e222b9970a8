"""Money, dates and names as PROTOCOL §13 reads them: every listed format, day first, and
nothing else (a value that does not parse can never accuse a page)."""

from __future__ import annotations

from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from app.document.names import name_words
from app.document.values import (
    format_money,
    is_name_like,
    name_shown,
    near_name,
    parse_date,
    parse_money,
    parse_period,
)

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]  # fmt: skip


def _grouped(whole: int, separator: str) -> str:
    return f"{whole:,}".replace(",", separator)


@given(
    minor=st.integers(min_value=-(10**11), max_value=10**11),
    digits=st.sampled_from([0, 2, 3]),
    separator=st.sampled_from(["", ",", " "]),
    affix=st.sampled_from(["", "$", "A$", "NZ$", "AUD ", "€", " AUD", " NZD"]),
    parentheses=st.booleans(),
)
def test_money_in_every_format_is_the_same_minor_units(
    minor: int, digits: int, separator: str, affix: str, parentheses: bool
) -> None:
    plain = format_money(abs(minor), digits)
    whole, _, fraction = plain.partition(".")
    number = (_grouped(int(whole), separator) if separator else whole) + (
        f".{fraction}" if digits else ""
    )
    shown = f"{number}{affix}" if affix.startswith(" ") else f"{affix}{number}"
    if minor < 0:
        shown = f"({shown})" if parentheses else f"-{shown}"
    assert parse_money(shown, digits) == minor


@given(minor=st.integers(min_value=0, max_value=10**9))
def test_money_needs_exactly_the_minor_digits(minor: int) -> None:
    assert parse_money(format_money(minor, 2), 2) == minor
    assert parse_money(format_money(minor, 2), 3) is None  # 3,846.15 is no KWD amount
    assert parse_money(format_money(minor, 3), 2) is None
    assert parse_money(str(minor), 2) is None  # hours, a count: no money


def test_not_money() -> None:
    for text in (
        "38.00.1",
        "1,23.45",
        "12,3456.00",
        "(12.50",
        "-(12.50)",
        "$",
        "",
        "AUD",
        "1,234 567.00",
    ):
        assert parse_money(text, 2) is None, text
    assert parse_money("45.5000", 2) is None  # a rate, four decimals


@given(day=st.dates(min_value=date(1990, 1, 1), max_value=date(2099, 12, 31)))
def test_dates_in_every_format_are_read_day_first(day: date) -> None:
    month = _MONTHS[day.month - 1]
    shown = [
        f"{day.day}/{day.month}/{day.year}",
        f"{day.day:02d}/{day.month:02d}/{day.year}",
        f"{day.day}.{day.month}.{day.year}",
        day.isoformat(),
        f"{day.day} {month[:3]} {day.year}",
        f"{day.day} {month} {day.year}",
        f"{month[:3]} {day.day}, {day.year}",
        f"{day.day} {month.upper()} {day.year}",
    ]
    for text in shown:
        assert parse_date(text) == day, text


def test_day_first_and_impossible_days() -> None:
    assert parse_date("03/04/2026") == date(2026, 4, 3)
    assert parse_date("31/02/2026") is None
    assert parse_date("13/13/2026") is None
    assert parse_date("2026/11/13") is None
    assert parse_date("13 Foo 2026") is None


@given(
    first=st.dates(min_value=date(2000, 1, 1), max_value=date(2090, 1, 1)),
    length=st.integers(min_value=0, max_value=40),
    joiner=st.sampled_from([" to ", " - ", " – ", "–", " TO "]),
)
def test_periods(first: date, length: int, joiner: str) -> None:
    from datetime import timedelta

    last = first + timedelta(days=length)
    assert parse_period(f"{first:%d/%m/%Y}{joiner}{last:%d/%m/%Y}") == (first, last)
    assert parse_period(f"{first.isoformat()} to {last.isoformat()}") == (first, last)


def test_names_match_as_words_of_the_registered_name() -> None:
    assert name_shown("Amelia Rosenthal", "AMELIA ROSENTHAL")
    assert name_shown("Amelia Rosenthal", "Rosenthal, Amelia (ID 0042)")
    assert name_shown("José Álvarez-Núñez", "ALVAREZ NUNEZ, Jose")
    assert not name_shown("Amelia Rosenthal", "Amelia Rose")
    assert not name_shown("", "Amelia")
    assert near_name("Jane Smith", "Jane Srnith") and not near_name("Jane Smith", "John Citizen")
    assert is_name_like("Jane Smith") and not is_name_like("AUD 4,280.90")
    assert not is_name_like("13 Nov 2026")


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéáñüøçÅ", min_size=1, max_size=8)


@given(words=st.lists(_word, min_size=1, max_size=4), extra=st.lists(_word, max_size=3))
def test_any_order_case_and_extra_words_match(words: list[str], extra: list[str]) -> None:
    registered = " ".join(words)
    shown = ", ".join(w.upper() for w in reversed(words + extra))
    assert name_shown(registered, shown)
    assert name_shown(registered, f"({shown.lower()})")
    rest = " ".join(words[1:])
    if name_words(words[0]) - name_words(rest):  # the first word, as names are compared, is
        assert not name_shown(registered, rest)  # missing from the rest ("c" and "ç" are one)
