"""The verify screen's verification records (issue 23): "Save verification record..." writes a
real one-page PDF whose QR code decodes to a genuine receipt, and the screen recognises such a
record when it is dropped or scanned, instead of calling it "not a payslip code"."""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from app.inputs.reading import read_file
from app.receipts.check import check_receipt, receipt_in
from app.shell.context import AppContext
from app.ui.records.record_pdf import desk_name
from app.ui.verify.record import SAVE_TEXT
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.style import PALETTES
from service.protocol.encoding import b64url_encode
from testbed import web
from tests.app.ui.file_dialogs import FileDialogs
from tests.app.ui.verify.test_verify_screen import (  # noqa: F401 - the fixture
    ISSUER,
    RESULT_TIMEOUT,
    make_screen,
    sample,
    shot,
    wait_result,
)

pytestmark = pytest.mark.gui
REVIEW = Path("/tmp/shots35")


@pytest.fixture
def screens(make_screen: Callable[..., VerifyScreen]) -> Callable[..., VerifyScreen]:  # noqa: F811
    """test_verify_screen's screens over the demo service."""
    return make_screen


def _type(screen: VerifyScreen, text: str) -> None:
    screen.code_field.setText(text)
    screen.submit_text()


def _save(qtbot: Any, screen: VerifyScreen, path: Path) -> Path:
    with qtbot.waitSignal(screen.records.saved, timeout=RESULT_TIMEOUT):
        screen.records.save(str(path))
    return path


def _pdf_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _render(path: Path, tmp_path: Path) -> Path:
    """pdftoppm opens the record: exactly one page."""
    prefix = tmp_path / path.stem
    done = subprocess.run(["pdftoppm", "-r", "80", "-png", str(path), str(prefix)])
    assert done.returncode == 0
    pages = sorted(tmp_path.glob(f"{path.stem}*.png"))
    assert len(pages) == 1
    return pages[0]


JARGON = ("jwks", "JOSE", "EdDSA", "python -m", "typ ", "payslip-receipt+jwt", "--jwks")


def assert_plain_footer(text: str) -> None:
    """Issue 35: the record says how to check it in a desk's words, and names no computer
    ("Made at desk vm": the host name) and no developer's terms."""
    host = socket.gethostname()
    assert f"desk {host}" not in text and f"Desk {host}" not in text
    assert not [word for word in JARGON if word in text], text
    assert "scan this page with the Verify screen of Payslip Verify" in " ".join(text.split())


def _jwks(context: AppContext) -> dict[str, Any]:
    return dict(web.get(f"{context.service_url}/.well-known/jwks.json", timeout=10).json())


def test_a_verified_result_saves_a_record_whose_qr_is_a_genuine_receipt(
    screens: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
    file_dialogs: FileDialogs,
) -> None:
    screen = screens()
    good = sample(demo_context, "AU")
    assert wait_result(qtbot, screen, lambda: _type(screen, good.payload)) == "verified"
    assert screen.records.button.isVisibleTo(screen) and SAVE_TEXT in screen.card.visible_texts()
    shot(screen, screenshot_dir, "record_button")
    record = tmp_path / "record.pdf"
    file_dialogs.pick(record)  # the real save dialog, answered through its widgets
    with qtbot.waitSignal(screen.records.saved, timeout=RESULT_TIMEOUT):
        screen.records.button.click()
    [seen] = file_dialogs.seen
    assert seen.saving and seen.widget_dialog and seen.title == "Save verification record"
    assert seen.suggested.startswith("verification-record-") and seen.suggested.endswith(".pdf")
    assert "Record saved" in screen.card.visible_texts()
    _render(record, tmp_path)
    text = _pdf_text(record)
    assert "VERIFIED" in text and "NOT VERIFIED" not in text
    assert ISSUER in text and good.service_reference in text
    assert "Alex Example" in text and "Net pay" in text
    assert_plain_footer(text)
    assert "Made on " in text and "Desk" not in text  # no desk name set: none made up
    demo_context.settings.extra["desk_name"] = "Front counter 2"
    named = _pdf_text(_save(qtbot, screen, tmp_path / "named.pdf"))
    assert (
        "Made at Front counter 2 on " in named and desk_name(demo_context.settings.extra) in named
    )
    receipt = receipt_in(read_file(record).payloads)  # the app's own QR decoders, real page
    assert receipt is not None
    checked = check_receipt(receipt, _jwks(demo_context))
    assert checked.state == "genuine" and checked.claims is not None
    assert checked.claims.sub == good.service_reference and checked.claims.verified
    assert receipt.replace("\n", "")[:60] in text.replace("\n", "").replace(" ", "")


def test_a_not_verified_record_holds_no_figures_or_name(
    screens: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    screen = screens()
    assert demo_context.demo is not None
    revoked = next(s for s in demo_context.demo.samples if s.revoked)
    assert wait_result(qtbot, screen, lambda: _type(screen, revoked.payload)) == "not_verified"
    record = _save(qtbot, screen, tmp_path / "revoked.pdf")
    text = _pdf_text(record)
    assert "NOT VERIFIED" in text
    assert "Net pay" not in text and "Employee" not in text


def test_a_dropped_record_is_recognised_not_refused(
    screens: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    screen = screens()
    good = sample(demo_context, "AU")
    assert wait_result(qtbot, screen, lambda: _type(screen, good.payload)) == "verified"
    record = _save(qtbot, screen, tmp_path / "record.pdf")
    screen.clear_result()
    with qtbot.waitSignal(screen.records.record_checked, timeout=RESULT_TIMEOUT) as checked:
        screen.open_path(record)
    assert checked.args == ["genuine"]
    notice = screen.notice.text()
    assert notice.startswith("Verification record: genuine, made on ")
    assert f"by {demo_context.demo.verifier.client_id}" in notice  # type: ignore[union-attr]
    assert "VERIFIED" in notice and "not a payslip code" not in notice.lower()
    assert not screen.showing_result  # no payslip verdict for a record
    # Issue 35: a genuine record is said in the verified green, not the amber "no payslip code"
    # warning box: the colour on screen is the verified tint.
    assert screen.notice.property("tone") == "genuine"
    assert _background(screen.notice) == QColor(PALETTES["verified"].tint)
    shot(screen, screenshot_dir, "record_recognised")
    REVIEW.mkdir(exist_ok=True)  # a copy for a person to look at (never in the repository)
    shutil.copy(screenshot_dir / "record_recognised.png", REVIEW / "record_recognised.png")
    screen.code_field.setText("not a code at all")
    screen.submit_text()  # a plain refusal is amber again
    assert _background(screen.notice) == QColor(PALETTES["error"].tint)


def _background(widget: Any) -> QColor:
    """The colour a person sees just inside the box's left edge (padding, no text)."""
    QApplication.processEvents()
    image = widget.grab().toImage()
    return QColor(image.pixel(5, image.height() // 2))


def test_a_scanned_altered_receipt_is_called_not_genuine(
    screens: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
) -> None:
    screen = screens()
    good = sample(demo_context, "AU")
    receipt = demo_context.verifier.receipt(good.payload).receipt
    header, payload, signature = receipt.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["payslip"]["net"] = 999_999_99
    altered = f"{header}.{b64url_encode(json.dumps(claims).encode())}.{signature}"
    with qtbot.waitSignal(screen.records.record_checked, timeout=RESULT_TIMEOUT) as checked:
        _type(screen, altered)  # what a USB scanner types from the record's QR
    assert checked.args == ["altered"]
    assert screen.notice.text().startswith("Verification record: NOT GENUINE.")
    assert _background(screen.notice) == QColor(PALETTES["not_verified"].tint)


def test_no_record_button_in_kiosk_mode(
    screens: Callable[..., VerifyScreen], demo_context: AppContext, qtbot: Any
) -> None:
    screen = screens(kiosk=True)
    good = sample(demo_context, "AU")
    assert wait_result(qtbot, screen, lambda: _type(screen, good.payload)) == "verified"
    assert not screen.records.button.isVisibleTo(screen)  # kiosks open no file dialogs


def test_the_record_is_letter_in_us_locales_and_a4_elsewhere(
    demo_context: AppContext, qapp: Any, tmp_path: Path
) -> None:
    import jwt
    from PySide6.QtCore import QLocale

    from app.ui.records.record_pdf import page_size_for, write_record
    from service.protocol.schemas import ReceiptClaims

    good = sample(demo_context, "AU")
    receipt = demo_context.verifier.receipt(good.payload).receipt
    claims = ReceiptClaims.model_validate(jwt.decode(receipt, options={"verify_signature": False}))
    sizes = {}
    for name in ("en_US", "en_AU", "en_NZ"):
        path = tmp_path / f"{name}.pdf"
        write_record(path, receipt, claims, "Desk 3", page_size_for(QLocale(name)))
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
        sizes[name] = next(line for line in info.splitlines() if line.startswith("Page size"))
        assert re.search(r"^Pages:\s+1$", info, re.M), info
    assert "letter" in sizes["en_US"]
    assert "A4" in sizes["en_AU"] and "A4" in sizes["en_NZ"]


def test_a_record_held_to_the_camera_is_recognised(
    screens: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    import io

    import cv2
    import numpy as np
    import segno

    from tests.app.ui.verify.test_verify_screen import camera_frame, write_video

    receipt = demo_context.verifier.receipt(sample(demo_context, "NZ").payload).receipt
    png = io.BytesIO()
    segno.make(receipt, error="m").save(png, kind="png", scale=6, border=4)
    qr = cv2.imdecode(np.frombuffer(png.getvalue(), np.uint8), cv2.IMREAD_GRAYSCALE)
    frames = [camera_frame(None, seed=i) for i in range(4)]
    frames += [camera_frame(qr, seed=i) for i in range(24)]
    demo_context.settings.camera = str(write_video(tmp_path / "record.avi", frames))
    screen = screens()
    with qtbot.waitSignal(screen.records.record_checked, timeout=RESULT_TIMEOUT) as checked:
        pass
    assert checked.args == ["genuine"]
    assert screen.notice.text().startswith("Verification record: genuine, made on ")
