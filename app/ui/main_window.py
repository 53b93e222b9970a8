"""The main window: a sidebar of screens, the service's state, and a sandbox banner.

In kiosk mode only the verify screen exists, full screen; settings sit behind the operator PIN.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.ui.admin_screen import AdminScreen
from app.ui.issue_screen import IssueScreen
from app.ui.service_panel import ServicePanel
from app.ui.style import ACCENT, BACKDROP, screen_stylesheet
from app.ui.tasks import TaskRunner
from app.ui.verify_screen import VerifyScreen

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
        self.setWindowTitle("Payslip Verify")
        self.resize(1180, 800)

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
        if context.demo is not None and not kiosk:
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
                self.stack.addWidget(screen)
            self.nav.setFixedWidth(160)
            self.nav.currentRowChanged.connect(self.stack.setCurrentIndex)
            self.nav.setCurrentRow(0)
            body.addWidget(self.nav)
        body.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.setStyleSheet(screen_stylesheet(kiosk) + NAV_STYLE)
        self.statusBar().showMessage(f"Service: {context.service_url or 'not configured'}")
        if kiosk:
            self.setWindowState(Qt.WindowState.WindowFullScreen)

    def show_screen(self, title: str) -> None:
        for row in range(self.nav.count()):
            if self.nav.item(row).text() == title:
                self.nav.setCurrentRow(row)
                return

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        self.verify_screen.shutdown()
        if not self.kiosk:
            self.issue_screen.shutdown()
            self.service_panel.timer.stop()
        self.tasks.close(5000)
        super().closeEvent(event)
