"""How other desks and phones reach this computer's service: its port, who may connect, the
address printed on badges, and HTTPS, in words that say what changing each one means.

Shown on the Service screen when the service runs inside this app (not for a demo, which is gone
when the app closes, nor for a desk that uses a service elsewhere). Nothing changes until "Save
and restart the service": the values are checked first (a port in range, an address phones can
use, a certificate that matches its key), saved in settings.json, and the service restarts with
them; this app's own clients and an issuer saved "for this computer" follow it by themselves.
"""

from __future__ import annotations

import contextlib
import socket
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.api.probe import probe
from app.shell.context import NETWORK, AppContext
from app.ui.widgets.staff_style import label, section, set_status
from app.ui.widgets.tasks import TaskRunner
from service.hosting.network_address import is_loopback_url
from service.hosting.tls import TlsError, server_context

WHO = (
    ("loopback", "This computer only"),
    (NETWORK, "This office network (other desks and phones)"),
)
WARNING_STYLE = (
    "background:#fff4ce;border:1px solid #c19c00;border-radius:6px;padding:8px 10px;color:#3b2f00;"
)
CLEAR_TEXT = (
    "⚠ On the office network nothing may cross in clear: without the HTTPS certificate and key "
    "above, this app makes its own when the service restarts, and other desks are given its "
    "fingerprint (Admin → Add front desk). Phones' browsers warn about a certificate the app "
    "made: for phones, use your IT provider's certificate or an HTTPS reverse proxy."
)
LOOPBACK_BADGES = (
    "⚠ Badges issued now carry this computer's own address ({address}): phones and other "
    "computers cannot open their links. Set the address for badges before issuing real payslips."
)


def network_address() -> str | None:
    """This computer's address on its office network (the interface the default route uses;
    connecting a UDP socket sends nothing), or None without a network."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere, nothing is sent
        address = str(probe.getsockname()[0])
        return None if address.startswith("127.") or address == "0.0.0.0" else address
    return None


def badge_address_problem(text: str) -> str | None:
    """Why `text` cannot be the address for badges, or None (empty means "this computer")."""
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "The address for badges must start with http:// or https:// and name a computer."
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "The address for badges is a computer's address only, without a path after it."
    with contextlib.suppress(ValueError):
        parts.port  # noqa: B018 - raises for a port out of range
        return None
    return "The port in the address for badges is not a number from 1 to 65535."


def _row(grid: QGridLayout, row: int, caption: str, field: QWidget, hint: str) -> QLabel:
    name = label(caption, "fieldLabel", wrap=False)
    name.setBuddy(field)
    grid.addWidget(name, row * 2, 0)
    grid.addWidget(
        field,
        row * 2,
        1,
        Qt.AlignmentFlag.AlignLeft if field.maximumWidth() < 1000 else Qt.AlignmentFlag(0),
    )
    words = label(hint, "hint")
    grid.addWidget(words, row * 2 + 1, 1)
    return words


class AddressSection(QWidget):
    """Signals: `apply_requested()` after valid values were saved (the panel restarts);
    `address_checked(str)` once the address for badges was tried after a restart (the words
    shown; tests wait on it)."""

    apply_requested = Signal()
    address_checked = Signal(str)

    def __init__(self, context: AppContext) -> None:
        super().__init__()
        self.context = context
        settings = context.settings
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        frame, layout = section("How other desks and phones reach this service")
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(4)

        self.who = QComboBox()
        self.who.setObjectName("serviceListen")
        self.who.setAccessibleName("Who can connect")
        for key, words in WHO:
            self.who.addItem(words, key)
        self.who.setCurrentIndex(1 if settings.service_listen == NETWORK else 0)
        self.who.setMaximumWidth(460)
        _row(
            grid,
            0,
            "Who can connect",
            self.who,
            "This computer only: no other desk or phone can reach the service. This office "
            "network: every device on it can; allow the port in this computer's firewall.",
        )

        self.port = QSpinBox()
        self.port.setObjectName("servicePort")
        self.port.setAccessibleName("Port")
        self.port.setRange(1024, 65535)
        self.port.setMaximumWidth(140)
        running = context.service
        current = urlsplit(running.url).port if running is not None else None
        self.port.setValue(settings.service_port or current or 8080)
        _row(
            grid,
            1,
            "Port",
            self.port,
            "Kept from one start to the next. This computer follows a change by itself; other "
            "desks and the address for badges must then be changed too.",
        )

        badge_row = QHBoxLayout()
        self.scan_base = QLineEdit(settings.scan_base)
        self.scan_base.setObjectName("scanBase")
        self.scan_base.setAccessibleName("Address for badges")
        self.scan_base.setPlaceholderText(
            "e.g. http://192.168.1.20:8080 or https://verify.example.com"
        )
        self.suggest_button = QPushButton("Use this computer's network address")
        self.suggest_button.setAccessibleName("Use this computer's network address")
        badge_row.addWidget(self.scan_base, 1)
        badge_row.addWidget(self.suggest_button)
        badges = QWidget()
        badges.setLayout(badge_row)
        badge_row.setContentsMargins(0, 0, 0, 0)
        _row(
            grid,
            2,
            "Address for badges",
            badges,
            "The link phones open, printed on every badge. A badge keeps it for ever: change it "
            "later and payslips issued before keep the old one, so choose an address that lasts.",
        )

        self.cert = QLineEdit(settings.tls_cert)
        self.cert.setObjectName("tlsCert")
        self.cert.setAccessibleName("HTTPS certificate file")
        self.key = QLineEdit(settings.tls_key)
        self.key.setObjectName("tlsKey")
        self.key.setAccessibleName("HTTPS key file")
        for row, (caption, edit, what) in enumerate(
            (("HTTPS certificate", self.cert, "certificate"), ("HTTPS key", self.key, "key")),
            start=3,
        ):
            edit.setPlaceholderText(f"Optional: the {what} file (PEM) from your IT provider")
            line = QHBoxLayout()
            line.setContentsMargins(0, 0, 0, 0)
            browse = QPushButton("Choose…")
            browse.setAccessibleName(f"Choose the {what} file")
            browse.clicked.connect(lambda _=False, e=edit, w=what: self._browse(e, w))
            line.addWidget(edit, 1)
            line.addWidget(browse)
            holder = QWidget()
            holder.setLayout(line)
            hint = (
                "With a certificate and its key, the service speaks HTTPS: secrets and verdicts "
                "are encrypted on the network. The address for badges then starts with https://."
                if what == "certificate"
                else ""
            )
            _row(grid, row, caption, holder, hint)
        layout.addLayout(grid)

        self.clear_warning = label(CLEAR_TEXT, "clearTextWarning")
        self.clear_warning.setStyleSheet(WARNING_STYLE)
        self.loopback_warning = label("", "loopbackBadgeWarning")
        self.loopback_warning.setStyleSheet(WARNING_STYLE)
        layout.addWidget(self.clear_warning)
        layout.addWidget(self.loopback_warning)
        buttons = QHBoxLayout()
        self.status = label("", "hint")
        self.apply_button = QPushButton("Save and restart the service")
        self.apply_button.setObjectName("primary")
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.apply_button)
        layout.addLayout(buttons)
        outer.addWidget(frame)

        self.suggest_button.clicked.connect(self.suggest)
        self.apply_button.clicked.connect(self.apply)
        for signal in (self.who.currentIndexChanged, self.port.valueChanged):
            signal.connect(self.update_warnings)
        for edit in (self.scan_base, self.cert, self.key):
            edit.textChanged.connect(self.update_warnings)
        self.update_warnings()

    # ------------------------------------------------------------------ what it means

    def _browse(self, edit: QLineEdit, what: str) -> None:
        chosen, _ = QFileDialog.getOpenFileName(
            self, f"Choose the HTTPS {what} file", edit.text(), "PEM files (*.pem *.crt *.key)"
        )
        if chosen:
            edit.setText(chosen)

    def suggest(self) -> None:
        """Fill in this computer's network address with the port (and https with a cert)."""
        address = network_address()
        if address is None:
            set_status(
                self.status, "This computer has no office network address right now.", error=True
            )
            return
        scheme = "https" if self.cert.text().strip() else "http"
        self.scan_base.setText(f"{scheme}://{address}:{self.port.value()}")
        if self.who.currentData() != NETWORK:
            self.who.setCurrentIndex(1)  # an office address is no use to a loopback-only service

    def effective_badge_address(self) -> str:
        """What badges will carry with the values on screen."""
        typed = self.scan_base.text().strip().rstrip("/")
        if typed:
            return typed
        scheme = "https" if self.cert.text().strip() else "http"
        return f"{scheme}://127.0.0.1:{self.port.value()}"

    def update_warnings(self) -> None:
        network = self.who.currentData() == NETWORK
        tls = bool(self.cert.text().strip()) or self.scan_base.text().strip().startswith("https://")
        self.clear_warning.setVisible(network and not tls)
        badge = self.effective_badge_address()
        self.loopback_warning.setVisible(is_loopback_url(badge))
        self.loopback_warning.setText(LOOPBACK_BADGES.format(address=badge))

    # ------------------------------------------------------------------ applying

    def problems(self) -> list[str]:
        found: list[str] = []
        scan_base = self.scan_base.text().strip().rstrip("/")
        problem = badge_address_problem(scan_base)
        if problem:
            found.append(problem)
        cert, key = self.cert.text().strip(), self.key.text().strip()
        if bool(cert) != bool(key):
            found.append("HTTPS needs both files: the certificate and its key.")
        elif cert:
            try:
                server_context(cert, key)
            except TlsError as exc:
                found.append(f"The HTTPS certificate cannot be used: {exc}.")
        return found

    def apply(self) -> None:
        found = self.problems()
        if found:
            set_status(self.status, " ".join(found), error=True)
            return
        settings = self.context.settings
        settings.service_listen = str(self.who.currentData())
        settings.service_port = self.port.value()
        settings.scan_base = self.scan_base.text().strip().rstrip("/")
        settings.tls_cert, settings.tls_key = self.cert.text().strip(), self.key.text().strip()
        try:
            settings.save()
        except OSError:
            set_status(self.status, "The settings could not be saved.", error=True)
            return
        set_status(self.status, "Saved. Restarting the service…")
        self.apply_requested.emit()

    def on_restarted(self, ok: bool, tasks: TaskRunner | None = None) -> None:
        """After a restart: where the service answers, having tried the address for badges
        from this computer (it said "now answers at verify.office.lan" without trying that
        name, which may lead nowhere: issue 35)."""
        settings = self.context.settings
        if ok and not self.cert.text().strip() and settings.tls_cert:  # the one the app made
            self.cert.setText(settings.tls_cert)
            self.key.setText(settings.tls_key)
            self.scan_base.setText(settings.scan_base)  # now https:// when it named this port
        if ok:
            public = self.context.public_url
            if tasks is None:
                self._say("Restarted.")
                return
            set_status(self.status, f"Restarted. Trying {public} from this computer…")
            verify = self.context.own_options().get("verify", True)
            tasks.run(
                lambda: probe(public, verify),
                lambda problem: self._tried(public, problem),
                lambda exc: self._tried(public, f"It could not be tried ({type(exc).__name__})."),
            )
        else:
            set_status(
                self.status,
                "The service could not start with these values; see the message above.",
                error=True,
            )

    def _tried(self, public: str, problem: str | None) -> None:
        if problem is None:
            self._say(f"The service now answers at {public} (tried from this computer).")
            return
        port = urlsplit(public).port or (443 if public.startswith("https://") else 80)
        self._say(
            f"Restarted, but the address for badges did not answer from this computer. {problem} "
            "Check that this name leads to this computer (your network's name server or hosts "
            f"file), and that its firewall lets port {port} in.",
            error=True,
        )

    def _say(self, words: str, *, error: bool = False) -> None:
        set_status(self.status, words, error=error)
        self.address_checked.emit(words)
