"""The verify screen end to end against the real embedded demo service, offscreen.

Every input path (demo samples, image file, PDF, pasted text, a recorded camera) must put the
right payslip on the card; errors must read in plain words; results must clear by themselves;
the kiosk must work from the keyboard; and a dead service or camera must never need a restart.
Each screen test saves a screenshot under tmp_path.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import wave
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QLabel,
    QPushButton,
    QWidget,
)

from app.api import ApiClient
from app.api.errors import ApiError
from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, verifier_client
from app.ui.pin_dialog import MAX_TRIES, PinDialog, PinGuard
from app.ui.verify import pipeline as verify_pipeline
from app.ui.verify.camera_worker import CAMERA_LOST_MESSAGE, NO_CAMERA_MESSAGE
from app.ui.verify.result_card import ANOTHER_CODE_HINT, SLOW_TEXT
from app.ui.verify.screen import VerifyScreen
from app.ui.verify.settings_dialog import SettingsDialog
from app.ui.verify.verdict_sound import verdict_wav
from app.ui.widgets.tasks import TaskRunner
from app.verify.presentation import amount_of, error_message
from app.verify.verdicts import INPUT_PROBLEMS, MEANINGS, NOT_A_PAYSLIP_CODE
from service.composition.demo import DemoSample
from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.barcode_text import build_payload_v2, parse_barcode
from service.protocol.schemas import VerificationResult
from service.protocol.vocabulary import Verdict
from testbed.factories import blank_pdf
from tests.app.ui.dialog_answers import DialogAnswers, cancel, type_pin
from tests.app.ui.file_dialogs import FileDialogs

pytestmark = pytest.mark.gui

AU_NET = "$3,064.15 AUD"
NZ_NET = "$2,659.75 NZD"
ISSUER = "Demo Payroll Pty Ltd"
AU_MASKED = "•••••678"
RESULT_TIMEOUT = 15000


# -- helpers ------------------------------------------------------------------------------------


def sample(context: AppContext, prefix: str) -> DemoSample:
    assert context.demo is not None
    return next(s for s in context.demo.samples if s.label.startswith(prefix))


def badge_grey(scan_url: str) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(render_badge_png(scan_url), np.uint8), cv2.IMREAD_GRAYSCALE)
    assert image is not None
    return image


def camera_frame(badge: np.ndarray | None, seed: int, *, height: int = 560) -> np.ndarray:
    """A 960x720 BGR "phone camera" frame: the badge tilted, blurred and noisy on a desk."""
    rng = np.random.default_rng(seed)
    frame = np.full((720, 960), 150, np.float64)
    if badge is not None:
        width = round(height * badge.shape[1] / badge.shape[0])  # keep the badge's proportions
        scaled = cv2.resize(badge, (width, height), interpolation=cv2.INTER_AREA)
        # Perspective: the right edge leans away by ~15 degrees, then a slight rotation.
        shrink = height * 0.06
        src = np.array([[0, 0], [width, 0], [width, height], [0, height]], dtype=np.float32)
        dst = np.array(
            [[0, 0], [width, shrink], [width, height - shrink], [0, height]], dtype=np.float32
        )
        size = (width, height)
        warped = cv2.warpPerspective(
            scaled, cv2.getPerspectiveTransform(src, dst), size, borderValue=255
        )
        rotation = cv2.getRotationMatrix2D((width / 2, height / 2), 4 + seed % 3, 1.0)
        warped = cv2.warpAffine(warped, rotation, size, borderValue=255)
        y, x = (720 - height) // 2, (960 - width) // 2
        frame[y : y + height, x : x + width] = warped
    blurred = cv2.GaussianBlur(frame, (0, 0), 1.1) + rng.normal(0, 9, frame.shape)
    grey = np.clip(blurred, 0, 255).astype(np.uint8)
    return cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR)


def write_video(path: Path, frames: list[np.ndarray], fps: float = 30.0) -> Path:
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (width, height))
    assert writer.isOpened()
    for frame in frames:
        writer.write(frame)
    writer.release()
    return path


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


def shot(screen: VerifyScreen, screenshot_dir: Path, name: str) -> None:
    path = screenshot_dir / f"{name}.png"
    assert screen.grab().save(str(path))
    assert path.stat().st_size > 10_000


def card_shows(screen: VerifyScreen, *expected: str) -> list[str]:
    """The card's visible texts, once each expected text was found among them."""
    texts = screen.card.visible_texts()
    missing = [text for text in expected if text not in texts]
    assert not missing, (missing, texts)
    return texts


class FakeVerifier:
    """A verifier that answers every call with one error, for codes a demo cannot produce."""

    def __init__(self, code: str) -> None:
        self.code = code

    def verify_payload(self, barcode: str) -> VerificationResult:
        raise ApiError(self.code, 500, "synthetic", request_id="req-test-1")

    def close(self) -> None:
        pass


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def make_screen(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path
) -> Iterator[Callable[..., VerifyScreen]]:
    """Screens over the demo service; no real camera is probed unless a test sets one."""
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    made: list[tuple[VerifyScreen, TaskRunner]] = []

    def make(
        kiosk: bool = False, size: tuple[int, int] | None = None, **options: Any
    ) -> VerifyScreen:
        tasks = TaskRunner()
        screen = VerifyScreen(demo_context, tasks, kiosk=kiosk, **options)
        qtbot.addWidget(screen)
        screen.resize(*(size or ((1366, 860) if kiosk else (1180, 800))))
        screen.show()
        qtbot.waitExposed(screen)
        made.append((screen, tasks))
        return screen

    yield make
    for screen, tasks in made:
        screen.shutdown()
        assert tasks.wait(60000)  # a page image's OCR may still be running on a loaded machine
        screen.close()


def wait_result(qtbot: Any, screen: VerifyScreen, action: Callable[[], None]) -> str:
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        action()
    return str(shown.args[0])


# -- inputs -------------------------------------------------------------------------------------


def test_demo_samples_verify_through_the_image_pipeline(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    screenshot_dir: Path,
) -> None:
    screen = make_screen()
    assert demo_context.demo is not None
    assert [b.text() for b in screen.sample_buttons] == [s.label for s in demo_context.demo.samples]
    shot(screen, screenshot_dir, "scan_page")
    state = wait_result(qtbot, screen, screen.sample_buttons[0].click)
    assert state == "verified"
    texts = card_shows(screen, "VERIFIED", ISSUER, AU_NET, AU_MASKED, "Alex Example")
    assert "12345678" not in texts
    shot(screen, screenshot_dir, "sample_verified")

    revoked = next(b for b in screen.sample_buttons if b.text().startswith("Revoked"))
    assert wait_result(qtbot, screen, revoked.click) == "not_verified"
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts
    assert any("revoked" in text for text in texts)
    shot(screen, screenshot_dir, "sample_revoked")


def test_image_file_from_the_open_dialog(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
    file_dialogs: FileDialogs,
) -> None:
    nz = sample(demo_context, "NZ")
    photo = camera_frame(badge_grey(nz.scan_url), seed=3)
    path = tmp_path / "photo of badge.jpg"
    assert cv2.imwrite(str(path), photo, [cv2.IMWRITE_JPEG_QUALITY, 60])
    file_dialogs.pick(path)
    screen = make_screen()
    assert wait_result(qtbot, screen, screen.open_image_button.click) == "verified"
    card_shows(screen, "VERIFIED", ISSUER, NZ_NET, "Sam Sample", "••-••••-••••••3-00")
    shot(screen, screenshot_dir, "image_verified")


def test_pdf_with_metadata_dropped_on_the_screen(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    au = sample(demo_context, "AU")
    path = tmp_path / "payslip.pdf"
    path.write_bytes(stamp_badge(blank_pdf(), render_badge_png(au.scan_url), au.payload))
    screen = make_screen()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    drop = QDropEvent(
        QPointF(200, 200),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    assert wait_result(qtbot, screen, lambda: screen.dropEvent(drop)) == "verified"
    assert drop.isAccepted()
    card_shows(screen, "VERIFIED", ISSUER, AU_NET, AU_MASKED)
    shot(screen, screenshot_dir, "pdf_verified")


def test_pdf_whose_metadata_and_qr_disagree(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
    file_dialogs: FileDialogs,
) -> None:
    au, nz = sample(demo_context, "AU"), sample(demo_context, "NZ")
    path = tmp_path / "tampered.pdf"
    # The printed badge is the NZ payslip, the hidden metadata the AU one.
    path.write_bytes(stamp_badge(blank_pdf(), render_badge_png(nz.scan_url), au.payload))
    file_dialogs.pick(path)
    screen = make_screen()
    assert wait_result(qtbot, screen, screen.open_pdf_button.click) == "not_verified"
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts
    assert error_message("CONFLICTING_CODES") in texts
    assert AU_NET not in texts and NZ_NET not in texts  # NOT VERIFIED shows no figures
    assert screen.card.support is not None
    screen.card.support.toggle.click()
    texts = screen.card.visible_texts()
    assert au.service_reference in texts and nz.service_reference in texts
    shot(screen, screenshot_dir, "pdf_disagreement")


def test_pasted_text_and_enter(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    screenshot_dir: Path,
) -> None:
    au = sample(demo_context, "AU")
    screen = make_screen()
    screen.code_field.setText(f"  {au.payload}\n")
    state = wait_result(qtbot, screen, lambda: qtbot.keyClick(screen.code_field, Qt.Key.Key_Return))
    assert state == "verified"
    card_shows(screen, "VERIFIED", ISSUER, AU_NET, AU_MASKED)
    shot(screen, screenshot_dir, "text_verified")


def refused(qtbot: Any, screen: VerifyScreen, action: Callable[[], None]) -> str:
    with qtbot.waitSignal(screen.input_refused, timeout=RESULT_TIMEOUT) as signal:
        action()
    return str(signal.args[0])


def test_an_image_without_a_code_is_no_verdict(
    make_screen: Callable[..., VerifyScreen], qtbot: Any, tmp_path: Path
) -> None:
    path = tmp_path / "holiday.png"
    assert cv2.imwrite(str(path), camera_frame(None, seed=1))
    screen = make_screen()
    started: list[int] = []
    screen.verification_started.connect(lambda: started.append(1))
    assert refused(qtbot, screen, lambda: screen.open_path(path)) == "NO_CODE_FOUND"
    assert not screen.showing_result
    assert screen.notice.isVisible() and screen.notice.text() == INPUT_PROBLEMS["NO_CODE_FOUND"]
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    broken = tmp_path / "broken.pdf"
    assert refused(qtbot, screen, lambda: screen.open_path(broken)) == "INPUT_UNREADABLE"
    assert "broken.pdf" in screen.notice.text()
    assert started == []  # nothing was sent to the service


# -- errors -------------------------------------------------------------------------------------


def _tampered(payload: str) -> str:
    parsed = parse_barcode(payload)
    flipped = bytes([parsed.ciphertext[0] ^ 0x01]) + parsed.ciphertext[1:]
    return build_payload_v2(parsed.service_reference, flipped)


def _unknown_reference(payload: str) -> str:
    parsed = parse_barcode(payload)
    return build_payload_v2("AAAAAAAAAAAAAAAAAAAAAA", parsed.ciphertext)


@pytest.mark.parametrize(
    ("make_text", "code"),
    [
        (_tampered, "DECRYPTION_FAILED"),
        (_unknown_reference, "SERVICE_REFERENCE_NOT_FOUND"),
    ],
    ids=["tampered", "unknown-reference"],
)
def test_not_genuine_codes_explained_by_the_real_service(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    screenshot_dir: Path,
    make_text: Callable[[str], str],
    code: str,
) -> None:
    screen = make_screen()
    screen.code_field.setText(make_text(sample(demo_context, "AU").payload))
    assert wait_result(qtbot, screen, screen.verify_button.click) == "not_verified"
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts
    assert error_message(code) in texts
    # Codes and request ids are for support: folded away until asked for.
    assert code not in " ".join(texts)
    assert screen.card.support is not None
    screen.card.support.toggle.click()
    texts = screen.card.visible_texts()
    assert code in texts
    assert screen.card.outcome is not None and screen.card.outcome.request_id in texts
    shot(screen, screenshot_dir, f"error_{code.lower()}")


@pytest.mark.parametrize(
    "text",
    ["hello, not a payslip", "/home/desk/Downloads/payslip.pdf", "https://example.com/v/abc"],
    ids=["typo", "file-path", "other-qr"],
)
def test_text_that_is_no_payslip_code_is_refused_locally(
    make_screen: Callable[..., VerifyScreen], qtbot: Any, text: str
) -> None:
    screen = make_screen()
    started: list[int] = []
    screen.verification_started.connect(lambda: started.append(1))
    screen.code_field.setText(text)
    assert refused(qtbot, screen, screen.verify_button.click) == "NOT_A_PAYSLIP_CODE"
    assert screen.notice.text() == NOT_A_PAYSLIP_CODE
    assert screen.notice.isVisible() and not screen.showing_result
    assert started == []  # nothing was sent


LOCAL_CODES = {"VERIFIED", "REVOKED", "CONFLICTING_CODES"}
"""Reasons the app itself produces from answers; each has its own test above or below."""


@pytest.mark.parametrize("code", sorted(set(MEANINGS) - LOCAL_CODES))
def test_every_other_error_code_has_its_message(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
    code: str,
) -> None:
    """Every code the service or the client can report, including ones a demo cannot produce."""
    meaning = MEANINGS[code]
    monkeypatch.setattr(demo_context, "verifier", FakeVerifier(code))
    screen = make_screen()
    screen.code_field.setText(sample(demo_context, "AU").payload)
    assert wait_result(qtbot, screen, screen.submit_text) == meaning.verdict
    texts = screen.card.visible_texts()
    assert meaning.headline in texts
    assert meaning.words in texts and meaning.instruction in texts
    assert ("Try again" in texts) is (meaning.verdict == Verdict.CANNOT_VERIFY)
    assert "req-test-1" in screen.card.all_texts() and "req-test-1" not in texts


def test_wrong_credentials_are_a_desk_problem(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert demo_context.service is not None
    url = demo_context.service.url
    wrong = ApiClient(url, "no-such-client", "wrong", verifier_url=url, deadline=5.0)
    monkeypatch.setattr(demo_context, "verifier", wrong)
    screen = make_screen()
    screen.code_field.setText(sample(demo_context, "AU").payload)
    try:
        assert wait_result(qtbot, screen, screen.submit_text) == "cannot_verify"
    finally:
        wrong.close()
    texts = screen.card.visible_texts()
    assert "CANNOT VERIFY" in texts
    assert error_message("UNAUTHORIZED") in texts


def test_service_down_then_back_without_a_restart(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
) -> None:
    working = demo_context.verifier
    dead = ApiClient(
        closed_port_url(),
        "desk",
        "secret",
        verifier_url=closed_port_url(),
        deadline=2.5,
        timeout=1.0,
    )
    monkeypatch.setattr(demo_context, "verifier", dead)
    # Say "retrying" well before the client gives up (its backoff is random).
    monkeypatch.setattr(verify_pipeline, "SLOW_MS", 200)
    screen = make_screen()
    screen.code_field.setText(sample(demo_context, "AU").payload)
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        screen.submit_text()
        qtbot.waitUntil(
            lambda: any(SLOW_TEXT in t for t in screen.card.visible_texts()), timeout=5000
        )
        shot(screen, screenshot_dir, "service_retrying")
    dead.close()
    assert shown.args == ["cannot_verify"]
    texts = screen.card.visible_texts()
    assert "CANNOT VERIFY" in texts
    assert error_message("SERVICE_UNREACHABLE") in texts
    shot(screen, screenshot_dir, "service_unreachable")

    monkeypatch.setattr(demo_context, "verifier", working)  # the service is back
    retry = next(b for b in screen.card.findChildren(QPushButton) if b.text() == "Try again")
    assert wait_result(qtbot, screen, retry.click) == "verified"
    assert AU_NET in screen.card.visible_texts()


def test_nothing_of_a_result_reaches_the_log(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    au = sample(demo_context, "AU")
    screen = make_screen()
    with caplog.at_level(logging.DEBUG):
        screen.code_field.setText(au.payload)
        wait_result(qtbot, screen, screen.submit_text)
        screen.clear_result()
    assert "state=verified" in caplog.text
    for secret in ("Alex Example", "12345678", "3,064.15", au.payload, au.service_reference):
        assert secret not in caplog.text


# -- privacy and keyboard -----------------------------------------------------------------------


def test_result_clears_itself_after_the_idle_timeout(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    screenshot_dir: Path,
) -> None:
    demo_context.settings.idle_timeout = 1
    screen = make_screen()
    qtbot.keyClicks(screen.code_field, sample(demo_context, "AU").payload)
    wait_result(qtbot, screen, screen.verify_button.click)
    assert "Clears in 1 s" in screen.card.visible_texts()
    with qtbot.waitSignal(screen.result_cleared, timeout=5000):
        pass
    assert not screen.showing_result
    assert screen.card.visible_texts() == []
    assert screen.code_field.text() == ""
    assert not screen.code_field.isUndoAvailable()  # Ctrl+Z cannot bring the code back
    shot(screen, screenshot_dir, "cleared")


def test_kiosk_is_operated_from_the_keyboard(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    screenshot_dir: Path,
) -> None:
    screen = make_screen(kiosk=True)
    assert screen.open_image_button.isHidden() and screen.open_pdf_button.isHidden()
    with qtbot.waitActive(screen):  # the offscreen platform activates on request, later
        screen.activateWindow()
    screen.settings_button.setFocus()
    for _ in range(6):
        if screen.code_field.hasFocus():
            break
        qtbot.keyClick(QApplication.focusWidget() or screen, Qt.Key.Key_Tab)
    assert screen.code_field.hasFocus()
    qtbot.keyClicks(screen.code_field, sample(demo_context, "NZ").payload)
    state = wait_result(qtbot, screen, lambda: qtbot.keyClick(screen.code_field, Qt.Key.Key_Return))
    assert state == "verified"
    assert NZ_NET in screen.card.visible_texts()
    assert screen.card.banner.next_button.hasFocus()
    shot(screen, screenshot_dir, "kiosk_result")
    with qtbot.waitSignal(screen.result_cleared, timeout=2000):
        qtbot.keyClick(screen.card.banner.next_button, Qt.Key.Key_Escape)
    assert not screen.showing_result
    assert screen.code_field.hasFocus() and screen.code_field.text() == ""
    # Enter on Next works too.
    screen.code_field.setText(sample(demo_context, "AU").payload)
    wait_result(qtbot, screen, lambda: qtbot.keyClick(screen.code_field, Qt.Key.Key_Enter))
    with qtbot.waitSignal(screen.result_cleared, timeout=2000):
        qtbot.keyClick(screen.card.banner.next_button, Qt.Key.Key_Return)
    shot(screen, screenshot_dir, "kiosk_scan_page")


def test_kiosk_settings_need_the_pin(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    dialog_answers: DialogAnswers,
) -> None:
    """The real dialogs: the kiosk asks for the PIN first (cancelled: no settings); a desk opens
    the settings straight away (cancelled)."""
    demo_context.settings.set_pin("2468")
    screen = make_screen(kiosk=True)
    dialog_answers.then(cancel)
    screen.settings_button.click()
    assert dialog_answers.kinds == ["PinDialog"]
    dialog_answers.then(type_pin("2468"), cancel)  # the right PIN: then the settings open
    screen.settings_button.click()
    assert dialog_answers.kinds == ["PinDialog", "PinDialog", "SettingsDialog"]
    desk = make_screen(kiosk=False)
    dialog_answers.then(cancel)
    desk.settings_button.click()
    assert dialog_answers.kinds[3:] == ["SettingsDialog"]


def test_pin_dialog_counts_and_locks(qtbot: Any, no_leaks: None) -> None:
    settings = Settings()
    settings.set_pin("2468")
    now = [1000.0]
    guard = PinGuard(settings, clock=lambda: now[0])
    dialog = PinDialog(guard)
    qtbot.addWidget(dialog)
    dialog.field.setText("1111")
    dialog.try_pin()
    assert "4 tries left" in dialog.message.text()
    for _ in range(MAX_TRIES - 1):
        dialog.field.setText("0000")
        dialog.try_pin()
    assert "Too many wrong PINs" in dialog.message.text()
    assert not dialog.field.isEnabled()
    assert guard.check("2468") == "locked"  # even the right PIN, while locked
    again = PinDialog(guard)  # reopening the dialog does not reset the lock
    qtbot.addWidget(again)
    assert not again.field.isEnabled()
    now[0] += 61
    again.field.setEnabled(True)
    again.field.setText("2468")
    again.try_pin()
    assert again.result() == QDialog.DialogCode.Accepted


def test_settings_dialog_keeps_the_secret_out_of_settings_json(
    qtbot: Any, no_leaks: None, config_dir: Path
) -> None:
    settings = Settings()
    secrets = SecretStore(config_dir, use_keyring=False)
    dialog = SettingsDialog(settings, secrets, save_dir=config_dir)
    qtbot.addWidget(dialog)
    dialog.mode.setCurrentIndex(dialog.mode.findData("remote"))
    dialog.verifier_url.setText("http://example.com")
    dialog.client_id.setText("desk-7")
    dialog.save()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert "https://" in dialog.error.text()
    assert "client secret" in dialog.error.text()
    dialog.verifier_url.setText("https://verify.example.com")
    dialog.client_secret.setText("s3cret-value")
    dialog.camera.setText("/videos/desk.avi")
    dialog.idle.setValue(30)
    dialog.environment.setCurrentIndex(dialog.environment.findData("sandbox"))
    dialog.pin.setText("13579")
    dialog.pin_again.setText("13579")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.change.camera and dialog.change.service and dialog.change.pin
    stored = (config_dir / "settings.json").read_text("utf-8")
    assert "s3cret-value" not in stored and "13579" not in stored
    loaded = Settings.load(config_dir)
    assert (loaded.mode, loaded.verifier_url, loaded.client_id) == (
        "remote",
        "https://verify.example.com",
        "desk-7",
    )
    assert (loaded.camera, loaded.idle_timeout, loaded.environment) == (
        "/videos/desk.avi",
        30,
        "sandbox",
    )
    assert loaded.check_pin("13579") and not loaded.check_pin("0000")
    assert secrets.get("remote:desk-7") == "s3cret-value"


# -- camera -------------------------------------------------------------------------------------


def test_recorded_camera_verifies_a_badge_once(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    au = sample(demo_context, "AU")
    badge = badge_grey(au.scan_url)
    frames = [camera_frame(None, seed=i) for i in range(6)]
    frames += [camera_frame(badge, seed=i) for i in range(24)]
    demo_context.settings.camera = str(write_video(tmp_path / "desk.avi", frames))
    screen = make_screen()
    qtbot.waitUntil(
        lambda: screen.preview.pixmap() is not None and not screen.preview.pixmap().isNull(),
        timeout=5000,
    )
    shot(screen, screenshot_dir, "camera_preview")
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as shown:
        pass
    assert shown.args == ["verified"]
    card_shows(screen, "VERIFIED", ISSUER, AU_NET, AU_MASKED)
    shot(screen, screenshot_dir, "camera_verified")
    # The video ends (a camera unplugged): said plainly, the result stays, nothing crashes,
    # and the badge still in view was verified only once.
    with qtbot.waitSignal(screen.camera_state, timeout=5000, check_params_cb=lambda s: s == "lost"):
        pass
    assert CAMERA_LOST_MESSAGE in screen.camera_status.text()
    assert screen.showing_result
    assert screen.scanner is not None and screen.scanner.stats.accepted == 1


def test_one_frame_with_a_code_is_not_enough(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    badge = badge_grey(sample(demo_context, "AU").scan_url)
    frames = [camera_frame(None, seed=i) for i in range(5)]
    frames.insert(2, camera_frame(badge, seed=9))
    demo_context.settings.camera = str(write_video(tmp_path / "flash.avi", frames))
    shown: list[str] = []
    screen = make_screen(decode_every=1)
    screen.result_shown.connect(shown.append)
    with qtbot.waitSignal(screen.camera_state, timeout=5000, check_params_cb=lambda s: s == "lost"):
        pass
    assert screen.scanner is not None
    assert screen.scanner.stats.sightings == 1  # the code was seen, and refused
    assert screen.scanner.stats.accepted == 0
    assert shown == [] and not screen.showing_result


@pytest.mark.parametrize("camera", ["missing.avi", "57"], ids=["missing-file", "no-device"])
def test_missing_camera_says_so_and_comes_back(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
    camera: str,
) -> None:
    target = tmp_path / camera if camera.endswith(".avi") else None
    demo_context.settings.camera = str(target) if target else camera
    screen = make_screen(camera_retry_ms=200)
    qtbot.waitUntil(lambda: NO_CAMERA_MESSAGE in screen.camera_status.text(), timeout=5000)
    assert "disconnected" not in screen.camera_status.text()  # there was none to disconnect
    assert screen.camera_status.property("problem") is True
    shot(screen, screenshot_dir, f"camera_lost_{camera}")
    if target is None:
        return
    badge = badge_grey(sample(demo_context, "NZ").scan_url)
    write_video(target, [camera_frame(badge, seed=i) for i in range(12)])  # plugged back in
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT):
        pass
    assert NZ_NET in screen.card.visible_texts()
    # Once a camera has worked, losing it is a disconnection.
    qtbot.waitUntil(lambda: CAMERA_LOST_MESSAGE in screen.camera_status.text(), timeout=5000)


def test_settings_choose_the_camera_by_name_with_a_live_preview(
    qtbot: Any,
    no_leaks: None,
    config_dir: Path,
    demo_context: AppContext,
    tmp_path: Path,
    file_dialogs: FileDialogs,
    screenshot_dir: Path,
) -> None:
    settings = Settings(camera="name:Front Desk Cam")  # saved earlier; not connected now
    dialog = SettingsDialog(
        settings, SecretStore(config_dir, use_keyring=False), save_dir=config_dir
    )
    qtbot.addWidget(dialog)
    labels = [dialog.camera_choice.itemText(i) for i in range(dialog.camera_choice.count())]
    assert labels[0] == "Front Desk Cam (not connected)"
    assert not dialog.sound.isChecked()  # the verdict sound is off by default
    dialog.show()
    qtbot.waitUntil(lambda: dialog.camera_preview.text() == NO_CAMERA_MESSAGE, timeout=5000)
    badge = badge_grey(sample(demo_context, "AU").scan_url)
    video = write_video(tmp_path / "desk camera.avi", [camera_frame(badge, i) for i in range(60)])
    file_dialogs.pick(video)
    dialog._browse_video()
    qtbot.waitUntil(
        lambda: (
            dialog.camera_preview.pixmap() is not None
            and not dialog.camera_preview.pixmap().isNull()
        ),
        timeout=5000,
    )
    assert dialog.camera_choice.currentText() == "Video file desk camera.avi"
    dialog.grab().save(str(screenshot_dir / "settings_camera_preview.png"))
    dialog.grab().save(str(SHOTS_REVIEW / "settings_camera_preview.png"))
    dialog.sound.setChecked(True)
    dialog.save()
    assert not dialog.previewing  # the camera is released for the verify screen
    assert settings.camera == str(video) and settings.verdict_sound


# -- the verify moment (issue 9) ------------------------------------------------------------------

SHOTS_REVIEW = Path("/tmp/shots9")
"""A copy of the verdict screenshots for a person to look at (outside the repo)."""


class SilentServer:
    """Accepts TCP connections and never answers: a hung service or a black-holing proxy."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self._stop.set()
        self.thread.join(2)
        for conn in self.held:
            conn.close()
        self.sock.close()


def desk_client(url: str) -> ApiClient:
    """A verifier client configured exactly as the desk's own (short connect, one deadline)."""
    return verifier_client(url, "desk", "secret", url)


def employee_strings(result_like: DemoSample, context: AppContext) -> list[str]:
    """Everything personal or financial the service returns for this sample."""
    result = context.verifier.verify_payload(result_like.payload)
    values = [value for _, value in result.employee.fields()]
    non_pii = result.payslip.payslip_non_pii
    currency = str(non_pii.get("currency", ""))
    for key in ("net", "gross", "paye", "paygw", "ytd_gross"):
        amount = amount_of(non_pii, key, currency)
        if amount:
            values.append(amount)
    return values


def test_a_camera_read_while_a_verdict_is_shown_leaves_it_unchanged(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    au, revoked = sample(demo_context, "AU"), sample(demo_context, "Revoked")
    frames = [camera_frame(badge_grey(au.scan_url), seed=i) for i in range(12)]
    frames += [camera_frame(badge_grey(revoked.scan_url), seed=i) for i in range(40)]
    demo_context.settings.camera = str(write_video(tmp_path / "two codes.avi", frames, fps=20))
    shown: list[str] = []
    started: list[int] = []
    screen = make_screen()
    screen.result_shown.connect(shown.append)
    screen.verification_started.connect(lambda: started.append(1))
    qtbot.waitUntil(lambda: shown == ["verified"], timeout=RESULT_TIMEOUT)

    def steady() -> list[str]:  # what does not change by itself (the countdown ticks)
        return [
            t
            for t in screen.card.visible_texts()
            if t != ANOTHER_CODE_HINT and not t.startswith("Clears in")
        ]

    before = steady()
    outcome = screen.card.outcome
    # The revoked payslip comes into view and is read while VERIFIED is on screen.
    qtbot.waitUntil(
        lambda: screen.scanner is not None and screen.scanner.stats.accepted >= 2, timeout=8000
    )
    # The screen has handled that read once the card says another code is in view; handling it
    # is where a new verification would have started.
    qtbot.waitUntil(lambda: ANOTHER_CODE_HINT in screen.card.visible_texts(), timeout=5000)
    assert shown == ["verified"] and started == [1]
    assert screen.card.outcome is outcome
    assert "Alex Example" in screen.card.visible_texts()
    assert steady() == before
    shot(screen, screenshot_dir, "another_code_in_view")
    # Only Next lets the camera's next code through.
    screen.clear_result()
    with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT) as next_one:
        pass
    assert next_one.args == ["not_verified"]


def test_a_silent_service_gives_cannot_verify_within_5_s(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
) -> None:
    silent = SilentServer()
    client = desk_client(silent.url)
    monkeypatch.setattr(demo_context, "verifier", client)
    try:
        screen = make_screen()
        started: list[int] = []
        screen.verification_started.connect(lambda: started.append(1))
        screen.code_field.setText(sample(demo_context, "AU").payload)
        with qtbot.waitSignal(screen.result_shown, timeout=5000) as shown:
            screen.submit_text()
            # The camera reads another badge while the service is silent: it waits its turn.
            assert screen.scanner is not None
            screen.scanner.code_accepted.emit(sample(demo_context, "NZ").payload)
        assert shown.args == ["cannot_verify"] and started == [1]
        assert ANOTHER_CODE_HINT in screen.card.visible_texts()
        texts = screen.card.visible_texts()
        assert "CANNOT VERIFY" in texts and "Try again" in texts
        assert MEANINGS["SERVICE_UNREACHABLE"].words in texts
        assert silent.held  # it did get connected, and then heard nothing
        shot(screen, screenshot_dir, "silent_service")
    finally:
        client.close()
        silent.close()


def test_service_stopped_and_the_camera_still_on_the_code_gives_one_verdict(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    badge = badge_grey(sample(demo_context, "AU").scan_url)
    # About 7 s of the same badge in front of the lens.
    frames = [camera_frame(badge, seed=i % 5) for i in range(140)]
    demo_context.settings.camera = str(write_video(tmp_path / "held.avi", frames, fps=20))
    stopped = closed_port_url()  # the service is stopped: its port refuses connections
    client = desk_client(stopped)
    monkeypatch.setattr(demo_context, "verifier", client)
    monkeypatch.setattr(AppContext, "service_url", property(lambda self: stopped))
    shown: list[str] = []
    started: list[int] = []
    try:
        screen = make_screen()
        screen.result_shown.connect(shown.append)
        screen.verification_started.connect(lambda: started.append(1))
        with qtbot.waitSignal(screen.result_shown, timeout=RESULT_TIMEOUT):
            pass
        assert shown == ["cannot_verify"]
        with qtbot.waitSignal(
            screen.camera_state, timeout=15000, check_params_cb=lambda s: s == "lost"
        ):
            pass  # the recording ran to its end with the code in view all along
        assert shown == ["cannot_verify"] and started == [1]
        assert screen.showing_result and not screen.pending
        assert "CANNOT VERIFY" in screen.card.visible_texts()
        assert screen.service_status.text().startswith("● Service not reachable")
    finally:
        client.close()


def test_not_verified_shows_no_payslip_figures_and_no_employee_data(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    revoked = sample(demo_context, "Revoked")
    au, nz = sample(demo_context, "AU"), sample(demo_context, "NZ")
    personal = employee_strings(revoked, demo_context)
    assert personal  # the service does return them for a revoked payslip
    screen = make_screen()
    screen.code_field.setText(revoked.payload)
    assert wait_result(qtbot, screen, screen.submit_text) == "not_verified"
    assert screen.card.support is not None
    screen.card.support.toggle.click()  # even the support details hold none of it
    held = " ".join(screen.card.all_texts())
    for value in personal:
        assert value not in held, value
    assert "Reveal numbers" not in held and screen.card.details is None
    texts = screen.card.visible_texts()
    assert "NOT VERIFIED" in texts and ISSUER in texts
    assert MEANINGS["REVOKED"].instruction in texts
    shot(screen, screenshot_dir, "revoked_no_data")

    # A PDF whose metadata and printed code disagree: neither side's data is shown.
    path = tmp_path / "tampered.pdf"
    path.write_bytes(stamp_badge(blank_pdf(), render_badge_png(nz.scan_url), au.payload))
    assert wait_result(qtbot, screen, lambda: screen.open_path(path)) == "not_verified"
    held = " ".join(screen.card.all_texts())
    for value in employee_strings(au, demo_context) + employee_strings(nz, demo_context):
        assert value not in held, value
    assert MEANINGS["CONFLICTING_CODES"].words in screen.card.visible_texts()


def test_health_poll_shows_connected_or_not_reachable(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = make_screen()
    qtbot.waitUntil(lambda: screen.service_status.text() == "● Service connected", timeout=5000)
    assert demo_context.service_url not in screen.service_status.text()
    dead = closed_port_url()
    monkeypatch.setattr(AppContext, "service_url", property(lambda self: dead))
    with qtbot.waitSignal(
        screen.service_state, timeout=5000, check_params_cb=lambda s: s == "unreachable"
    ):
        screen.poll_health()
    # The desk's operator is told which address does not answer (the kiosk says no address).
    where = dead.split("://", 1)[1]
    assert screen.service_status.text() == f"● Service not reachable at {where}"
    assert screen.service_status.property("problem") is True


def _wait_until_tall(qtbot: Any, widget: QWidget, at_least: float, what: object) -> None:
    """Wait until the layout, settling after a result, gives `widget` `at_least` its height."""

    def tall_enough() -> None:
        assert widget.height() >= at_least, (what, widget.height())

    qtbot.waitUntil(tall_enough, timeout=5000)


def _verdict_screens(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
    kiosk: bool,
) -> None:
    SHOTS_REVIEW.mkdir(exist_ok=True)
    working = demo_context.verifier
    for width, height in ((1024, 600), (1920, 1080)):
        screen = make_screen(kiosk=kiosk)
        screen.resize(width, height)
        QApplication.processEvents()  # the layout requests the resize posted
        cases = [
            ("verified", sample(demo_context, "NZ").payload, working),
            ("not_verified", sample(demo_context, "Revoked").payload, working),
            ("cannot_verify", sample(demo_context, "AU").payload, None),
        ]
        for state, payload, client in cases:
            dead = None
            if client is None:
                dead = desk_client(closed_port_url())
                client = dead
            monkeypatch.setattr(demo_context, "verifier", client)
            screen.code_field.setText(payload)
            assert wait_result(qtbot, screen, screen.submit_text) == state
            if dead is not None:
                dead.close()
            banner = screen.card.banner
            _wait_until_tall(qtbot, banner, height / 2, (state, width))
            assert banner.mapTo(screen, banner.rect().bottomLeft()).y() <= height
            texts = banner.findChildren(QLabel)
            words = {lab.text() for lab in texts if lab.isVisibleTo(banner)}
            assert (
                MEANINGS[
                    {"verified": "VERIFIED", "not_verified": "REVOKED"}.get(
                        state, "SERVICE_UNREACHABLE"
                    )
                ].headline
                in words
            )
            if state == "verified":
                for fact in ("Sam Sample", NZ_NET, "14 Nov 2026", ISSUER):
                    assert fact in words, fact
            name = f"verdict_{'kiosk' if kiosk else 'desk'}_{state}_{width}x{height}.png"
            assert screen.grab().save(str(screenshot_dir / name))
            screen.grab().save(str(SHOTS_REVIEW / name))
            screen.clear_result()
        monkeypatch.setattr(demo_context, "verifier", working)


@pytest.mark.parametrize("kiosk", [False, True], ids=["desk", "kiosk"])
def test_each_verdict_is_the_screen(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
    monkeypatch: pytest.MonkeyPatch,
    screenshot_dir: Path,
    kiosk: bool,
) -> None:
    _verdict_screens(make_screen, demo_context, qtbot, monkeypatch, screenshot_dir, kiosk=kiosk)


def test_verdict_sound_is_off_by_default_and_tells_the_verdicts_apart(
    make_screen: Callable[..., VerifyScreen],
    demo_context: AppContext,
    qtbot: Any,
) -> None:
    played: list[tuple[Verdict, bytes]] = []
    screen = make_screen()
    screen.sound.player = lambda verdict, data: played.append((verdict, data))
    assert demo_context.settings.verdict_sound is False
    screen.code_field.setText(sample(demo_context, "AU").payload)
    wait_result(qtbot, screen, screen.submit_text)
    assert played == []  # off by default
    screen.clear_result()
    demo_context.settings.verdict_sound = True
    for prefix, verdict in (("AU", Verdict.VERIFIED), ("Revoked", Verdict.NOT_VERIFIED)):
        screen.code_field.setText(sample(demo_context, prefix).payload)
        assert wait_result(qtbot, screen, screen.submit_text) == verdict
        screen.clear_result()
    assert [v for v, _ in played] == [Verdict.VERIFIED, Verdict.NOT_VERIFIED]
    # Each sound is a real, short WAV, and the three differ.
    sounds = {v: verdict_wav(v) for v in Verdict}
    assert played[0][1] == sounds[Verdict.VERIFIED]
    assert len(set(sounds.values())) == 3
    for data in sounds.values():
        with wave.open(io.BytesIO(data)) as clip:
            seconds = clip.getnframes() / clip.getframerate()
            assert 0.2 < seconds < 0.8 and clip.getnchannels() == 1
