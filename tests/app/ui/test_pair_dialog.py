"""Pairing a phone from the Admin screen (issue 10): the button opens the dialog, its QR decodes
(real zxing) to a one-time link on the real demo service, and the code is forgotten on close."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zxingcpp
from PySide6.QtGui import QImage
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.admin_overview import NO_OVERVIEW
from app.ui.admin_screen import AdminScreen
from app.ui.pair_dialog import PairDialog
from app.ui.tasks import TaskRunner
from testbed import web
from tests.app.shots import shoot


def decode(image: QImage) -> list[str]:
    gray = image.convertToFormat(QImage.Format.Format_Grayscale8)
    width, height, stride = gray.width(), gray.height(), gray.bytesPerLine()
    raw = np.frombuffer(gray.constBits(), np.uint8, count=stride * height)
    pixels = raw.reshape(height, stride)[:, :width].copy()
    return [str(r.text) for r in zxingcpp.read_barcodes(pixels)]


def test_pair_button_shows_a_one_time_qr_for_the_selected_front_desk(
    qtbot: QtBot, demo_context: AppContext, screenshot_dir: Path, no_leaks: None
) -> None:
    tasks = TaskRunner()
    screen = AdminScreen(demo_context, tasks)
    screen.show_dialogs = False
    qtbot.addWidget(screen)
    qtbot.waitUntil(lambda: screen.overview is not NO_OVERVIEW, timeout=10000)
    screen.tabs.setCurrentIndex(1)
    screen.verifiers.selectRow(0)
    desk_name = screen.verifiers.item(0, 0).text()
    assert screen.pair_button.isEnabled()
    screen.pair_button.click()
    dialogs = screen.findChildren(PairDialog)
    assert len(dialogs) == 1
    dialog = dialogs[0]
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
