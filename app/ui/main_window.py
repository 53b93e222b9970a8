"""The main window: a sidebar of screens, the service's state, and a sandbox banner.

In kiosk mode only the verify screen exists, full screen, and the window is locked: closing it
(Alt+F4, the window's close, Ctrl+Q) or leaving full screen needs the operator PIN, and so do the
settings. A kiosk without a PIN is never built by the app (:func:`app.ui.pin_dialog.
ensure_kiosk_pin` runs first); if one is built anyway, it cannot be closed without a PIN either.
Minimised, hidden or covered by another program, a locked kiosk restores itself full screen
at once (:class:`~app.ui.kiosk_guard.KioskKeeper`). The kiosk shows no service address (nothing
for the public to copy) and keeps the demo banner,
so invented payslips never look real.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.shell.context import AppContext
from app.ui import accessible_names
from app.ui.admin.screen import AdminScreen
from app.ui.issue.screen import IssueScreen
from app.ui.kiosk_guard import KioskKeeper
from app.ui.pin_dialog import PinGuard, ask_pin
from app.ui.service.panel import ServicePanel
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.fit_screen import DEFAULT_SIZE, fit_to_screen
from app.ui.widgets.style import ACCENT, BACKDROP, screen_stylesheet
from app.ui.widgets.tasks import TaskRunner

SANDBOX_STYLE = "background:#8a5a00;color:white;font-weight:bold;padding:6px;"
NAV_STYLE = f"""
QListWidget#nav {{ background: #1d2733; color: #dfe6ee; border: none; padding-top: 14px;
    outline: 0; }}
QListWidget#nav::item {{ padding: 12px 18px; }}
QListWidget#nav::item:selected {{ background: {ACCENT}; color: white; }}
QStackedWidget > QWidget {{ background: {BACKDROP}; }}
"""


class MainWindow(QMainWindow):
    def __init__(self, context: AppContext, kiosk: bool = False) -> None:
        super().__init__()
        self.context = context
        self.kiosk = kiosk
        self.tasks = TaskRunner(self)
        accessible_names.install()  # idempotent; run_gui does it first (the welcome)
        self.setWindowTitle("Payslip Verify")
        if kiosk:
            self.resize(DEFAULT_SIZE)  # shown full screen; this is only its "normal" geometry
        else:
            fit_to_screen(self, DEFAULT_SIZE)

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        if context.environment == "sandbox":
            banner = QLabel(
                "SANDBOX — test data only; results here prove nothing about real payslips"
            )
            banner.setObjectName("sandboxBanner")
            banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
            banner.setStyleSheet(SANDBOX_STYLE)
            outer.addWidget(banner)
        if context.demo is not None:
            demo = QLabel("Demo mode — a temporary service with invented payslips")
            demo.setObjectName("demoBanner")
            demo.setAlignment(Qt.AlignmentFlag.AlignCenter)
            demo.setStyleSheet("background:#1f4e79;color:white;padding:4px;")
            outer.addWidget(demo)

        body = QHBoxLayout()
        outer.addLayout(body, 1)
        self.stack = QStackedWidget()
        self.verify_screen = VerifyScreen(context, self.tasks, kiosk=kiosk)
        self.stack.addWidget(self.verify_screen)
        self.nav = QListWidget()
        self.nav.setObjectName("nav")
        self.nav.setAccessibleName("Screens")
        self.nav.addItem("Verify")
        if not kiosk:
            self.issue_screen = IssueScreen(context, self.tasks)
            self.admin_screen = AdminScreen(context, self.tasks)
            self.service_panel = ServicePanel(context, self.tasks)
            for title, screen in (
                ("Issue", self.issue_screen),
                ("Admin", self.admin_screen),
                ("Service", self.service_panel),
            ):
                self.nav.addItem(title)
                # Each screen scrolls as one (its only vertical scroll bar), so the window fits a
                # 1024x600 or 150 % screen; the Issue form (~960 px) also scrolls sideways
                # instead of making the whole window wider than a 1024 px display.
                self.stack.addWidget(_scrollable(screen))
            # A restart from either screen (a retry, another port) shows on both.
            self.service_panel.restarted.connect(self.issue_screen.service_changed)
            self.issue_screen.office_down.restarted.connect(self.service_panel.service_changed)
            self.nav.setFixedWidth(160)
            self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
            self.nav.setCurrentRow(0)
            body.addLayout(self._sidebar())
        body.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.setStyleSheet(screen_stylesheet(kiosk) + NAV_STYLE)
        self.locked = kiosk
        """A locked kiosk stays full screen and closes only with the operator PIN."""
        self._pin_guard = PinGuard(context.settings)
        if kiosk:
            self.statusBar().hide()  # no service address on a public screen
            self.setWindowState(Qt.WindowState.WindowFullScreen)
        else:
            self.statusBar().showMessage(f"Service: {context.service_url or 'not configured'}")
        self.keeper = KioskKeeper(self, lambda: self.locked)
        """Minimised, hidden or covered, a locked kiosk comes back at once (issue 27)."""
        ctrl_q = QShortcut(QKeySequence("Ctrl+Q"), self)
        ctrl_q.activated.connect(self.close)

    def _operator_confirms(self, why: str) -> bool:
        return ask_pin(self._pin_guard, self, f"Enter the operator PIN to {why}.", required=True)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if (
            event.type() == QEvent.Type.WindowStateChange
            and self.locked
            and not self.isFullScreen()
            and not self.isMinimized()  # the keeper restores a minimised kiosk, no PIN asked
        ):
            QTimer.singleShot(0, self._leaving_full_screen)

    def _leaving_full_screen(self) -> None:
        """Back to full screen at once; only the operator PIN lets the kiosk out of it."""
        if not self.locked or self.isFullScreen():
            return
        self.setWindowState(Qt.WindowState.WindowFullScreen)
        handle = self.windowHandle()
        in_front = self.isActiveWindow() and handle is not None and handle.isExposed()
        if self.keeper.bringing_back or not in_front:
            # The window manager on the keeper's way back (or with the kiosk behind something,
            # being mapped anew): nobody at the kiosk asked to leave, so nobody is asked a PIN.
            return
        if self._operator_confirms("leave full screen"):
            self.locked = False
            self.showNormal()

    def _sidebar(self) -> QVBoxLayout:
        """The screens, and "Getting started" (the welcome, issue 11) at the bottom."""
        from app.ui.welcome import reopen_welcome

        side = QVBoxLayout()
        side.setSpacing(0)
        side.addWidget(self.nav, 1)
        self.welcome_button = QPushButton("Getting started")
        self.welcome_button.setObjectName("navFooter")
        self.welcome_button.setFixedWidth(160)
        self.welcome_button.setStyleSheet(
            "QPushButton#navFooter { background: #1d2733; color: #dfe6ee; border: none; "
            "border-top: 1px solid #34404d; border-radius: 0; padding: 12px 18px; "
            "text-align: left; }"
        )
        self.welcome_button.clicked.connect(
            lambda: reopen_welcome(self, self.context.settings, self.context.secrets)
        )
        side.addWidget(self.welcome_button)
        return side

    def current_screen(self) -> QWidget | None:
        """The screen on show (the staff screens sit inside scroll areas)."""
        shown = self.stack.currentWidget()
        inner = shown.widget() if isinstance(shown, QScrollArea) else None
        return inner if inner is not None else shown

    def show_screen(self, title: str) -> None:
        for row in range(self.nav.count()):
            if self.nav.item(row).text() == title:
                self.nav.setCurrentRow(row)
                return

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self.locked and not self._operator_confirms("close the kiosk"):
            event.ignore()
            return
        self.locked = False
        self.verify_screen.shutdown()
        if not self.kiosk:
            self.issue_screen.shutdown()
            self.service_panel.timer.stop()
        self.tasks.close(5000)
        super().closeEvent(event)


class _ScreenArea(QScrollArea):
    """A staff screen's one scroll area. A screen inside it is never narrower than its minimum
    width, so layouts that go from two columns to one on a narrow window (the Issue screen's
    tabs) cannot see the window narrow from their own width: the area tells them the width it
    has (`fit_width`) before they lay out, so they stack instead of scrolling sideways."""

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        width = self.viewport().width()
        screen = self.widget()
        if screen is not None:
            for part in screen.findChildren(QWidget):
                fit = getattr(part, "fit_width", None)
                if callable(fit):
                    fit(width)
                    # Containers such as QTabWidget cache their pages' least size: tell every
                    # ancestor up to the screen that it changed.
                    ancestor: QWidget | None = part
                    while ancestor is not None and ancestor is not screen:
                        ancestor.updateGeometry()
                        ancestor = ancestor.parentWidget()
        super().resizeEvent(event)


def _scrollable(screen: QWidget) -> QScrollArea:
    area = _ScreenArea()
    area.setWidget(screen)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    return area
