"""The Issue screen never keeps the previous payslip's badge live, and lasts a day of payslips.

Against the real demo service, offscreen. A clerk issues a payslip, then starts the next one:
the moment the form, the country or the issuer changes, the badge on show is marked as the
previous payslip's and stamping, saving and copying it are off. Over many single payslips the
screen keeps no widgets of the earlier ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QDeadlineTimer, QEvent, QEventLoop
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.issuer.examples import example_employee, example_payslip
from app.ui.issue.screen import IssueScreen
from testbed.factories import blank_pdf
from tests.app.shots import shoot

pytestmark = pytest.mark.gui
AU = "au.payslip.v1"


def issue_example(qtbot: QtBot, screen: IssueScreen, schema: str = AU) -> Any:
    single = screen.single
    single.set_schema(schema)
    single.fill_example(example_payslip(schema), example_employee(schema))
    with qtbot.waitSignal(single.issued, timeout=20000) as issued:
        single.issue_button.click()
    assert single.stamp_button.isEnabled()
    return issued.args[0]


def retired(screen: IssueScreen, reference: str) -> bool:
    single = screen.single
    buttons = (single.stamp_button, single.save_button, single.result.copy_button)
    return (
        single.last is None
        and not any(b.isEnabled() for b in buttons)
        and f"Previous payslip, ref {reference}" in single.reference_label.text()
        and single.preview.pixmap().isNull()
    )


def test_editing_the_form_retires_the_badge(
    screen: IssueScreen, qtbot: QtBot, tmp_path: Path, screenshot_dir: Path
) -> None:
    first = issue_example(qtbot, screen)
    assert not retired(screen, first.service_reference)
    # The next employee: the clerk starts typing a name.
    pii = screen.single.pii_form
    edit = pii.edits["employee_name"]
    qtbot.keyClicks(edit, "B")
    assert retired(screen, first.service_reference)
    shoot(screen, screenshot_dir, "issue-retired-badge")
    # Stamping through the API does nothing either: no file is written.
    source = tmp_path / "b.pdf"
    source.write_bytes(blank_pdf(1))
    screen.single.stamp_pdf(source, tmp_path / "b-badge.pdf", 1, "top-right")
    screen.single.save_png(tmp_path / "b.png")
    assert screen.tasks.wait(5000)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != "") == ["b.pdf"]
    # The next payslip's badge is live again.
    second = issue_example(qtbot, screen)
    assert second.service_reference != first.service_reference
    assert screen.single.last is second and screen.single.stamp_button.isEnabled()


def test_a_payslip_figure_change_retires_the_badge(screen: IssueScreen, qtbot: QtBot) -> None:
    first = issue_example(qtbot, screen)
    form = screen.single.payslip_form
    assert form is not None
    editor = form.editor("period_start") or next(iter(form.all_editors()))
    editor.set_text(editor.text() + " ")
    assert retired(screen, first.service_reference)


def test_changing_the_country_retires_the_badge(screen: IssueScreen, qtbot: QtBot) -> None:
    first = issue_example(qtbot, screen)
    screen.single.set_schema("nz.payslip.v1")
    assert retired(screen, first.service_reference)


def test_changing_the_issuer_retires_the_badge(screen: IssueScreen, qtbot: QtBot) -> None:
    first = issue_example(qtbot, screen)
    screen.issuer_panel.reload()  # Admin saved another provider; the panel shows it
    screen.issuer_panel.fields["client_id"].setText("another-provider")
    assert retired(screen, first.service_reference)


def test_a_day_of_single_payslips_leaves_no_widgets_behind(
    screen: IssueScreen, qtbot: QtBot
) -> None:
    """Driven with processEvents only (no running event loop), like the kiosk soak."""
    single = screen.single
    counts = []
    issued: list[object] = []
    single.issued.connect(issued.append)
    for index in range(12):
        schema = AU if index % 2 else "nz.payslip.v1"  # the country changes every time
        single.set_schema(schema)
        single.fill_example(example_payslip(schema), example_employee(schema))
        single.issue_button.click()
        deadline = QDeadlineTimer(20000)
        while len(issued) <= index:
            assert not deadline.hasExpired(), single.status.text()
            QApplication.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents, 100)
        QApplication.processEvents()
        # What the running event loop does after each handler: delete what was deleteLater'd.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        counts.append(len(QApplication.allWidgets()))
    assert counts[-1] <= counts[1], counts  # [0] and [1] differ by country; then no growth
