"""The embedded service's controls: where it listens, whether it answers, and a restart.

Health is polled off the GUI thread; the panel shows colour, a symbol and words together.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.ui.tasks import TaskRunner

POLL_MS = 5000


class ServicePanel(QWidget):
    """Signals: `health_changed(bool)` whenever a health check finishes."""

    health_changed = Signal(bool)

    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        self.healthy: bool | None = None
        self._checking = False
        layout = QVBoxLayout(self)
        title = QLabel("Service")
        title.setObjectName("screenTitle")
        layout.addWidget(title)
        self.state = QLabel("Checking…")
        self.state.setObjectName("serviceState")
        self.state.setStyleSheet("font-size:18px;padding:8px;")
        layout.addWidget(self.state)
        form = QFormLayout()
        running = context.service
        mode = "embedded" if running else "remote"
        if context.demo is not None:
            mode = "embedded (demo: temporary data)"
        self.url_label = QLabel(context.service_url or "not configured")
        self.url_label.setObjectName("serviceUrl")
        form.addRow("Mode", QLabel(mode))
        form.addRow("Address", self.url_label)
        form.addRow("Environment", QLabel(context.environment))
        if running is not None:
            form.addRow("Store", QLabel(type(running.store).__name__))
            form.addRow("OpenAPI", QLabel(f"{running.url}/openapi.json"))
        layout.addLayout(form)
        buttons = QHBoxLayout()
        self.check_button = QPushButton("Check now")
        self.copy_button = QPushButton("Copy address")
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addStretch(1)
        self.check_button.clicked.connect(self.check)
        self.copy_button.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(self.context.service_url)
        )
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        self.check()

    def check(self) -> None:
        if self._checking or not self.context.service_url:
            return
        self._checking = True
        url = self.context.service_url
        client = self.context.verifier
        self.tasks.run(lambda: client.healthz(url), self._show, lambda _: self._show(False))

    def _show(self, healthy: object) -> None:
        self._checking = False
        self.healthy = bool(healthy)
        if self.healthy:
            self.state.setText("✔ Running — answering health checks")
            self.state.setStyleSheet("font-size:18px;padding:8px;background:#dff6dd;color:#0b6a0b;")
        else:
            self.state.setText("✖ Not answering — verification will fail until it is back")
            self.state.setStyleSheet("font-size:18px;padding:8px;background:#fde7e9;color:#a4262c;")
        self.health_changed.emit(self.healthy)
