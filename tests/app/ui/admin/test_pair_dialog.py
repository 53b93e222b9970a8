"""Pairing a phone from the Admin screen (issue 10): the button opens the dialog, its QR decodes
(real zxing) to a one-time link on the real demo service, and the code is forgotten on close."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import zxingcpp
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.admin.overview import NO_OVERVIEW
from app.ui.admin.pair_dialog import PairDialog
from app.ui.admin.screen import AdminScreen
from app.ui.widgets.tasks import TaskRunner
from testbed import web
from testbed.oauth import token_body
from tests.app.shots import shoot


def decode(image: QImage) -> list[str]:
    gray = image.convertToFormat(QImage.Format.Format_Grayscale8)
    width, height, stride = gray.width(), gray.height(), gray.bytesPerLine()
    raw = np.frombuffer(gray.constBits(), np.uint8, count=stride * height)
    pixels = raw.reshape(height, stride)[:, :width].copy()
    return [str(r.text) for r in zxingcpp.read_barcodes(pixels)]


def _pairing(qtbot: QtBot, context: AppContext) -> tuple[AdminScreen, TaskRunner, PairDialog]:
    """Admin with its first front desk selected and "Pair a phone" pressed: the one dialog."""
    tasks = TaskRunner()
    screen = AdminScreen(context, tasks)
    screen.show_dialogs = False
    qtbot.addWidget(screen)
    qtbot.waitUntil(lambda: screen.overview is not NO_OVERVIEW, timeout=10000)
    screen.tabs.setCurrentIndex(1)
    screen.verifiers.selectRow(0)
    assert screen.pair_button.isEnabled()
    screen.pair_button.click()
    (dialog,) = screen.findChildren(PairDialog)
    return screen, tasks, dialog


def test_pair_button_shows_a_one_time_qr_for_the_selected_front_desk(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    screen, tasks, dialog = _pairing(qtbot, demo_context)
    desk_name = screen.verifiers.item(0, 0).text()
    assert desk_name in dialog.desk.currentText()

    dialog.make_button.click()
    qtbot.waitUntil(lambda: dialog.offer is not None, timeout=10000)
    offer = dialog.offer
    assert offer is not None
    url = demo_context.service_url
    assert offer.pair_url.startswith(f"{url}/v/pair#")
    assert "Expires in 9:5" in dialog.expiry.text() or "Expires in 10:00" in dialog.expiry.text()
    assert "only reachable on this computer" in dialog.status.text()  # the demo is loopback
    shoot(dialog, screenshot_dir, "pair-dialog", ((720, 760),))

    # What a phone camera reads off the screen is the link, and it works exactly once.
    assert decode(dialog.grab().toImage()) == [offer.pair_url]
    code = offer.pair_url.split("#", 1)[1]
    first = web.post(f"{url}/v1/pairings/redeem", json={"pairing_code": code}, timeout=10)
    assert first.status_code == 200, first.text
    again = web.post(f"{url}/v1/pairings/redeem", json={"pairing_code": code}, timeout=10)
    assert again.status_code == 401

    dialog.reject()
    assert dialog.offer is None
    assert dialog.qr.pixmap().isNull()
    assert decode(dialog.grab().toImage()) == []
    tasks.wait()


SCREENS = {"1366x768": (1366, 768), "1024x600": (1024, 600), "1366x768 at 150 %": (910, 512)}
"""Logical sizes (1366x768 at QT_SCALE_FACTOR=1.5 is 910x512); 48 px go to the title bar."""
TITLE_BAR = 48


def test_the_pair_dialog_fits_small_and_scaled_screens_with_close_and_the_whole_qr_in_view(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    """Issue 35: the dialog was 634 px tall (598 at least): Close was off a 1024x600 screen and
    off 1366x768 at 150 %. Now it opens within each screen, Close in view, and a phone still
    reads the whole QR off the screen at the smallest size."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QDialogButtonBox

    _, tasks, dialog = _pairing(qtbot, demo_context)
    qtbot.waitExposed(dialog)
    dialog.make_button.click()
    qtbot.waitUntil(lambda: dialog.offer is not None, timeout=10000)
    offer = dialog.offer
    assert offer is not None
    close = dialog.findChild(QDialogButtonBox)
    assert close is not None
    for name, (width, height) in SCREENS.items():
        room = (width, height - TITLE_BAR)
        hint, least = dialog.sizeHint(), dialog.minimumSizeHint()
        assert hint.width() <= room[0] and hint.height() <= room[1], (name, hint)
        assert least.width() <= room[0] and least.height() <= room[1], (name, least)
        dialog.resize(hint)  # a dialog opens at its size hint
        QApplication.processEvents()
        inside = QRect(QPoint(0, 0), dialog.size())
        assert inside.contains(QRect(close.mapTo(dialog, QPoint(0, 0)), close.size())), name
        qr = QRect(dialog.qr.mapTo(dialog, QPoint(0, 0)), dialog.qr.size())
        assert inside.contains(qr), name
        assert decode(dialog.grab().toImage()) == [offer.pair_url], name
        label = name.replace(" ", "_").replace("%", "pc")
        assert dialog.grab().save(str(screenshot_dir / f"pair_dialog_{label}.png"))
    dialog.reject()
    tasks.wait()


def test_a_phone_lasts_the_days_chosen_and_admin_shows_its_last_use_and_removes_it(
    qtbot: QtBot, demo_context: AppContext, config_dir: Path, no_leaks: None
) -> None:
    """Issue 37: the days a paired phone stays signed in are set in Admin's pairing dialog (90
    unless changed, kept in settings.json); the Clients tab shows when each phone last signed in
    and until when it may, and removes it."""
    screen, tasks, dialog = _pairing(qtbot, demo_context)
    assert dialog.days.value() == 90
    dialog.days.setValue(14)
    dialog.make_button.click()
    qtbot.waitUntil(lambda: dialog.offer is not None, timeout=10000)
    assert dialog.offer is not None
    code = dialog.offer.pair_url.split("#", 1)[1]
    dialog.reject()
    assert json.loads((config_dir / "settings.json").read_text("utf-8"))["phone_days"] == 14

    url = demo_context.service_url
    phone = web.post(f"{url}/v1/pairings/redeem", json={"pairing_code": code}, timeout=10).json()
    row_of = {"id": 0, "state": 3, "last used": 6, "until": 7}

    def cell(client_id: str, column: str) -> str:
        for row in range(screen.clients.rowCount()):
            if screen.clients.item(row, 0).text() == client_id:  # type: ignore[union-attr]
                return screen.clients.item(row, row_of[column]).text()  # type: ignore[union-attr]
        raise AssertionError(f"{client_id} not listed")

    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.refresh()
    assert cell(phone["client_id"], "last used") == "Not yet"
    until = datetime.now(UTC) + timedelta(days=14)
    assert cell(phone["client_id"], "until").startswith(until.astimezone().strftime("%d %b %Y"))
    signed_in = web.post(
        f"{url}/oauth/token",
        json=token_body(phone["client_id"], phone["client_secret"], url),
        timeout=10,
    )
    assert signed_in.status_code == 200, signed_in.text
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        screen.refresh()
    assert cell(phone["client_id"], "last used") != "Not yet"
    assert cell(phone["client_id"], "state") == "Active"

    screen.tabs.setCurrentIndex(2)
    assert screen.select_row(screen.clients, phone["client_id"])
    assert screen.disable_button.text() == "Remove phone…"
    screen.disable_button.click()
    assert screen.last_confirmation is not None
    assert "Remove the phone" in screen.last_confirmation.text()
    qtbot.waitUntil(lambda: cell(phone["client_id"], "state") == "Disabled", timeout=10000)
    again = web.post(
        f"{url}/oauth/token",
        json=token_body(phone["client_id"], phone["client_secret"], url),
        timeout=10,
    )
    assert again.status_code == 401
    assert screen.select_row(screen.clients, demo_context.issuer_info.client_id)  # type: ignore[union-attr]
    assert screen.disable_button.text() == "Disable client…"
    tasks.wait()
