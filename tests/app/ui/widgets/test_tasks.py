"""Background jobs (app/ui/widgets/tasks.py): a result reaches the widget that asked for it on the
GUI thread, and a widget deleted while its job ran gets nothing (it used to raise "Internal C++
object already deleted" from the event loop when a pay-run tab was rebuilt mid-look)."""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from app.ui.widgets.tasks import TaskRunner


def test_a_result_reaches_its_widget_on_the_gui_thread(qtbot: QtBot) -> None:
    runner = TaskRunner()
    label = QLabel()
    qtbot.addWidget(label)
    seen: list[bool] = []

    def show(text: str) -> None:
        seen.append(threading.current_thread() is threading.main_thread())
        label.setText(text)

    runner.run(lambda: "done", show)
    qtbot.waitUntil(lambda: runner.active == 0)
    assert label.text() == "done" and seen == [True]


def test_a_widget_deleted_while_its_job_ran_gets_no_result(qtbot: QtBot) -> None:
    runner = TaskRunner()
    label = QLabel()
    release = threading.Event()
    runner.run(lambda: release.wait(10) and "late", label.setText)
    shiboken6.delete(label)  # the tab is rebuilt while the job is still running
    release.set()
    qtbot.waitUntil(lambda: runner.active == 0)  # the late result arrived and was dropped
    assert not shiboken6.isValid(label)
