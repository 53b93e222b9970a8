"""Pair a phone: a one-time QR code that opens the phone page and signs that phone in.

The QR holds `<public url>/v/pair#<one-time code>` (service.domain.pairing): it works once and
expires in minutes, and the phone ends up with its own verifier client, listed under Clients as
"<front desk> · phone paired <date>" with when it was last used, which Admin can remove to stop
that phone alone. That client stops signing in after the days chosen here (90 unless changed,
kept in settings.json): a phone keeps its secret in its browser, and phones get lost. The code is
shown only while this dialog is open and is never stored or logged by the app.
"""

from __future__ import annotations

import contextlib
import io
from datetime import UTC, datetime
from urllib.parse import urlsplit

import segno
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.api import ApiClient
from app.api.errors import ApiError
from app.api.pinning import fingerprint_words
from app.settings.desk import Settings
from app.ui.widgets.fit_screen import fit_to_screen, scrolling
from app.ui.widgets.staff_style import label, set_status, staff_screen, titled_column
from app.ui.widgets.tasks import TaskRunner
from app.verify.presentation import error_message
from service.protocol.schemas import ClientSummary, Overview, PairingOffer
from service.protocol.schemas.access import MAX_PHONE_DAYS, PHONE_DAYS

QR_PIXELS = 240
"""The QR's box: a phone reads it from arm's length, and it fits a 512 px tall screen."""
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def verifier_clients(overview: Overview) -> list[ClientSummary]:
    """Enabled verifier clients that can hand out a phone pairing (not phones themselves)."""
    return [
        c
        for c in overview.clients
        if c.role == "verifier" and not c.disabled and "paired" not in c.name
    ]


def qr_pixmap(text: str, pixels: int = QR_PIXELS) -> QPixmap:
    buffer = io.BytesIO()
    symbol = segno.make(text, error="m")
    modules = symbol.symbol_size(border=4)[0]
    symbol.save(buffer, kind="png", scale=max(1, pixels // modules), border=4)
    pixmap = QPixmap()
    pixmap.loadFromData(buffer.getvalue(), "PNG")
    return pixmap


class PairDialog(QDialog):
    """Signals none; `offer` holds the current pairing (tests read its link from the QR)."""

    def __init__(
        self,
        admin: ApiClient,
        tasks: TaskRunner,
        overview: Overview,
        verifier_id: str | None = None,
        parent: QWidget | None = None,
        settings: Settings | None = None,
        fingerprint: str | None = None,
    ) -> None:
        super().__init__(parent)
        staff_screen(self)
        self.setWindowTitle("Pair a phone")
        self.settings = settings
        self.fingerprint = fingerprint
        """This service's certificate fingerprint when the link reaches it directly over HTTPS."""
        self.setMinimumWidth(680)
        self.admin = admin
        self.tasks = tasks
        self.offer: PairingOffer | None = None
        self._expires: datetime | None = None

        # A compact layout (issue 35): the QR beside its controls, not above them, and the
        # Close button outside the scrolling body, so the dialog fits 1024x600 and 1366x768 at
        # 150 % (910x512 logical pixels) with Close on the screen and the whole QR in view.
        layout = titled_column(
            self,
            "Pair a phone",
            "The phone scans this code with its camera and opens the link. It can then verify "
            "payslips in its browser, as this front desk, with nothing to install and no secret "
            "to type.",
            margins=(20, 14, 20, 14),
            spacing=8,
        )
        body = QWidget()
        row = QHBoxLayout(body)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(16)
        self.qr = QLabel()
        self.qr.setObjectName("pairQr")
        self.qr.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.qr.setFixedSize(QR_PIXELS + 16, QR_PIXELS + 16)
        self.qr.setStyleSheet("background: white; border-radius: 8px;")
        row.addWidget(self.qr, 0, Qt.AlignmentFlag.AlignTop)
        side = QVBoxLayout()
        side.setSpacing(6)
        side.addWidget(QLabel("Front desk:"))
        self.desk = QComboBox()
        self.desk.setObjectName("pairDesk")
        self.desk.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.desk.setMinimumContentsLength(24)
        for client in verifier_clients(overview):
            self.desk.addItem(f"{client.name}  ({client.client_id})", client.client_id)
        if verifier_id:  # the front desk selected on the Admin screen
            owned = [c for c in verifier_clients(overview) if c.owner_id == verifier_id]
            if owned:
                self.desk.setCurrentIndex(self.desk.findData(owned[0].client_id))
        side.addWidget(self.desk)
        self.make_button = QPushButton("Show pairing code")
        self.make_button.setObjectName("primary")
        side.addWidget(self.make_button, 0, Qt.AlignmentFlag.AlignLeft)
        lasts = QHBoxLayout()
        lasts.addWidget(QLabel("Signed in for"))
        self.days = QSpinBox()
        self.days.setObjectName("pairDays")
        self.days.setRange(1, MAX_PHONE_DAYS)
        self.days.setValue(settings.phone_days if settings is not None else PHONE_DAYS)
        self.days.setSuffix(" days")
        self.days.setAccessibleName("Days the phone stays signed in")
        lasts.addWidget(self.days)
        lasts.addStretch(1)
        side.addLayout(lasts)
        self.expiry = label("", "hint")
        side.addWidget(self.expiry)
        self.status = label("", "adminStatus")
        side.addWidget(self.status)
        side.addWidget(
            label(
                "Works once, for 10 minutes. The phone gets its own sign-in (Clients: “… phone "
                "paired <date>”, with its last use): remove it there to stop that phone at once.",
                "hint",
            )
        )
        side.addStretch(1)
        row.addLayout(side, 1)
        layout.addWidget(scrolling(body), 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self._tick)
        self.make_button.clicked.connect(self.make)
        if self.desk.count() == 0:
            self.make_button.setEnabled(False)
            set_status(self.status, "Add a front desk first: a phone pairs as one.", error=True)
        # Open at the whole layout's size where the screen has room: Qt would open a dialog at
        # most two thirds of the screen tall (341 px of 512 at 150 %), the QR scrolled half away.
        fit_to_screen(self, self.sizeHint())

    def make(self) -> None:
        client_id = self.desk.currentData()
        if not client_id:
            return
        days = self.days.value()
        if self.settings is not None and self.settings.phone_days != days:
            self.settings.phone_days = days  # the next pairing offers the same
            with contextlib.suppress(OSError):  # an unwritable config must not stop a pairing
                self.settings.save()
        self.make_button.setEnabled(False)
        set_status(self.status, "Asking the service for a pairing code…")
        self.tasks.run(
            lambda: self.admin.admin_pair_verifier(client_id, days), self._show, self._failed
        )

    def _show(self, offer: PairingOffer) -> None:
        self.offer = offer
        self.qr.setPixmap(qr_pixmap(offer.pair_url))
        self._expires = datetime.fromisoformat(offer.expires_at.replace("Z", "+00:00"))
        self.make_button.setText("New pairing code")
        self.make_button.setEnabled(True)
        host = urlsplit(offer.pair_url).hostname or ""
        if host in LOOPBACK:
            set_status(
                self.status,
                f"This service is only reachable on this computer ({host}), so a phone cannot "
                "open the link. Run the service with --public-url set to an address phones reach "
                "(docs/deploy.md).",
                error=True,
            )
        elif self.fingerprint:  # this computer's own certificate: the phone's browser warns
            set_status(
                self.status,
                f"Scan with the phone for {offer.verifier_name}. Its browser may warn about this "
                "computer's own certificate: go on only if the certificate it shows has the "
                f"SHA-256 fingerprint {fingerprint_words(self.fingerprint)}.",
            )
        else:
            set_status(self.status, f"Scan with the phone for {offer.verifier_name}.")
        self._tick()
        self.timer.start()

    def _failed(self, exc: Exception) -> None:
        self.make_button.setEnabled(True)
        text = (
            f"{error_message(exc.code)} ({exc.code})"
            if isinstance(exc, ApiError)
            else f"No pairing code ({type(exc).__name__})."
        )
        set_status(self.status, text, error=True)

    def _tick(self) -> None:
        if self._expires is None:
            return
        left = int((self._expires - datetime.now(UTC)).total_seconds())
        if left <= 0:
            self.clear("This code has expired. Press “New pairing code” for another.")
            return
        self.expiry.setText(f"Expires in {left // 60}:{left % 60:02d}")

    def clear(self, note: str = "") -> None:
        """Forget the code: it is not kept once the dialog closes or the code expires."""
        self.timer.stop()
        self.offer = None
        self._expires = None
        self.qr.clear()
        self.expiry.setText(note)

    def done(self, result: int) -> None:
        self.clear()
        super().done(result)


def open_pair_dialog(
    parent: QWidget,
    admin: ApiClient | None,
    tasks: TaskRunner,
    overview: Overview,
    verifier_id: str | None,
    settings: Settings | None = None,
    fingerprint: str | None = None,
) -> PairDialog | None:
    """What the Admin screen's "Pair a phone…" button does."""
    if admin is None:
        return None
    dialog = PairDialog(admin, tasks, overview, verifier_id, parent, settings, fingerprint)
    dialog.open()
    return dialog
