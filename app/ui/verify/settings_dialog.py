"""The desk's settings: camera (by name, with a live preview), privacy timeout, verdict sound,
which service to use, and the kiosk PIN.

The client secret goes to the :class:`SecretStore` under ``remote:<client_id>`` and never into
``settings.json`` (settings files get copied and mailed around; keyrings do not). A field left
empty keeps the stored secret or PIN, so an operator can change the camera without retyping
credentials. Changing the service takes effect at the next start: the running verifier client
and embedded service belong to the app's composition root, not to this dialog.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QImage, QPixmap, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.api.pinning import normalize_fingerprint
from app.scan.cameras import NAME_PREFIX, camera_label, list_cameras
from app.settings.desk import SecretStore, Settings
from app.ui.verify.camera import CameraFeed
from app.ui.verify.camera_worker import (
    NO_CAMERA_MESSAGE,
    CameraScanner,
    SourceOpener,
    opencv_opener,
)
from app.ui.widgets.dialog_parts import dialog_buttons, error_line
from app.ui.widgets.fit_screen import fit_to_screen, scrolling

log = logging.getLogger("app.settings_dialog")

MIN_IDLE, MAX_IDLE = 5, 600
MIN_PIN, MAX_PIN = 4, 12
PREVIEW_WIDTH, PREVIEW_HEIGHT = 320, 200
PREVIEW_NO_DECODE = 1_000_000
"""The settings preview only shows frames; it never decodes or verifies anything."""


@dataclass(frozen=True)
class SettingsChange:
    """What an accepted dialog changed, so the screen restarts only what it must."""

    camera: bool = False
    idle_timeout: bool = False
    service: bool = False
    """Mode, URLs, credentials or environment: applied when the app next starts."""
    pin: bool = False


def _usable_url(text: str) -> bool:
    """https anywhere, or http on the loopback interface only (PROTOCOL §3 scan base rule)."""
    parts = urlsplit(text)
    if parts.scheme == "https" and parts.hostname:
        return True
    return parts.scheme == "http" and parts.hostname in {"127.0.0.1", "localhost", "::1"}


class SettingsDialog(QDialog):
    """Edits a :class:`Settings` in place and saves it on OK.

    No signals of its own beyond QDialog's; after ``exec()`` returns Accepted, :attr:`change`
    says what changed.
    """

    def __init__(
        self,
        settings: Settings,
        secrets: SecretStore,
        parent: QWidget | None = None,
        *,
        save_dir: Path | None = None,
        allow_no_pin: bool = True,
        preview_opener: Callable[[str], SourceOpener] | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.secrets = secrets
        self._save_dir = save_dir
        self.change = SettingsChange()
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)
        outer = QVBoxLayout(self)
        # The groups scroll; the error line and Save/Cancel stay below, always on screen.
        body = QWidget()
        groups = QVBoxLayout(body)
        groups.setContentsMargins(0, 0, 8, 0)
        outer.addWidget(scrolling(body), 1)

        desk = QGroupBox("This desk")
        desk_form = QFormLayout(desk)
        camera_row = QHBoxLayout()
        # The saved value (``name:<camera>``, a device number or a video file); the list below
        # is how an operator chooses it.
        self.camera = QLineEdit(settings.camera)
        self.camera.setAccessibleName("Camera setting")
        self.camera.hide()
        self.camera_choice = QComboBox()
        self.camera_choice.setAccessibleName("Camera")
        self._fill_cameras(settings.camera)
        self.camera_choice.currentIndexChanged.connect(self._camera_chosen)
        browse = QPushButton("Video file…")
        browse.setToolTip("Use a recorded video as the camera (for demos and testing)")
        browse.clicked.connect(self._browse_video)
        camera_row.addWidget(self.camera_choice, 1)
        camera_row.addWidget(browse)
        desk_form.addRow("Camera", camera_row)
        self.camera_preview = QLabel("Starting the camera…")
        self.camera_preview.setObjectName("settingsPreview")
        self.camera_preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.camera_preview.setFixedSize(PREVIEW_WIDTH, PREVIEW_HEIGHT)
        self.camera_preview.setStyleSheet("background:#20262e;color:#cfd6df;border-radius:6px;")
        self.camera_preview.setWordWrap(True)
        desk_form.addRow("Preview", self.camera_preview)
        self._scanner: CameraScanner | None = None
        self._preview_opener = preview_opener
        self.sound = QCheckBox("Play a short sound with each verdict")
        self.sound.setChecked(bool(settings.verdict_sound))
        desk_form.addRow("Sound", self.sound)
        self.idle = QSpinBox()
        self.idle.setRange(MIN_IDLE, MAX_IDLE)
        self.idle.setSuffix(" s")
        self.idle.setValue(min(MAX_IDLE, max(MIN_IDLE, int(settings.idle_timeout))))
        self.idle.setAccessibleName("Clear results after")
        desk_form.addRow("Clear results after", self.idle)
        groups.addWidget(desk)

        service = QGroupBox("Verification service")
        form = QFormLayout(service)
        self.mode = QComboBox()
        self.mode.addItem("Embedded — this computer runs the service", "embedded")
        self.mode.addItem("Remote — a central verification service", "remote")
        self.mode.setCurrentIndex(max(0, self.mode.findData(settings.mode)))
        form.addRow("Mode", self.mode)
        self.verifier_url = QLineEdit(settings.verifier_url)
        self.verifier_url.setPlaceholderText("https://verify.example.com")
        form.addRow("Verifier URL", self.verifier_url)
        self.auth_url = QLineEdit(settings.auth_url)
        self.auth_url.setPlaceholderText("Same as the verifier URL when empty")
        form.addRow("Auth URL", self.auth_url)
        self.client_id = QLineEdit(settings.client_id)
        form.addRow("Client id", self.client_id)
        self.client_secret = QLineEdit()
        self.client_secret.setEchoMode(QLineEdit.EchoMode.Password)
        has_secret = bool(settings.client_id and secrets.get(f"remote:{settings.client_id}"))
        self.client_secret.setPlaceholderText(
            "Saved — leave empty to keep it" if has_secret else "Client secret"
        )
        form.addRow("Client secret", self.client_secret)
        self.fingerprint = QLineEdit(settings.tls_fingerprint)
        self.fingerprint.setPlaceholderText("From Admin → Add front desk, for an office network")
        self.fingerprint.setAccessibleName("Certificate fingerprint")
        form.addRow("Certificate fingerprint", self.fingerprint)
        self.environment = QComboBox()
        self.environment.addItem("Production", "production")
        self.environment.addItem("Sandbox (test data only)", "sandbox")
        self.environment.setCurrentIndex(max(0, self.environment.findData(settings.environment)))
        form.addRow("Environment", self.environment)
        note = QLabel("Service changes apply the next time the app starts.")
        note.setObjectName("hint")
        note.setStyleSheet("color:#5b6675;")
        form.addRow(note)
        groups.addWidget(service)

        kiosk = QGroupBox("Kiosk operator PIN")
        pin_form = QFormLayout(kiosk)
        self.pin = QLineEdit()
        self.pin.setEchoMode(QLineEdit.EchoMode.Password)
        self.pin.setPlaceholderText(
            "Leave empty to keep the current PIN" if settings.kiosk_pin_hash else "No PIN set"
        )
        self.pin_again = QLineEdit()
        self.pin_again.setEchoMode(QLineEdit.EchoMode.Password)
        pin_form.addRow("New PIN", self.pin)
        pin_form.addRow("Repeat PIN", self.pin_again)
        self.remove_pin = QCheckBox("Remove the PIN (settings open to anyone at the kiosk)")
        # A kiosk is never unlocked: from the kiosk the PIN can be changed, not removed.
        self.remove_pin.setVisible(bool(settings.kiosk_pin_hash) and allow_no_pin)
        pin_form.addRow(self.remove_pin)
        groups.addWidget(kiosk)

        self.error = error_line("settingsError")
        outer.addWidget(self.error)
        buttons = dialog_buttons(self, QDialogButtonBox.StandardButton.Save, self.save)
        if allow_no_pin:  # not at the kiosk: the welcome (issue 11) can change what this does
            self.welcome_button = QPushButton("Getting started…")
            self.welcome_button.clicked.connect(self._open_welcome)
            buttons.addButton(self.welcome_button, QDialogButtonBox.ButtonRole.ResetRole)
        outer.addWidget(buttons)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self._mode_changed()
        # As tall as the whole body where the screen has room (the hint stays small for small
        # screens; the body scrolls there).
        whole = body.sizeHint().height() + buttons.sizeHint().height() + 60
        fit_to_screen(self, QSize(self.sizeHint().width(), whole))

    def _open_welcome(self) -> None:
        """Close the settings and show the first-run welcome again over the main window."""
        from app.ui.welcome import reopen_welcome

        parent = self.parentWidget()
        self.reject()
        reopen_welcome(parent.window() if parent else self, self.settings, self.secrets)

    def _mode_changed(self) -> None:
        remote = self.mode.currentData() == "remote"
        for field in (
            self.verifier_url,
            self.auth_url,
            self.client_id,
            self.client_secret,
            self.fingerprint,
        ):
            field.setEnabled(remote)

    def _fill_cameras(self, current: str) -> None:
        """Cameras by name; the saved choice first if it is not connected now."""
        self.camera_choice.blockSignals(True)
        self.camera_choice.clear()
        choices = list_cameras()
        for choice in choices:
            self.camera_choice.addItem(choice.label, choice.setting)
        if current and self.camera_choice.findData(current) < 0:
            label = camera_label(current)
            if current.startswith(NAME_PREFIX):
                label += " (not connected)"
            self.camera_choice.insertItem(0, label, current)
        if self.camera_choice.count() == 0:
            self.camera_choice.addItem("No camera found", "")
        self.camera_choice.setCurrentIndex(max(0, self.camera_choice.findData(current)))
        self.camera_choice.blockSignals(False)

    def _camera_chosen(self) -> None:
        self.camera.setText(str(self.camera_choice.currentData() or ""))
        self._start_preview()

    def _browse_video(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Video to use as the camera", "", "Videos (*.avi *.mp4 *.mkv *.mov)"
        )
        if path:
            self.camera.setText(path)
            self._fill_cameras(path)
            self._start_preview()

    # -- live preview of the chosen camera ----------------------------------------------------

    def _start_preview(self) -> None:
        """Show what the chosen camera sees (no decoding), so the operator picks the right one."""
        self._stop_preview()
        setting = self.camera.text().strip()
        if not setting:
            self.camera_preview.setText(NO_CAMERA_MESSAGE)
            return
        self.camera_preview.setText("Starting the camera…")
        opener = (self._preview_opener or opencv_opener)(setting)
        scanner = CameraScanner(opener, decode_every=PREVIEW_NO_DECODE, parent=self)
        scanner.preview.connect(self._show_preview)
        scanner.camera_lost.connect(self._preview_lost)
        self._scanner = scanner
        scanner.start()

    def _show_preview(self, image: QImage) -> None:
        self.camera_preview.setPixmap(
            QPixmap.fromImage(image).scaled(
                self.camera_preview.size(),
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        )

    def _preview_lost(self, message: str) -> None:
        self.camera_preview.clear()
        self.camera_preview.setText(message)

    def _stop_preview(self) -> None:
        scanner, self._scanner = self._scanner, None
        if scanner is not None:
            scanner.stop()
            scanner.deleteLater()

    @property
    def previewing(self) -> bool:
        return self._scanner is not None

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self._scanner is None:
            self._start_preview()

    def done(self, result: int) -> None:
        """Closing the dialog in any way releases the camera for the verify screen."""
        self._stop_preview()
        super().done(result)

    def problems(self) -> list[str]:
        """Why the form cannot be saved as it stands (empty when it can)."""
        found: list[str] = []
        if not self.camera.text().strip():
            found.append("Choose a camera, or a video file.")
        if self.mode.currentData() == "remote":
            if not _usable_url(self.verifier_url.text().strip()):
                found.append(
                    "The verifier URL must start with https:// (http only on this computer)."
                )
            auth = self.auth_url.text().strip()
            if auth and not _usable_url(auth):
                found.append("The auth URL must start with https:// (http only on this computer).")
            client_id = self.client_id.text().strip()
            if not client_id:
                found.append("Enter this desk's client id.")
            elif not self.client_secret.text() and not self.secrets.get(f"remote:{client_id}"):
                found.append("Enter the client secret for this client id.")
            typed = self.fingerprint.text().strip()
            if typed and normalize_fingerprint(typed) is None:
                found.append(
                    "The certificate fingerprint is 64 hex digits (0-9, A-F), as Admin shows it."
                )
        pin = self.pin.text()
        if pin or self.pin_again.text():
            if not (pin.isdigit() and MIN_PIN <= len(pin) <= MAX_PIN):
                found.append(f"The PIN must be {MIN_PIN} to {MAX_PIN} digits.")
            elif pin != self.pin_again.text():
                found.append("The two PINs differ.")
        return found

    def save(self) -> None:
        """Apply the form to the settings, store the secret, write settings.json and close."""
        problems = self.problems()
        if problems:
            self.error.setText("\n".join(problems))
            return
        s = self.settings
        before = (
            s.mode,
            s.verifier_url,
            s.auth_url,
            s.client_id,
            s.environment,
            s.tls_fingerprint,
        )
        camera = self.camera.text().strip()
        change_camera = camera != s.camera
        change_idle = self.idle.value() != s.idle_timeout
        s.camera = camera
        s.idle_timeout = self.idle.value()
        s.verdict_sound = self.sound.isChecked()
        s.mode = str(self.mode.currentData())
        s.environment = str(self.environment.currentData())
        secret_changed = False
        if s.mode == "remote":
            s.verifier_url = self.verifier_url.text().strip()
            s.auth_url = self.auth_url.text().strip()
            s.client_id = self.client_id.text().strip()
            s.tls_fingerprint = normalize_fingerprint(self.fingerprint.text()) or ""
            if self.client_secret.text():
                self.secrets.set(f"remote:{s.client_id}", self.client_secret.text())
                secret_changed = True
        self.client_secret.clear()
        change_pin = False
        if self.remove_pin.isChecked():
            s.kiosk_pin_hash = ""
            change_pin = True
        elif self.pin.text():
            s.set_pin(self.pin.text())
            change_pin = True
        self.pin.clear()
        self.pin_again.clear()
        after = (s.mode, s.verifier_url, s.auth_url, s.client_id, s.environment, s.tls_fingerprint)
        s.save(self._save_dir)
        self.change = SettingsChange(
            camera=change_camera,
            idle_timeout=change_idle,
            service=before != after or secret_changed,
            pin=change_pin,
        )
        log.info(
            "settings saved (camera=%s service=%s pin=%s)",
            self.change.camera,
            self.change.service,
            self.change.pin,
        )
        self.accept()


def edit_settings(
    settings: Settings, secrets: SecretStore, parent: QWidget, camera: CameraFeed, *, kiosk: bool
) -> None:
    """The settings dialog over a screen. The screen's camera is handed over to the dialog's
    preview while it is open (most cameras cannot be opened twice) and taken back when it
    closes. A kiosk's dialog never lets the operator PIN be removed."""
    camera_was_on = camera.scanner is not None
    camera.stop()
    dialog = SettingsDialog(settings, secrets, parent, allow_no_pin=not kiosk)
    try:
        dialog.exec()
    finally:
        dialog.deleteLater()
        if camera_was_on:
            camera.start()
