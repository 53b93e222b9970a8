"""USB barcode scanners (keyboard wedge) on the verify screen, against the real demo service.

A scanner types the code a few ms per key and presses Enter into whatever has the focus. With a
verdict on screen that is Next: the scan must not press it, the verdict must stay, and Next must
then check the scanned code. With no result the scan is checked at once, wherever the focus is.
A person typing (slow keys, faked with a clock, no sleeping) is never taken for a scanner.
Scans are typed as a scanner types them (`tests/app/ui/usb_scanner.py`): Shift pressed before
every capital, 5 ms per key on the scanner's clock, then Enter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.shell.context import AppContext
from app.ui.verify.result import SCANNED_HINT
from app.ui.verify.screen import VerifyScreen
from app.ui.verify.wedge_scanner import WedgeScanner
from app.ui.widgets.tasks import TaskRunner
from service.composition.demo import DemoSample
from tests.app.ui.usb_scanner import ScannerClock, scanner_types

pytestmark = pytest.mark.gui
RESULT_TIMEOUT = 15000


def sample(context: AppContext, prefix: str) -> DemoSample:
    assert context.demo is not None
    return next(s for s in context.demo.samples if s.label.startswith(prefix))


@pytest.fixture
def make_screen(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path
) -> Iterator[Callable[..., VerifyScreen]]:
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    made: list[tuple[VerifyScreen, TaskRunner]] = []
    clocks.clear()

    def make(kiosk: bool = False) -> VerifyScreen:
        tasks = TaskRunner()
        screen = VerifyScreen(demo_context, tasks, kiosk=kiosk, start_camera=False)
        # The scanner's speed from a frozen clock: keys sent by the test are machine-speed
        # whatever else loads the machine (a real clock could see a gap under load).
        clocks[screen] = clock = ScannerClock()
        frozen(screen, clock)
        qtbot.addWidget(screen)
        screen.resize(1366, 768)
        screen.show()
        qtbot.waitExposed(screen)
        with qtbot.waitActive(screen):  # the offscreen platform activates on request, later
            screen.activateWindow()
        made.append((screen, tasks))
        return screen

    yield make
    for screen, tasks in made:
        screen.shutdown()
        assert tasks.wait(20000)
        screen.close()


def frozen(screen: VerifyScreen, clock: Callable[[], float]) -> None:
    """Give the screen a wedge reader on `clock` in place of its real-time one."""
    app = QApplication.instance()
    assert app is not None
    app.removeEventFilter(screen.wedge)
    screen.wedge.deleteLater()
    screen.wedge = WedgeScanner(screen, clock=clock)
    screen.wedge.scanned.connect(screen.scanned)


clocks: dict[VerifyScreen, ScannerClock] = {}
"""Each screen's scanner clock (made with the screen by ``make_screen``)."""


def scan(qtbot: Any, screen: VerifyScreen, code: str) -> None:
    """What a wedge scanner does: the code at 5 ms a key, Shift before capitals, then Enter,
    to whatever has the focus."""
    scanner_types(screen, clocks[screen], code)


def test_a_scan_while_verified_is_shown_is_held_and_next_checks_it(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any, tmp_path: Path
) -> None:
    au, revoked = sample(demo_context, "AU"), sample(demo_context, "Revoked")
    screen = make_screen(kiosk=True)
    shown: list[str] = []
    screen.result_shown.connect(shown.append)
    screen.code_field.setText(au.payload)
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT):
        qtbot.keyClick(screen.code_field, Qt.Key.Key_Return)
    assert shown == ["verified"]
    next_button = screen.card.banner.next_button
    assert next_button.hasFocus()
    outcome = screen.card.outcome
    cleared: list[int] = []
    screen.result_cleared.connect(lambda: cleared.append(1))

    scan(qtbot, screen, revoked.payload)

    # The verdict is still there, untouched; Next was not pressed; nothing was sent.
    assert screen.showing_result and screen.card.outcome is outcome and cleared == []
    texts = screen.card.visible_texts()
    assert "VERIFIED" in texts and "Alex Example" in texts
    assert SCANNED_HINT in texts
    assert shown == ["verified"]
    screen.grab().save(str(tmp_path / "scanned_while_verified.png"))
    # Next checks the scanned code.
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as answer:
        qtbot.mouseClick(next_button, Qt.MouseButton.LeftButton)
    assert answer.args == ["not_verified"]
    assert cleared == [1]
    assert SCANNED_HINT not in screen.card.visible_texts()


def test_a_scan_with_no_result_is_checked_at_once_wherever_the_focus_is(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    screen = make_screen(kiosk=True)
    # The focus is on the settings button, not on any text field.
    screen.settings_button.setFocus()
    assert screen.settings_button.hasFocus()
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as answer:
        scan(qtbot, screen, sample(demo_context, "NZ").payload)
    assert answer.args == ["verified"]
    assert screen.code_field.text() == ""  # nothing went into a field
    # And into the code field it is the ordinary typed path.
    with qtbot.waitSignal(screen.result_cleared, timeout=2000):
        qtbot.keyClick(screen.card.banner.next_button, Qt.Key.Key_Escape)
    assert screen.code_field.hasFocus()
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as answer:
        scan(qtbot, screen, sample(demo_context, "Revoked").payload)
    assert answer.args == ["not_verified"]


def test_a_scan_while_checking_is_held_until_next(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    screen = make_screen()
    screen.code_field.setText(sample(demo_context, "AU").payload)
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as answer:
        qtbot.keyClick(screen.code_field, Qt.Key.Key_Return)
        scan(qtbot, screen, sample(demo_context, "Revoked").payload)  # while CHECKING
    assert answer.args == ["verified"]
    assert SCANNED_HINT in screen.card.visible_texts()
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as answer:
        screen.card.banner.next_button.click()
    assert answer.args == ["not_verified"]


def test_esc_drops_a_held_scan(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    screen = make_screen()
    screen.code_field.setText(sample(demo_context, "AU").payload)
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT):
        qtbot.keyClick(screen.code_field, Qt.Key.Key_Return)
    scan(qtbot, screen, sample(demo_context, "Revoked").payload)
    started: list[int] = []
    screen.verification_started.connect(lambda: started.append(1))
    with qtbot.waitSignal(screen.result_cleared, timeout=2000):
        qtbot.keyClick(screen.card.banner.next_button, Qt.Key.Key_Escape)
    assert not screen.showing_result and started == []


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_person_typing_is_not_a_scan(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    """Slow keys (a person) on a button are not collected, and their Enter presses the button;
    slow keys into the code field still type into it."""
    screen = make_screen()
    clock = FakeClock()
    frozen(screen, clock)
    scans: list[str] = []
    screen.wedge.scanned.connect(scans.append)

    def type_slowly(widget: Any, text: str) -> None:
        for char in text:
            clock.now += 0.15
            qtbot.keyClicks(widget, char)
        clock.now += 0.15

    code = sample(demo_context, "AU").payload
    screen.code_field.setFocus()
    type_slowly(screen.code_field, code[:20])
    assert screen.code_field.text() == code[:20]
    screen.code_field.setText(code)
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT):
        qtbot.keyClick(screen.code_field, Qt.Key.Key_Return)
    # A person at the verdict: types a few letters slowly on Next, then presses Enter: Next.
    next_button = screen.card.banner.next_button
    type_slowly(next_button, "abcdefghij")
    with qtbot.waitSignal(screen.result_cleared, timeout=2000):
        qtbot.keyClick(next_button, Qt.Key.Key_Return)
    assert scans == []
    # The same keys at scanner speed are a scan.
    with qtbot.waitSignal(screen.input_refused, timeout=2000) as refused:
        screen.settings_button.setFocus()
        qtbot.keyClicks(screen.settings_button, "abcdefghij")
        qtbot.keyClick(screen.settings_button, Qt.Key.Key_Return)
    assert scans == ["abcdefghij"] and refused.args == ["NOT_A_PAYSLIP_CODE"]


def test_a_scanned_verification_record_is_recognised_wherever_the_focus_is(
    make_screen: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    """A USB scanner reading a verification record's QR (a receipt, not a payslip code) with the
    focus away from the code field: the record is checked, not refused as "not a payslip"."""
    screen = make_screen()
    receipt = demo_context.verifier.receipt(sample(demo_context, "AU").payload).receipt
    screen.settings_button.setFocus()
    with qtbot.waitSignal(screen.records.record_checked, timeout=RESULT_TIMEOUT) as checked:
        scan(qtbot, screen, receipt)
    assert checked.args == ["genuine"]
    assert screen.notice.text().startswith("Verification record: genuine, made on ")
    assert screen.code_field.text() == ""  # the scan never went into the field
