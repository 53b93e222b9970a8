"""Placeholder for the issue screen (being built)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.context import AppContext
from app.ui.tasks import TaskRunner


class IssueScreen(QWidget):
    def __init__(self, context: AppContext, tasks: TaskRunner) -> None:
        super().__init__()
        self.context = context
        self.tasks = tasks
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Coming soon"))
