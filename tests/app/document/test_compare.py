"""Label -> value and the statuses (PROTOCOL §13) on pages of positioned words, as text PDFs
and OCR give them: the layouts a desk sees, and the traps that must never raise a false alarm."""

from __future__ import annotations

from datetime import date

from app.document.compare import Page, Registered, compare
from app.document.layout import Word, lines_of

REGISTERED = Registered(
    "AUD",
    2,
    {"gross": 384615, "tax": 78200, "net": 428090},
    {
        "payment_date": date(2026, 11, 13),
        "period_start": date(2026, 10, 30),
        "period_end": date(2026, 11, 12),
    },
    "Amelia Rosenthal",
)


def _page(*cells: tuple[float, float, str], ocr: bool = False, unsure: str = "") -> Page:
    """Cells at (x, y) in points, 10 pt text; a word's width is 5 pt a character."""
    words: list[Word] = []
    for x, y, text in cells:
        at = x
        for part in text.split():
            words.append(Word(part, at, y, at + 5 * len(part), y + 10, part not in unsure))
            at += 5 * len(part) + 3
    return Page(lines_of(words), ocr=ocr)


def _statuses(page: Page) -> tuple[str, dict[str, str]]:
    check = compare(REGISTERED, [page])
    return check.status, {f.field: f.status for f in check.fields if f.status != "not_shown"}


def test_label_value_list_matches() -> None:
    page = _page(
        (50, 100, "Employee:"), (200, 100, "ROSENTHAL, Amelia (ID 0042)"),
        (50, 120, "Net Pay:"), (200, 120, "$4,280.90"),
        (50, 140, "Pay Date:"), (200, 140, "13 Nov 2026"),
    )  # fmt: skip
    status, fields = _statuses(page)
    assert status == "matches"
    assert fields == {"net": "matches", "payment_date": "matches", "employee_name": "matches"}


def test_a_raised_net_is_altered_with_its_sentence() -> None:
    page = _page((50, 100, "Net Pay"), (200, 100, "6,155.90 AUD"), (50, 120, "Gross"),
                 (200, 120, "3,846.15"))  # fmt: skip
    check = compare(REGISTERED, [page])
    assert check.status == "altered"
    assert check.sentences() == [
        "The page shows net pay 6,155.90 AUD; the registered payslip says 4,280.90 AUD. "
        "This copy was altered: do not accept it."
    ]
    net = next(f for f in check.wire()["fields"] if f["field"] == "net")
    assert net == {"field": "net", "status": "differs", "registered": "4280.90", "shown": "6155.90"}


def test_column_headings_take_the_value_below() -> None:
    page = _page(
        (50, 100, "Gross Pay"), (200, 100, "Tax"), (350, 100, "Net Pay"),
        (50, 115, "3 846.15"), (200, 115, "(782.00)"), (350, 115, "4,280.90"),
    )  # fmt: skip
    status, fields = _statuses(page)
    assert status == "matches"  # the tax printed as a deduction, (782.00): in doubt
    assert fields == {"gross": "matches", "net": "matches"}


def test_a_heading_row_of_unknown_labels_is_no_name() -> None:
    page = _page(
        (50, 100, "Name"), (200, 100, "Position"), (350, 100, "Department"),
        (50, 115, "Amelia Rosenthal"), (200, 115, "Analyst"), (350, 115, "Finance"),
        (50, 140, "Net"), (200, 140, "4,280.90"),
    )  # fmt: skip
    assert _statuses(page) == ("matches", {"net": "matches", "employee_name": "matches"})


def test_no_name_initials_and_month_first_dates_never_accuse() -> None:
    page = _page(
        (50, 100, "Employee"), (200, 100, "Full Time"),
        (50, 120, "Employee Name"), (200, 120, "A. Rosenthal"),
        (50, 140, "Pay Date"), (200, 140, "11/13/2026"),  # no such day-first date
        (50, 160, "Date Paid"), (200, 160, "10/30/2026"),
        (50, 180, "Period End"), (200, 180, "11/12/2026"),  # 11 December, or 12 November
        (50, 200, "Net Pay"), (200, 200, "4,280.90"),
    )  # fmt: skip
    assert _statuses(page) == ("matches", {"net": "matches"})
    renamed = _page((50, 100, "Employee"), (200, 100, "John Citizen"), (50, 120, "Net"),
                    (200, 120, "4,280.90"))  # fmt: skip
    assert _statuses(renamed) == ("altered", {"net": "matches", "employee_name": "differs"})


def test_weak_labels_never_accuse() -> None:
    page = _page(
        (50, 100, "Name"), (200, 100, "Example Employer Pty Ltd"),
        (50, 120, "From"), (200, 120, "03/11/2026"), (300, 120, "To"), (400, 120, "05/11/2026"),
        (50, 140, "Net Pay"), (200, 140, "4,280.90"),
    )  # fmt: skip
    assert _statuses(page) == ("matches", {"net": "matches"})


def test_this_pay_and_ytd_in_either_order_is_no_false_alarm() -> None:
    """The next cell is the YTD figure, but the registered net is on its line: in doubt."""
    page = _page(
        (50, 100, "Description"), (200, 100, "YTD"), (350, 100, "This Pay"),
        (50, 115, "Net"), (200, 115, "38,527.50"), (350, 115, "4,280.90"),
    )  # fmt: skip
    assert _statuses(page) == ("not_compared", {})


def test_the_net_printed_twice_matches_if_one_shows_it() -> None:
    page = _page((50, 100, "Net Pay"), (200, 100, "4,280.90"), (50, 300, "Amount Paid"),
                 (200, 300, "$4,280.90"))  # fmt: skip
    assert _statuses(page) == ("matches", {"net": "matches"})


def test_pay_period_gives_both_dates() -> None:
    page = _page((50, 100, "Pay Period:"), (200, 100, "30/10/2026 – 19/11/2026"), (50, 120, "Net"),
                 (200, 120, "4,280.90"))  # fmt: skip
    status, fields = _statuses(page)
    assert status == "altered"
    assert fields == {"net": "matches", "period_start": "matches", "period_end": "differs"}


def test_unknown_labels_and_values_of_another_kind_are_not_compared() -> None:
    page = _page(
        (50, 100, "Before tax"), (200, 100, "9,999.99"),
        (50, 120, "Net Pay"), (200, 120, "see page 2"),
        (50, 140, "YTD Gross"), (200, 140, "1.00"),
        (50, 160, "Tax"), (200, 160, "38"),
    )  # fmt: skip
    check = compare(REGISTERED, [page])
    assert check.status == "not_compared"
    assert check.reason == "none of the compared fields is shown"
    assert {f.status for f in check.fields} == {"not_shown"}
    assert compare(REGISTERED, [Page([])]).reason == "no page could be read"


def test_only_a_date_shown_is_not_compared_for_want_of_pay() -> None:
    check = compare(REGISTERED, [_page((50, 100, "Pay Date"), (200, 100, "2026-11-13"))])
    assert (check.status, check.reason) == ("not_compared", "neither gross nor net pay is shown")


def test_ocr_doubts_never_accuse() -> None:
    page = _page(
        (50, 100, "Employee"), (200, 100, "Amelia Rosentha1"),
        (50, 120, "Net Pay"), (200, 120, "6,280.90"),
        (50, 140, "Gross"), (200, 140, "3,846.15"),
        ocr=True, unsure="6,280.90",
    )  # fmt: skip
    assert _statuses(page) == ("matches", {"gross": "matches"})


def test_an_nz_payslip_in_nzd() -> None:
    registered = Registered(
        "NZD", 2, {"gross": 320000, "tax": 54025, "net": 265975}, {}, "Tane Parata"
    )
    page = _page(
        (50, 100, "Employee Name"), (200, 100, "PARATA, Tane"),
        (50, 120, "PAYE"), (200, 120, "NZ$540.25"),
        (50, 140, "Take Home Pay"), (200, 140, "2 659.75 NZD"),
    )  # fmt: skip
    check = compare(registered, [page])
    assert check.status == "matches"
    assert {f.field: f.status for f in check.fields} == {
        "gross": "not_shown", "tax": "matches", "net": "matches", "employee_name": "matches"
    }  # fmt: skip


def test_the_pages_of_one_payslip_in_a_combined_pdf() -> None:
    from app.document.check import pages_of
    from service.protocol.encoding import base32_encode, new_reference

    ref, another = new_reference(), new_reference()
    sealed = base32_encode(bytes(40))
    mine, other = f"2|{ref}|{sealed}", f"2|{another}|{sealed}"
    assert pages_of([[other], [], [mine], [], [other]], ref) == [2, 3]
    assert pages_of([[], [mine], []], ref) == [0, 1, 2]  # nothing before it carries a badge
    assert pages_of([[], [], [], [], [], []], ref) == [0, 1, 2, 3]  # code in the metadata only
    assert pages_of([[other], []], ref) == []


def test_ocr_splits_labels_names_and_periods_into_cells() -> None:
    """OCR boxes each word by its glyphs and may drop a dash: a label in two cells is one label,
    a name in several cells still matches, and a period whose dash is lost is still two dates
    (a single date under "Pay Period" is no period at all)."""
    page = _page(
        (50, 100, "Gross"), (92, 100, "Pay"), (250, 100, "Net"), (282, 100, "Pay"),
        (50, 115, "3,846.15"), (250, 115, "4,280.90"),
        (50, 140, "Employee"), (110, 140, "Name:"), (200, 140, "ROSENTHAL,"), (270, 140, "Amelia"),
        (50, 160, "Pay Period:"), (200, 160, "30 Oct 2026"), (280, 160, "Nov 12, 2026"),
        (50, 180, "Period"), (200, 180, "13 Nov 2026"),
        ocr=True,
    )  # fmt: skip
    check = compare(REGISTERED, [page])
    assert check.status == "matches"
    assert {f.field: f.status for f in check.fields if f.status != "not_shown"} == {
        "gross": "matches", "net": "matches", "period_start": "matches",
        "period_end": "matches", "employee_name": "matches",
    }  # fmt: skip
    assert compare(REGISTERED, [_page((50, 100, "Pay Period"), (200, 100, "03/11/2026"),
                                      (50, 120, "Net"), (200, 120, "4,280.90"))]).status == (
        "matches"
    )  # fmt: skip


def test_a_short_ocr_word_does_not_split_a_cell() -> None:
    words = [Word("Amount", 50, 100, 95, 112), Word("on", 99, 104, 111, 112),
             Word("file", 115, 100, 135, 112)]  # fmt: skip
    assert [c.text for c in lines_of(words)[0].cells] == ["Amount on file"]
