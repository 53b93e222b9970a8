"""The first-run welcome: what do you want to do with this computer?

Four plain choices instead of a yes/no box: try the demo, verify at a desk connected to an
office's service, issue payslips, or run the service here. Nothing is lost by closing it: it can
be opened again (Getting started in the sidebar, or Settings), and the demo is always one click
away there. The choice is saved in settings.json; a desk's secret goes to the SecretStore.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.api.desk_check import desk_problem
from app.api.pinning import normalize_fingerprint
from app.settings.desk import SecretStore, Settings
from app.ui.widgets.staff_style import label, section, set_status, staff_stylesheet, titled_column
from app.ui.widgets.tasks import TaskRunner

DEMO, CONNECT, ISSUE, SERVICE = "demo", "connect", "issue", "service"
#: The screen each choice opens first.
START_SCREENS = {DEMO: "Verify", CONNECT: "Verify", ISSUE: "Issue", SERVICE: "Admin"}


@dataclass(frozen=True)
class Choice:
    key: str
    title: str
    text: str


CHOICES = (
    Choice(
        DEMO,
        "Try with demo data",
        "A temporary service with an invented payroll provider and sample payslips. Nothing "
        "is kept; good for a first look.",
    ),
    Choice(
        CONNECT,
        "Verify payslips at this desk (connect to a service)",
        "Check the payslips people bring in, using your office's service (your administrator "
        "gives you its address and this desk's sign-in).",
    ),
    Choice(
        ISSUE,
        "Issue payslips from this computer",
        "Put a verification badge on payslips, one at a time or a whole pay run from a file.",
    ),
    Choice(
        SERVICE,
        "Run the service on this computer",
        "This computer keeps the registered payslips. Set up payroll providers and front desks "
        "in Admin; to serve other desks and phones, give the office address on the Service "
        "screen.",
    ),
)


def apply_choice(
    settings: Settings,
    secrets: SecretStore,
    choice: str,
    *,
    url: str = "",
    client_id: str = "",
    secret: str = "",
    fingerprint: str = "",
) -> None:
    """Save what the welcome decided (every choice except the demo changes the saved mode)."""
    settings.demo_offered = True
    settings.extra["welcome"] = choice
    settings.extra["start_demo"] = choice == DEMO
    settings.extra["start_screen"] = START_SCREENS[choice]
    if choice == CONNECT:
        settings.mode = "remote"
        settings.verifier_url = url.rstrip("/")
        settings.client_id = client_id
        settings.tls_fingerprint = normalize_fingerprint(fingerprint) or ""
        secrets.set(f"remote:{client_id}", secret)
    elif choice in (ISSUE, SERVICE):
        settings.mode = "embedded"
    settings.save()


class WelcomeDialog(QDialog):
    """`choice` is set when the user picked one (None when closed with "Not now").

    Signals: `connect_failed(str)` with the words shown when "Connect" found a problem."""

    connect_failed = Signal(str)

    def __init__(
        self, settings: Settings, secrets: SecretStore, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.tasks = TaskRunner(self)
        self.settings = settings
        self.secrets = secrets
        self.choice: str | None = None
        self.setWindowTitle("Welcome to Payslip Verify")
        self.setObjectName("welcome")
        self.setMinimumWidth(760)
        self.setStyleSheet(
            staff_stylesheet()
            + """
            QDialog#welcome { background: #f3f5f8; }
            QPushButton#choice { text-align: left; padding: 14px 16px; border-radius: 10px;
                background: white; border: 1px solid #d5dbe3; }
            QPushButton#choice:hover { background: #eef3f8; border: 1px solid #1f5f99; }
            QPushButton#choice:focus { border: 2px solid #1f5f99; padding: 13px 15px; }
            """
        )
        outer = titled_column(
            self,
            "Welcome to Payslip Verify",
            "Payslip Verify checks that a payslip is genuine: the payroll provider puts a badge "
            "on it, and a front desk scans the badge. What would you like to do on this computer?",
            margins=(28, 24, 28, 20),
        )
        self.pages = QStackedWidget()
        outer.addWidget(self.pages)
        outer.addStretch(1)

        choices = QWidget()
        grid = QGridLayout(choices)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(12)
        self.buttons: dict[str, QPushButton] = {}
        for index, choice in enumerate(CHOICES):
            button = QPushButton()
            button.setObjectName("choice")
            button.setAccessibleName(choice.title)
            button.setMinimumHeight(124)
            button.setStyleSheet("QPushButton { font-size: 11pt; }")
            title = QLabel(
                f"<b>{choice.title}</b><br><span style='color:#5b6675'>{choice.text}</span>"
            )
            title.setWordWrap(True)
            title.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
            inner = QVBoxLayout(button)
            inner.setContentsMargins(16, 12, 16, 12)
            inner.addWidget(title)
            button.clicked.connect(lambda _=False, key=choice.key: self.pick(key))
            grid.addWidget(button, index // 2, index % 2)
            self.buttons[choice.key] = button
        self.pages.addWidget(choices)

        connect, connect_layout = section("Connect this desk to your office's service")
        form = QGridLayout()
        form.setColumnStretch(1, 1)
        form.setVerticalSpacing(10)
        self.url_edit = QLineEdit(settings.verifier_url)
        self.url_edit.setPlaceholderText("e.g. https://verify.example.com")
        self.client_edit = QLineEdit(settings.client_id)
        self.client_edit.setPlaceholderText("starts with ver_")
        self.secret_edit = QLineEdit()
        self.secret_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.fingerprint_edit = QLineEdit(settings.tls_fingerprint)
        self.fingerprint_edit.setPlaceholderText("on an office network: from Admin, as shown")
        self.fingerprint_edit.setAccessibleName("Certificate fingerprint")
        for row, (caption, edit) in enumerate(
            (
                ("Service address", self.url_edit),
                ("Desk client id", self.client_edit),
                ("Desk secret", self.secret_edit),
                ("Certificate fingerprint", self.fingerprint_edit),
            )
        ):
            edit.setStyleSheet("font-family: sans-serif;")
            form.addWidget(label(caption, "fieldLabel", wrap=False), row, 0)
            form.addWidget(edit, row, 1)
        connect_layout.addLayout(form)
        connect_layout.addWidget(
            label(
                "Your administrator gets these from Admin → Add front desk on the computer that "
                "runs the service. The secret is kept in this computer's password store.",
                "hint",
            )
        )
        self.connect_status = label("", "hint")
        connect_layout.addWidget(self.connect_status)
        row_buttons = QHBoxLayout()
        back = QPushButton("Back")
        back.clicked.connect(lambda: self.pages.setCurrentIndex(0))
        self.connect_button = QPushButton("Connect")
        self.connect_button.setObjectName("primary")
        self.connect_button.clicked.connect(self.connect_desk)
        row_buttons.addWidget(back)
        row_buttons.addStretch(1)
        row_buttons.addWidget(self.connect_button)
        connect_layout.addLayout(row_buttons)
        connect_layout.addStretch(1)
        self.pages.addWidget(connect)

        bottom = QHBoxLayout()
        bottom.addWidget(
            label(
                "You can open this again any time: “Getting started” in the sidebar or in "
                "Settings.",
                "hint",
                wrap=False,
            )
        )
        bottom.addStretch(1)
        self.later_button = QPushButton("Not now")
        self.later_button.clicked.connect(self.reject)
        bottom.addWidget(self.later_button)
        outer.addLayout(bottom)

    def done(self, result: int) -> None:
        self.tasks.close()  # a late answer must not reach a closed dialog
        super().done(result)

    def pick(self, key: str) -> None:
        if key == CONNECT:
            self.pages.setCurrentIndex(1)
            self.url_edit.setFocus()
            return
        with contextlib.suppress(OSError):  # an unwritable config folder must not block the app
            apply_choice(self.settings, self.secrets, key)
        self.choice = key
        self.accept()

    def connect_desk(self) -> None:
        """Check the address and sign in with the credentials (off the GUI thread); only then
        save them and say connected. A failure names the part that is wrong."""
        url = self.url_edit.text().strip().rstrip("/")
        client_id = self.client_edit.text().strip()
        secret = self.secret_edit.text().strip()
        fingerprint = self.fingerprint_edit.text().strip()
        if not (url.startswith(("http://", "https://")) and client_id and secret):
            self._say(
                "Fill in all three: the address (starting with https://), the client id and "
                "the secret.",
                error=True,
            )
            return
        self.connect_button.setEnabled(False)
        self._say(f"Checking the address and signing in at {url}…")

        def checked(problem: str | None) -> None:
            self.connect_button.setEnabled(True)
            if problem is not None:
                self._say(problem, error=True)
                self.connect_failed.emit(problem)
                return
            self._save_desk(url, client_id, secret, fingerprint)

        def crashed(exc: Exception) -> None:
            checked(f"The check could not be made ({type(exc).__name__}). Try again.")

        self.tasks.run(
            lambda: desk_problem(url, client_id, secret, fingerprint=fingerprint), checked, crashed
        )

    def _say(self, text: str, *, error: bool = False) -> None:
        """Show the connect status, and make room for it: a two-line error under a form laid
        out for none squeezed the fields into each other (issue 35). The dialog grows to what
        its layout needs instead, as far as the screen allows."""
        set_status(self.connect_status, text, error=error)
        # The page sits in a QStackedWidget, which passes no height-for-width up: the wrapped
        # status asks for its lines' height as a minimum instead, so the layout makes room.
        status = self.connect_status
        status.setMinimumHeight(status.heightForWidth(max(status.width(), 1)))
        page = self.pages.currentWidget()
        if page is None:
            return
        wanted = page.minimumSizeHint().height()
        if page.hasHeightForWidth():  # wrapped hints and errors: their lines at this width
            wanted = max(wanted, page.heightForWidth(self.pages.width()))
        short = wanted - self.pages.height()
        screen = self.screen()
        room = screen.availableGeometry().height() if screen is not None else 10**6
        if short > 0:  # grow by what the page lacks, as far as the screen allows
            self.resize(self.width(), min(self.height() + short, room))

    def _save_desk(self, url: str, client_id: str, secret: str, fingerprint: str = "") -> None:
        try:
            apply_choice(
                self.settings,
                self.secrets,
                CONNECT,
                url=url,
                client_id=client_id,
                secret=secret,
                fingerprint=fingerprint,
            )
        except OSError:
            self._say("The settings could not be saved.", error=True)
            return
        self.secret_edit.clear()
        self.choice = CONNECT
        self.accept()


def first_run_choice(settings: Settings, secrets: SecretStore) -> str | None:
    """Show the welcome once (on the first start); returns the choice, or None."""
    if settings.demo_offered:
        return None
    dialog = WelcomeDialog(settings, secrets)
    dialog.exec()
    if dialog.choice is None:
        settings.demo_offered = True  # shown once; "Getting started" brings it back
        with contextlib.suppress(OSError):
            settings.save()
    return dialog.choice


def reopen_welcome(parent: QWidget, settings: Settings, secrets: SecretStore) -> WelcomeDialog:
    """Open the welcome again from a running app. A choice that needs another kind of service
    (the demo, or connecting to an office's) takes effect at the next start, and says so; the
    others open their screen at once (`parent.show_screen`, when the window has one)."""
    dialog = WelcomeDialog(settings, secrets, parent)
    dialog.later_button.setText("Close")

    def chosen() -> None:
        if dialog.choice is None:
            return
        show = getattr(parent, "show_screen", None)
        if callable(show):
            show(START_SCREENS[dialog.choice])
        if dialog.choice in (DEMO, CONNECT):
            _restart_note(parent, dialog.choice)

    dialog.accepted.connect(chosen)
    dialog.open()
    return dialog


def _restart_note(parent: QWidget, choice: str) -> None:
    from PySide6.QtWidgets import QMessageBox

    what = "in demo mode" if choice == DEMO else "connected to your office's service"
    box = QMessageBox(
        QMessageBox.Icon.Information,
        "Restart to switch",
        f"Close and reopen the app to start {what}.",
        QMessageBox.StandardButton.Ok,
        parent,
    )
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
