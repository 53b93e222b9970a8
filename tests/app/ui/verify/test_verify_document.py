"""The verify screen (and the kiosk, the same screen) compares a PDF's or a page image's printed
figures with the registered payslip (PROTOCOL §13), against the real embedded demo service:
real reportlab pages stamped with real badges, opened through the real file dialog or dropped.

While the page is compared the card says "Checking the document…" and shows no verdict (the
verdict never changes behind the operator); an altered copy is NOT VERIFIED with one sentence per
changed field and the compared fields only; a matching copy says so under VERIFIED; a page that
could not be compared, a typed code and a camera read say in words that the desk compares by eye.
Screenshots at 1366x768 and 1024x600 go to /tmp/shots34 for a person to look at.
"""

from __future__ import annotations

import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from app.document.record_words import ALTERED_WORDS
from app.shell.context import AppContext
from app.ui.verify.document_section import DIFFERS, TITLE
from app.ui.verify.result_card import CHECKING_DOCUMENT, COMPARE_FIRST
from app.ui.verify.screen import VerifyScreen
from testbed.factories import MARKER_ACCOUNT, MARKER_NAME
from testbed.payslip_pages import Shown, label_list, page_png, unknown_labels
from testbed.stamped_pages import NAME, register_payslip, stamped
from tests.app.shots import shoot
from tests.app.ui.file_dialogs import FileDialogs
from tests.app.ui.verify.test_verify_screen import (  # noqa: F401 - make_screen, the fixture
    badge_grey,
    camera_frame,
    make_screen,
    sample,
    write_video,
)

pytestmark = pytest.mark.gui

RESULT_TIMEOUT = 60000
"""A page image is OCR'd: on a loaded shared machine that can take a while (no timing asserted)."""
REVIEW = Path("/tmp/shots34")
SIZES = ((1366, 768), (1024, 600))
MATCHES = "The printed figures match the registered payslip."
NOT_COMPARED = "Compare the printed figures with these: the page could not be compared"
ONLY_CODE = "Compare the printed figures with these: only the code was read."
SENTENCES = (
    "The page shows net pay 6,155.90 AUD; the registered payslip says 3,064.15 AUD.",
    "The page shows payment date 27 Nov 2026; the registered payslip says 13 Nov 2026. "
    "This copy was altered: do not accept it.",
)
ADDRESS = "1 Test St"


class Watch:
    """What the card said when the page began to be compared, and every verdict shown."""

    def __init__(self, screen: VerifyScreen) -> None:
        self.checking: list[list[str]] = []
        self.shown: list[str] = []
        screen.pipeline.checking_document.connect(
            lambda: self.checking.append([*screen.card.visible_texts(), *self.shown])
        )
        screen.result_shown.connect(self.shown.append)


def wait_result(qtbot: Any, screen: VerifyScreen, action: Callable[[], None]) -> str:
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        action()
    return str(shown.args[0])


def drop(screen: VerifyScreen, path: Path) -> QDropEvent:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(
        QPointF(200, 200),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    screen.dropEvent(event)
    return event


def altered_pdf(context: AppContext) -> bytes:
    sealed = register_payslip(context)
    pdf, _ = label_list(Shown().altered(net="6,155.90 AUD", paid="27/11/2026"))
    return stamped(pdf, sealed)


def save_record(qtbot: Any, screen: VerifyScreen, path: Path, dialogs: FileDialogs) -> str:
    """Save the verification record through the real save dialog; its text, one space apart."""
    dialogs.pick(path)
    with qtbot.waitSignal(screen.records.saved, timeout=RESULT_TIMEOUT):
        screen.records.button.click()
    done = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return " ".join(unicodedata.normalize("NFKC", done.stdout).split())  # "ﬁ" is "fi"


def held_text(screen: VerifyScreen) -> str:
    if screen.card.support is not None:
        screen.card.support.toggle.click()  # the support details hold none of it either
    return " ".join(screen.card.all_texts())


def test_an_altered_pdf_opened_is_not_verified_with_each_changed_field(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    file_dialogs: FileDialogs,
) -> None:
    path = tmp_path / "payslip.pdf"
    path.write_bytes(altered_pdf(demo_context))
    file_dialogs.pick(path)
    screen = make_screen(size=SIZES[0])
    watch = Watch(screen)
    assert wait_result(qtbot, screen, screen.open_pdf_button.click) == "not_verified"
    # While the page was compared: "Checking the document…", and no verdict yet.
    assert len(watch.checking) == 1 and watch.shown == ["not_verified"]
    said = " ".join(watch.checking[0])
    assert CHECKING_DOCUMENT in said and "VERIFIED" not in said
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts and "Do not accept this payslip." in texts
    assert "\n".join(SENTENCES) in texts
    # The compared fields, registered and shown; the changed ones say so.
    assert TITLE.upper() in texts
    for value in ("6,155.90 AUD", "3,064.15 AUD", "27 Nov 2026", "13 Nov 2026", NAME):
        assert value in texts, value
    assert texts.count(DIFFERS) == 2
    assert MATCHES not in texts
    # Nothing else of the employee: no bank account, address, or the record's other data.
    held = held_text(screen)
    for value in (MARKER_ACCOUNT, MARKER_NAME, ADDRESS, "Reveal numbers", "Analyst"):
        assert value not in held, value
    assert screen.card.details is None
    shoot(screen, tmp_path, "verify-altered", SIZES, REVIEW)

    # The verification record states the check's status and the changed fields (PROTOCOL §11).
    text = save_record(qtbot, screen, tmp_path / "record.pdf", file_dialogs)
    assert "NOT VERIFIED" in text and ALTERED_WORDS in text
    assert "Document check Altered: the printed figures differ from the registered payslip" in text
    assert "Net pay registered 3,064.15 AUD; the page shows 6,155.90 AUD" in text
    assert "Payment date registered 13 Nov 2026; the page shows 27 Nov 2026" in text
    for value in (MARKER_ACCOUNT, MARKER_NAME, ADDRESS, NAME, "Gross pay", "3,846.15"):
        assert value not in text, value  # no figure or name but the changed fields


def test_a_matching_pdf_dropped_says_the_figures_match(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    file_dialogs: FileDialogs,
) -> None:
    sealed = register_payslip(demo_context)
    pdf, _ = label_list(Shown())
    path = tmp_path / "payslip.pdf"
    path.write_bytes(stamped(pdf, sealed))
    screen = make_screen(size=SIZES[0])
    watch = Watch(screen)
    event: list[QDropEvent] = []
    assert wait_result(qtbot, screen, lambda: event.append(drop(screen, path))) == "verified"
    assert event[0].isAccepted()
    assert len(watch.checking) == 1 and CHECKING_DOCUMENT in " ".join(watch.checking[0])
    texts = screen.card.visible_texts()
    assert "VERIFIED" in texts and MATCHES in texts and "Accept this payslip." in texts
    assert NAME in texts and "$3,064.15 AUD" in texts
    assert TITLE.upper() not in texts
    shoot(screen, tmp_path, "verify-matches", SIZES, REVIEW)
    text = save_record(qtbot, screen, tmp_path / "record.pdf", file_dialogs)
    assert "VERIFIED" in text and "NOT VERIFIED" not in text and NAME in text
    assert "Document check Matches: the printed figures match the registered payslip" in text


def test_a_page_that_cannot_be_compared_says_so_and_keeps_the_figures(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    sealed = register_payslip(demo_context)
    pdf, _ = unknown_labels(Shown())
    path = tmp_path / "payslip.pdf"
    path.write_bytes(stamped(pdf, sealed))
    screen = make_screen(size=SIZES[0])
    assert wait_result(qtbot, screen, lambda: screen.open_path(path)) == "verified"
    texts = screen.card.visible_texts()
    words = next(t for t in texts if t.startswith(NOT_COMPARED))
    assert words == f"{NOT_COMPARED} (none of the compared fields is shown)."
    assert "VERIFIED" in texts and COMPARE_FIRST in texts  # the code's verdict stands
    for fact in (NAME, "$3,064.15 AUD", "13 Nov 2026"):
        assert fact in texts, fact  # today's figures, to compare by eye
    shoot(screen, tmp_path, "verify-not-compared", SIZES, REVIEW)


def test_the_kiosk_catches_an_altered_page_image(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    """A phone's scan of a whole page (200 dpi PNG), dropped on the kiosk: OCR'd and caught."""
    path = tmp_path / "scan.png"
    path.write_bytes(page_png(altered_pdf(demo_context)))
    screen = make_screen(kiosk=True, size=SIZES[0])
    watch = Watch(screen)
    assert wait_result(qtbot, screen, lambda: drop(screen, path)) == "not_verified"
    assert len(watch.checking) == 1 and watch.shown == ["not_verified"]
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts
    assert any("net pay 6,155.90 AUD" in t and "3,064.15 AUD" in t for t in texts), texts
    held = held_text(screen)
    assert MARKER_ACCOUNT not in held and ADDRESS not in held
    shoot(screen, tmp_path, "kiosk-altered-image", SIZES, REVIEW)


def test_a_typed_code_and_a_camera_read_say_nothing_was_compared(
    make_screen: Callable[..., VerifyScreen],  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    au = sample(demo_context, "AU")
    screen = make_screen(size=SIZES[0])
    watch = Watch(screen)
    screen.code_field.setText(au.payload)
    assert wait_result(qtbot, screen, screen.submit_text) == "verified"
    assert {ONLY_CODE, COMPARE_FIRST} <= set(screen.card.visible_texts())
    assert watch.checking == []  # no page: no "Checking the document…"
    shoot(screen, tmp_path, "verify-typed-code", SIZES[:1], REVIEW)
    screen.clear_result()

    badge = badge_grey(au.scan_url)
    frames = [camera_frame(badge, seed=i) for i in range(24)]
    demo_context.settings.camera = str(write_video(tmp_path / "desk.avi", frames))
    camera = make_screen(size=SIZES[0])
    with qtbot.waitSignal(camera.result_shown, timeout=RESULT_TIMEOUT) as shown:
        pass
    assert shown.args == ["verified"]
    assert ONLY_CODE in camera.card.visible_texts()
