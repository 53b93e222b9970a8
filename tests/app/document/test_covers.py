"""The covers' grid (app.document.covers) answers exactly as testing every cover would, and a
page too busy to read in reasonable time is not read (so not compared) instead of read slowly.
The grid is why a 14 KiB page of 40,000 small squares reads in 0.4 s instead of 23 s
(bench/document_bench.py times it)."""

from __future__ import annotations

import io

import pypdfium2 as pdfium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

from app.document import covers as covers_module
from app.document import pdf_text
from app.document.check import UNLIKE_A_PAYSLIP, check_pdf
from app.document.covers import Cover, Covers, TooManyCovers
from app.document.pdf_text import PageTooComplex, visible_words
from testbed.factories import AU_V1, verification_result

CROP = (0.0, 0.0, 595.0, 842.0)
coordinate = st.floats(-100, 950, allow_nan=False)


@st.composite
def cover(draw: st.DrawFn) -> Cover:
    x0, x1 = sorted((draw(coordinate), draw(coordinate)))
    y0, y1 = sorted((draw(coordinate), draw(coordinate)))
    return Cover(draw(st.integers(0, 60)), x0, y0, x1, y1)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(cover(), max_size=40),
    st.lists(st.tuples(st.integers(0, 60), coordinate, coordinate), min_size=1, max_size=40),
)
def test_the_grid_answers_as_every_cover_would(
    drawn: list[Cover], points: list[tuple[int, float, float]]
) -> None:
    grid = Covers(drawn, CROP)
    for order, x, y in points:
        assert grid.hides(order, x, y) == any(c.hides(order, x, y) for c in drawn)


def test_a_cover_on_a_cell_edge_and_the_crop_edge_still_hides() -> None:
    width = CROP[2] / covers_module.CELLS
    edge = Cover(5, width, 0.0, 2 * width, 10.0)
    grid = Covers([edge], CROP)
    assert grid.hides(1, width, 5.0) and grid.hides(1, 2 * width, 5.0)
    assert not grid.hides(5, width, 5.0)  # drawn before (or as) the character: not over it
    page_wide = Cover(9, -10.0, -10.0, 700.0, 900.0)
    assert Covers([page_wide], CROP).hides(0, CROP[2], CROP[3])


def _busy_page(squares: int) -> bytes:
    """A payslip line, then many small grey squares drawn over the page (after the text)."""
    buffer = io.BytesIO()
    c = Canvas(buffer, pagesize=A4)
    c.setFont("Helvetica", 10)
    c.drawString(60, 700, "Net pay 3,064.15")
    c.setFillColorRGB(0.9, 0.9, 0.9)
    for index in range(squares):
        c.rect((index * 7) % 560, 20 + (index * 13) % 600, 3, 3, stroke=0, fill=1)
    c.showPage()
    c.save()
    return buffer.getvalue()


def _read(pdf: bytes) -> list[str]:
    document = pdfium.PdfDocument(pdf)
    try:
        page = document[0]
        try:
            return [w.text for w in visible_words(page).words]
        finally:
            page.close()
    finally:
        document.close()


def test_a_busy_page_is_read_through_the_grid() -> None:
    assert _read(_busy_page(5000)) == ["Net", "pay", "3,064.15"]


@pytest.mark.parametrize(
    ("limit", "value"),
    [(pdf_text, ("MAX_OBJECTS", 100)), (covers_module, ("MAX_PLACED", 100))],
)
def test_a_page_past_a_limit_is_not_read(
    monkeypatch: pytest.MonkeyPatch, limit: object, value: tuple[str, int]
) -> None:
    monkeypatch.setattr(limit, *value)
    with pytest.raises((PageTooComplex, TooManyCovers)):
        _read(_busy_page(500))


def test_a_page_with_too_many_characters_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf_text, "MAX_CHARS", 10)
    with pytest.raises(PageTooComplex):
        _read(_busy_page(0))


def test_the_document_check_says_a_page_past_a_limit_could_not_be_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through check_pdf, as the desk meets it: not compared, "no page could be read"."""
    result = verification_result(AU_V1["payslip_non_pii"], {"employee_name": "Alex Example"})
    assert check_pdf(_busy_page(500), result).status == "matches"  # within the limits: read
    monkeypatch.setattr(pdf_text, "MAX_OBJECTS", 100)
    checked = check_pdf(_busy_page(500), result)
    assert checked.status == "not_compared" and checked.reason == UNLIKE_A_PAYSLIP
    assert "look at its figures closely" in checked.summary


def test_covers_heaped_on_the_characters_are_a_page_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every cover in one cell, each tested by every character: past MAX_TESTS the page is
    not read (a crafted page would otherwise hold the reading lock for minutes)."""
    heap = [Cover(10 + i, 500.0, 500.0, 501.0, 501.0) for i in range(50)]
    monkeypatch.setattr(covers_module, "MAX_TESTS", 120)
    grid = Covers(heap, CROP)
    assert grid.hides(0, 500.5, 500.5)  # the cell's 50 covers counted against the budget
    assert grid.hides(0, 500.6, 500.6)  # 100
    with pytest.raises(TooManyCovers):
        grid.hides(0, 500.7, 500.7)  # 150: past it
