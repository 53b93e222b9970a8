"""The Issue screen over the demo service, as its tests meet it: 1366x768, shown, its work
waited for and the screen shut down afterwards. A module that needs another size or tab
overrides `screen` with a fixture of the same name that asks for this one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.ui.issue.screen import IssueScreen
from app.ui.widgets.tasks import TaskRunner


@pytest.fixture
def screen(qtbot: QtBot, demo_context: AppContext, no_leaks: None) -> Iterator[IssueScreen]:
    tasks = TaskRunner()
    widget = IssueScreen(demo_context, tasks)
    qtbot.addWidget(widget)
    widget.resize(1366, 768)
    widget.show()
    yield widget
    tasks.wait()
    widget.shutdown()
    widget.close()
