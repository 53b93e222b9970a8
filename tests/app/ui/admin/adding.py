"""The Admin screen as a test drives it: built with its dialogs kept (not shown), and a client
added the way a person adds one (a name typed, Add pressed, the one-time credentials dialog
awaited). Shared by the admin, office-service and office-TLS tests."""

from __future__ import annotations

from typing import Literal

from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.admin.credentials import CredentialsDialog
from app.ui.admin.screen import AdminScreen
from app.ui.widgets.tasks import TaskRunner


def admin_screen(
    qtbot: QtBot, context: AppContext, tasks: TaskRunner | None = None
) -> tuple[AdminScreen, TaskRunner]:
    """The Admin screen on `context` (running its work on `tasks`, else a runner of its own),
    its first overview loaded, dialogs kept for the test."""
    tasks = tasks or TaskRunner()
    screen = AdminScreen(context, tasks)
    qtbot.addWidget(screen)
    screen.show_dialogs = False
    qtbot.waitUntil(lambda: screen._busy == 0, timeout=10000)
    return screen, tasks


def add_client(
    qtbot: QtBot, screen: AdminScreen, name: str, kind: Literal["issuer", "verifier"]
) -> CredentialsDialog:
    """Admin → Add payroll provider (issuer) or Add front desk (verifier) named `name`: the
    one-time credentials dialog it shows."""
    screen.name_edit.setText(name)
    button = screen.create_issuer_button if kind == "issuer" else screen.create_verifier_button
    with qtbot.waitSignal(screen.refreshed, timeout=10000):
        button.click()
    qtbot.waitUntil(lambda: screen.last_dialog is not None, timeout=10000)
    assert screen.last_dialog is not None
    return screen.last_dialog
