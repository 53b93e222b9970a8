"""The office address never moves silently (issue 35, point 4): when another program holds the
kept port at a start, the service stays on it (nothing saved elsewhere), the Service and Issue
screens say in words that the office service is not running and which program holds the port,
and offer Retry and "Choose another port…" (which warns that printed badges keep the old one).

A real listening socket holds the port; the real screens are driven offscreen through their
buttons and the real port dialog. Tests listen on loopback only: the office address on the badges
(verify.office.lan) stands for the name other desks use, as a reverse proxy's would.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.shell.context import AppContext
from app.shell.port_holder import port_holder
from app.ui.issue.screen import IssueScreen
from app.ui.service.panel import ServicePanel
from app.ui.widgets.tasks import TaskRunner
from service.hosting.network_address import choose_port, port_free
from tests.app.shots import review_shot
from tests.app.ui.admin.adding import admin_screen
from tests.app.ui.test_office_service import Office, add_issuer_used_here, issue_one

pytestmark = pytest.mark.gui
REVIEW = Path("/tmp/shots35-port")


@pytest.fixture
def office(tmp_path: Path, config_dir: Path) -> Iterator[Office]:
    place = Office(tmp_path)
    try:
        yield place
    finally:
        place.close()


def squat(port: int) -> socket.socket:
    """Another program's server on `port` (a real listening socket, in this process)."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen(1)
    return holder


def set_up_office(qtbot: QtBot, office: Office) -> tuple[int, str]:
    """An office whose badges carry verify.office.lan:<port>, with an issuer used here."""
    port = choose_port("127.0.0.1", 18280)
    address = f"http://verify.office.lan:{port}"
    first = office.start(service_port=port, scan_base=address)
    screen, tasks = admin_screen(qtbot, first)
    add_issuer_used_here(qtbot, screen, "Harbour Payroll")
    tasks.wait()
    office.close()
    return port, address


def shot(widget: QWidget, name: str, resize: bool = True) -> None:
    review_shot(widget, REVIEW, name, resize)


def screens(qtbot: QtBot, context: AppContext) -> tuple[ServicePanel, IssueScreen, TaskRunner]:
    tasks = TaskRunner()
    panel = ServicePanel(context, tasks)
    issue = IssueScreen(context, tasks)
    for widget in (panel, issue):
        qtbot.addWidget(widget)
        widget.show()
    panel.restarted.connect(issue.service_changed)
    issue.office_down.restarted.connect(panel.service_changed)
    return panel, issue, tasks


def close(panel: ServicePanel, issue: IssueScreen, tasks: TaskRunner) -> None:
    panel.timer.stop()
    tasks.wait()
    issue.shutdown()
    panel.close()
    issue.close()


def test_the_holder_of_a_port_is_named() -> None:
    with squat(choose_port("127.0.0.1", 18380)) as holder:
        words = port_holder(holder.getsockname()[1])
    assert words is not None and f"(process {os.getpid()})" in words


def test_a_taken_port_is_kept_said_on_both_screens_and_retried(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    port, address = set_up_office(qtbot, office)
    holder = squat(port)
    try:
        context = office.start()
        down = context.office_down
        assert down is not None and down.port == port
        assert office.saved()["service_port"] == port  # not moved, nothing saved
        assert office.saved()["scan_base"] == address
        assert context.public_url == address  # badges still carry the office address
        assert f"process {os.getpid()}" in down.words
        panel, issue, tasks = screens(qtbot, context)
        try:
            for notice in (panel.office_down, issue.office_down):
                assert notice.isVisibleTo(notice.window())
                text = notice.words.text()
                assert "office service is not running" in text and f"port {port}" in text
                assert f"process {os.getpid()}" in text and address in text
            qtbot.waitUntil(lambda: panel.healthy is not None, timeout=10000)
            assert "not running" in panel.state.text()
            shot(panel, "service-port-taken")
            shot(issue, "issue-port-taken")
            # This computer still issues and verifies (the stand-in is private to this app).
            payload = issue_one(qtbot, context)
            assert context.verifier.verify_payload(payload).verified
            stand_in = context.service_url
            assert issue.issuer_panel.fields["url"].text() == stand_in
            # Retry while the other program still holds it: still down, said so.
            with qtbot.waitSignal(issue.office_down.restarted, timeout=20000):
                issue.office_down.retry_button.click()
            assert context.office_down is not None
            assert "still in use" in issue.office_down.status.text()
            holder.close()  # the other program stopped
            with qtbot.waitSignal(panel.office_down.restarted, timeout=20000):
                panel.office_down.retry_button.click()
            assert context.office_down is None
            assert context.service_url == f"http://127.0.0.1:{port}"
            assert not panel.office_down.isVisibleTo(panel)
            assert not issue.office_down.isVisibleTo(issue)  # told by the Service screen
            assert issue.issuer_panel.fields["url"].text() == context.service_url != stand_in
            assert context.verifier.verify_payload(payload).verified  # same data, kept port
        finally:
            close(panel, issue, tasks)
    finally:
        holder.close()


def test_choosing_another_port_warns_that_printed_badges_keep_the_old_one(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    port, address = set_up_office(qtbot, office)
    with squat(port):
        context = office.start()
        panel, issue, tasks = screens(qtbot, context)
        try:
            issue.office_down.port_button.click()
            dialog = issue.office_down.dialog
            assert dialog is not None and dialog.isVisible()
            new_port = choose_port("127.0.0.1", port + 1)
            dialog.port.setValue(new_port)
            warning = dialog.warning.text()
            assert f"Badges already printed carry {address}" in warning
            assert f"New badges will carry http://verify.office.lan:{new_port}" in warning
            shot(dialog, "port-dialog", resize=False)
            with qtbot.waitSignal(issue.office_down.restarted, timeout=20000):
                dialog.ok_button.click()
            assert context.office_down is None
            assert office.saved()["service_port"] == new_port
            assert office.saved()["scan_base"] == f"http://verify.office.lan:{new_port}"
            assert context.public_url == f"http://verify.office.lan:{new_port}"
            assert not port_free("127.0.0.1", new_port)
            assert panel.address is not None and panel.address.port.value() == new_port
            payload = issue_one(qtbot, context)
            assert context.verifier.verify_payload(payload).verified
        finally:
            close(panel, issue, tasks)


def test_a_port_taken_while_the_app_was_closed_is_not_moved_for_this_computer_only(
    qtbot: QtBot, office: Office, no_leaks: None
) -> None:
    """Before issue 35 the service moved to the next free port and saved it."""
    first = office.start()
    port = int(str(office.saved()["service_port"]))
    first.close()
    office.context = None
    with squat(port):
        again = office.start()
        assert again.office_down is not None
        assert office.saved()["service_port"] == port
        assert again.public_url == f"http://127.0.0.1:{port}"
