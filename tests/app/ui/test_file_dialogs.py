"""Every file dialog the app has opens for real, with the app's event filters installed (issue 35).

Qt's own widget file dialog is what a Linux desktop without a GTK theme (and the bundle) shows;
with the accessible-names filter installed it crashed the app (segfault, exit 139) on every
*Open PDF...*, *Save verification record...* and *Browse...*. Each dialog here is opened through
the button a person presses, answered or cancelled through the dialog's own widgets
(`tests/app/ui/file_dialogs.py`), and the screen is checked to have carried on. The dialogs that
choose a payslip, a record or issuer files are driven end to end in their screens' tests
(test_verify_screen, test_verify_record, test_applicant_record, test_issue_screen).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from app.shell.context import AppContext
from app.ui.admin.credentials import CredentialsDialog
from app.ui.issue.payrun_files import PayRunFiles
from app.ui.service.address import AddressSection
from app.ui.verify.screen import VerifyScreen
from tests.app.ui.file_dialogs import FileDialogs
from tests.app.ui.verify.test_verify_screen import make_screen  # noqa: F401 - the fixture

pytestmark = pytest.mark.gui


def _button(root: QWidget, text: str, index: int = 0) -> QPushButton:
    found = [b for b in root.findChildren(QPushButton) if b.text() == text]
    assert len(found) > index, [b.text() for b in root.findChildren(QPushButton)]
    return found[index]


def test_open_dialogs_on_verify_cancel_and_leave_the_screen_as_it_was(
    make_screen: Any,  # noqa: F811 - the fixture
    file_dialogs: FileDialogs,
) -> None:
    screen: VerifyScreen = make_screen()
    file_dialogs.cancel()
    file_dialogs.cancel()
    screen.open_pdf_button.click()
    screen.open_image_button.click()
    assert [(seen.title, seen.widget_dialog) for seen in file_dialogs.seen] == [
        ("Open a payslip PDF", True),
        ("Open a photo or scan of the badge", True),
    ]
    assert screen.isVisible() and screen.card.outcome is None  # nothing was verified


def test_pay_run_browse_buttons_choose_a_file_and_folders(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path, file_dialogs: FileDialogs
) -> None:
    holder = QWidget()
    qtbot.addWidget(holder)
    files = PayRunFiles(demo_context, holder)
    layout = QVBoxLayout(holder)
    layout.addWidget(files.box)
    holder.show()
    export = tmp_path / "harbour_export.csv"
    export.write_text("Employee,Net\n")
    out = tmp_path / "out1"
    out.mkdir()
    file_dialogs.pick(export)
    _button(files.box, "Browse…", 0).click()
    file_dialogs.pick(out)
    _button(files.box, "Browse…", 2).click()
    file_dialogs.cancel()
    _button(files.box, "Browse…", 1).click()
    assert files.paths() == (export, None, out)
    assert [seen.title for seen in file_dialogs.seen] == [
        "Choose the pay-run file",
        "Choose a folder",
        "Choose a folder",
    ]
    holder.close()


def test_credentials_are_saved_through_the_real_save_dialog(
    qtbot: Any, no_leaks: None, tmp_path: Path, file_dialogs: FileDialogs
) -> None:
    dialog = CredentialsDialog("New issuer: Harbour Payroll", {"client_id": "iss-test"})
    qtbot.addWidget(dialog)
    dialog.show()
    target = tmp_path / "harbour-credentials.txt"
    file_dialogs.pick(target)
    dialog.save_button.click()
    [seen] = file_dialogs.seen
    assert seen.saving and seen.suggested == "harbour-payroll-credentials.txt"
    assert "iss-test" in target.read_text()
    assert "Saved to harbour-credentials.txt" in dialog.status.text()
    dialog.done_button.click()


def test_the_office_certificate_is_chosen_in_the_real_dialog(
    qtbot: Any, no_leaks: None, demo_context: AppContext, tmp_path: Path, file_dialogs: FileDialogs
) -> None:
    section = AddressSection(demo_context)
    qtbot.addWidget(section)
    section.show()
    cert = tmp_path / "office.crt"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    file_dialogs.pick(cert)
    _button(section, "Choose…", 0).click()
    file_dialogs.cancel()
    _button(section, "Choose…", 1).click()
    assert section.cert.text() == str(cert)
    assert section.key.text() == demo_context.settings.tls_key  # cancelled: unchanged
    assert [seen.title for seen in file_dialogs.seen] == [
        "Choose the HTTPS certificate file",
        "Choose the HTTPS key file",
    ]
    section.close()
