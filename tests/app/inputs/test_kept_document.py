"""A PDF's reading leaves its pdfium document open for the document check that may follow
(app.inputs.pdf_pages.keep_document): the check gets that very document for the same bytes
object, a new one for any other bytes (equal or not), and only one document is ever kept."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from app.api.errors import ClientCode
from app.inputs import pdf_pages
from app.inputs.reading import read_file
from app.verify.flow import Outcome, with_document_check
from testbed.factories import blank_pdf


def test_the_check_gets_the_document_the_reading_opened(tmp_path: Path) -> None:
    first = tmp_path / "first.pdf"
    first.write_bytes(blank_pdf())
    reading = read_file(first)
    assert reading.data is not None
    kept = pdf_pages._kept
    assert kept is not None and kept[0] is reading.data

    copy = bytes(bytearray(reading.data))  # equal bytes, another object: opened anew
    other = pdf_pages.open_document(copy)
    assert other is not None and other is not kept[1]
    pdf_pages.close_document(other)
    assert pdf_pages._kept is kept

    document = pdf_pages.open_document(reading.data)
    assert document is kept[1] and pdf_pages._kept is None  # handed over once
    assert len(document) == 1
    pdf_pages.close_document(document)


def test_one_document_is_kept_at_a_time(tmp_path: Path) -> None:
    readings = []
    for name in ("a.pdf", "b.pdf"):
        path = tmp_path / name
        path.write_bytes(blank_pdf())
        readings.append(read_file(path))
    kept = pdf_pages._kept
    assert kept is not None and kept[0] is readings[1].data
    again = pdf_pages.open_document(readings[0].data)  # the first one's was closed: a new one
    assert again is not None and again is not kept[1]
    pdf_pages.close_document(again)


def test_a_reading_no_check_takes_is_released(tmp_path: Path) -> None:
    """A code that did not verify is not compared: its document is closed at once, not kept
    until the next reading (nothing of a page stays in memory longer than needed)."""
    path = tmp_path / "unverified.pdf"
    path.write_bytes(blank_pdf())
    reading = read_file(path)
    assert pdf_pages._kept is not None and pdf_pages._kept[0] is reading.data
    outcome = with_document_check(Outcome(ClientCode.SERVICE_UNREACHABLE), reading)
    assert outcome.document is None
    assert pdf_pages._kept is None


def test_an_owner_password_pdf_is_kept_for_its_own_bytes(tmp_path: Path) -> None:
    """Such a PDF is read through a decrypted copy; the document is kept for the bytes the
    reading holds, so its check (or its release) finds it."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(blank_pdf())))
    writer.encrypt(user_password="", owner_password="payroll-office")
    locked = tmp_path / "locked.pdf"
    with locked.open("wb") as handle:
        writer.write(handle)
    reading = read_file(locked)
    assert pdf_pages._kept is not None and pdf_pages._kept[0] is reading.data
    pdf_pages.release_kept(reading.data)
    assert pdf_pages._kept is None


def test_a_document_no_check_took_is_closed_after_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf_pages, "KEEP_SECONDS", 0.01)
    path = tmp_path / "left.pdf"
    path.write_bytes(blank_pdf())
    read_file(path)
    timer = pdf_pages._expiry
    assert timer is not None
    timer.join(10)  # the timer's own thread ends once it has closed the document
    assert pdf_pages._kept is None
