"""Money, dates and names as a page shows them (PROTOCOL §13), parsed strictly.

A value that does not parse is *not of the field's kind* and so can never make a field differ:
an unusual format is a miss at worst, never a false alarm. Money needs exactly the currency's
minor digits ("4,280.90" for AUD, "384,615" for JPY), so hours ("38") or rates ("45.5000") are
no money. Dates are day first (``03/04/2026`` is 3 April).
"""

from __future__ import annotations

import re
from datetime import date

from app.document.names import name_words

_SEPARATORS = ", \u00a0\u202f\u2009"
_MONEY = re.compile(
    r"""^(?P<open>\()?\s*(?P<minus1>[-\u2212])?\s*
    (?:(?P<code1>[A-Za-z]{3})\s*|(?P<symbol>[A-Z]{0,3}\$|[€£¥])\s*)?
    (?P<minus2>[-\u2212])?\s*
    (?P<whole>\d{1,3}(?:[, \u00a0\u202f\u2009]\d{3})+|\d+)
    (?:\.(?P<fraction>\d+))?
    \s*(?P<code2>[A-Za-z]{3})?\s*(?P<close>\))?$""",
    re.VERBOSE,
)
MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAY = r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*\.?,?\s+)?"
_NUMERIC_DATES = (
    (re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$"), "dmy"),
    (re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$"), "dmy"),
    (re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"), "ymd"),
)
_DAY_MONTH = re.compile(
    r"^" + _WEEKDAY + r"(\d{1,2})\s+([a-z]{3,9})\.?,?\s+(\d{4})$", re.IGNORECASE
)
_MONTH_DAY = re.compile(
    r"^" + _WEEKDAY + r"([a-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})$", re.IGNORECASE
)
_RANGE_SPLITS = (
    re.compile(r"\s+to\s+", re.IGNORECASE),
    re.compile(r"\s*[\u2013\u2014]\s*"),
    re.compile(r"\s+-\s+"),
    re.compile(r"(?<=\d)-(?=\d{1,2}[/.])"),
)


def parse_money(text: str, digits: int) -> int | None:
    """The amount in minor units, or None when ``text`` is not money with ``digits`` decimals."""
    found = _MONEY.match(text.strip())
    if found is None or bool(found["open"]) != bool(found["close"]):
        return None
    if found["code1"] and found["code2"]:
        return None
    fraction = found["fraction"] or ""
    if len(fraction) != digits:
        return None
    whole = found["whole"]
    if any(c in whole for c in _SEPARATORS) and not _grouped(whole):
        return None
    minor = int("".join(c for c in whole if c.isdigit()) + fraction)
    negative = bool(found["open"] or found["minus1"] or found["minus2"])
    if found["open"] and (found["minus1"] or found["minus2"]):
        return None
    return -minor if negative else minor


def _grouped(whole: str) -> bool:
    """Thousands separators of one kind, every group three digits."""
    seps = {c for c in whole if not c.isdigit()}
    return len(seps) == 1


def format_money(minor: int, digits: int) -> str:
    """Minor units as the JSON's text: ``428090`` -> ``4280.90`` (no separators)."""
    sign = "-" if minor < 0 else ""
    text = str(abs(minor)).rjust(digits + 1, "0")
    return f"{sign}{text[:-digits]}.{text[-digits:]}" if digits else f"{sign}{text}"


def parse_date(text: str) -> date | None:
    """A date in one of §13's formats, day first; None when none fits or no such day exists."""
    plain = " ".join(text.split())
    try:
        for pattern, order in _NUMERIC_DATES:
            found = pattern.match(plain)
            if found:
                a, b, c = (int(g) for g in found.groups())
                return date(a, b, c) if order == "ymd" else date(c, b, a)
        found = _DAY_MONTH.match(plain)
        if found:
            month = MONTHS.get(found[2].casefold())
            return None if month is None else date(int(found[3]), month, int(found[1]))
        found = _MONTH_DAY.match(plain)
        if found:
            month = MONTHS.get(found[1].casefold())
            return None if month is None else date(int(found[3]), month, int(found[2]))
    except ValueError:  # 31/02/2026: no such day, so no date
        return None
    return None


def parse_period(text: str) -> tuple[date, date] | None:
    """Two dates as ``D to D``, ``D - D`` or ``D – D``, else None."""
    for split in _RANGE_SPLITS:
        parts = split.split(text.strip())
        if len(parts) == 2:
            first, second = parse_date(parts[0]), parse_date(parts[1])
            if first is not None and second is not None:
                return first, second
    return None


def is_name_like(text: str) -> bool:
    """Words that could be a name: letters in it, and neither money nor a date."""
    if not any(c.isalpha() for c in text):
        return False
    if any(parse_money(text, digits) is not None for digits in range(4)):
        return False
    return parse_date(text) is None and parse_period(text) is None


def name_shown(registered: str, shown: str) -> bool:
    """Every word of the registered name (as §10 normalises words) is a word of ``shown``."""
    wanted = name_words(registered)
    return bool(wanted) and wanted <= name_words(shown)


def near_name(registered: str, shown: str) -> bool:
    """Every registered word is a shown word or two letters from one: an OCR misreading
    ("Srnith"), which must never accuse a page."""
    shown_words = name_words(shown)
    return all(any(_close(w, s) for s in shown_words) for w in name_words(registered))


def _close(a: str, b: str) -> bool:
    """At most two edits (Levenshtein) apart: "smith" and "srnith" are."""
    if abs(len(a) - len(b)) > 2:
        return False
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1] <= 2
