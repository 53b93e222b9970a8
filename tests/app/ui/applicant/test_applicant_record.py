"""The applicant check's verification record (issues 23 and 24): "Save verification record…" on
the "Check an applicant" page writes one real PDF for the set, each payslip's receipt on it as a
QR code that decodes to a receipt PyJWT verifies against the served JWKS; a NOT VERIFIED
payslip's employee data is nowhere in its text; the Verify screen recognises the record with
all its receipts; ``app verify A B C --receipt DIR`` writes each document's receipt."""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from datetime import date
from pathlib import Path
from typing import Any

import jwt
import pytest
from PySide6.QtCore import QLocale

from app.applicant.rules import check_set
from app.inputs.classify import receipts_in
from app.inputs.reading import read_file
from app.shell.context import AppContext
from app.ui.applicant.record import SAVE_TEXT
from app.ui.records.record_pdf import page_size_for
from app.ui.records.set_record_pdf import write_set_record
from app.ui.verify.screen import VerifyScreen
from service.protocol.schemas import RECEIPT_TYPE
from service.protocol.vocabulary import Verdict
from testbed import web
from testbed.applicant_payslips import APPLICANT, register_fortnights, write_inputs
from testbed.factories import MARKER_ACCOUNT
from tests.app.ui.applicant.test_applicant_screen import (  # noqa: F401 - the fixture
    _open,
    _shot,
    _wait_done,
    screen,
)
from tests.app.ui.file_dialogs import FileDialogs
from tests.app.ui.verify.test_verify_record import assert_plain_footer
from tests.commands import run_module

REVOKED_NAME = "Rita Revokedperson"
REVOKED_GROSS = 777_777  # 7,777.77: must not be on the record


def _jwks(context: AppContext) -> dict[str, Any]:
    return dict(web.get(f"{context.service_url}/.well-known/jwks.json", timeout=10).json())


def _verify(receipt: str, jwks: dict[str, Any]) -> dict[str, Any]:
    """A standard JOSE library, not the app's code: PyJWT with the served key of its kid."""
    header = jwt.get_unverified_header(receipt)
    assert header["typ"] == RECEIPT_TYPE
    key = jwt.PyJWKSet.from_dict(jwks)[header["kid"]]
    return dict(jwt.decode(receipt, key, algorithms=["EdDSA"]))


def _set_of_three(context: AppContext, folder: Path) -> tuple[list[str], list[str]]:
    """Two genuine fortnights of the applicant and one revoked payslip of someone else, as
    PDFs; returns the files and the references in that order."""
    assert context.issuer is not None and context.issuer_info is not None
    key = context.issuer_info.encryption_key
    good = register_fortnights(context.issuer, key, 2)
    revoked = register_fortnights(
        context.issuer, key, 1, name=REVOKED_NAME, gross_cents=REVOKED_GROSS
    )
    context.issuer.revoke(revoked[0].reference)
    files = write_inputs(folder, [*good, *revoked], ["pdf", "pdf", "pdf"])
    return files, [p.reference for p in [*good, *revoked]]


def _pdf_text(path: Path) -> str:
    done = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return unicodedata.normalize("NFKC", done.stdout)  # the "fi" ligature as two letters


def _pages(path: Path, folder: Path) -> int:
    done = subprocess.run(["pdftoppm", "-r", "60", "-png", str(path), str(folder / "page")])
    assert done.returncode == 0
    return len(list(folder.glob("page*.png")))


@pytest.mark.gui
def test_the_set_record_holds_each_receipt_and_no_data_of_the_revoked_payslip(
    screen: VerifyScreen,  # noqa: F811
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    screenshot_dir: Path,
    file_dialogs: FileDialogs,
) -> None:
    files, references = _set_of_three(demo_context, tmp_path)
    panel = _open(qtbot, screen)
    button = panel.record.button
    assert not button.isVisible()  # nothing checked yet: nothing to record
    panel.name_field.setText(APPLICANT)
    file_dialogs.pick(*files)  # the real "Open" dialog, several files chosen in it
    panel.open_button.click()
    panel.add_code("not a payslip code")
    _wait_done(qtbot, panel)
    assert panel.check is not None and panel.check.verdict == Verdict.NOT_VERIFIED
    assert button.isVisible() and button.text() == SAVE_TEXT
    _shot(screen, "applicant_record_button", screenshot_dir)

    record = tmp_path / "applicant-record.pdf"
    file_dialogs.pick(record)
    with qtbot.waitSignal(panel.record.saved, timeout=30000):
        button.click()
    assert [seen.saving for seen in file_dialogs.seen] == [False, True]
    assert button.text() == "Record saved"
    assert "saved as applicant-record.pdf" in panel.record.notice.text()
    _shot(screen, "applicant_record_saved", screenshot_dir)

    assert _pages(record, tmp_path) >= 1
    text = _pdf_text(record)
    assert_plain_footer(text)
    assert "Applicant verification record" in text and f"Applicant: {APPLICANT}" in text
    assert "NOT VERIFIED" in text and "Do not accept them as they are." in text
    assert "Per year" not in text  # §10: a set that is NOT VERIFIED proves no income
    assert "None proved: Income is shown only when the payslips are VERIFIED together" in text
    assert "not a payslip code" in text.lower() or "no payslip code" in text.lower()
    for reference in references:
        assert reference in text
    assert REVOKED_NAME not in text and "Revokedperson" not in text
    assert "7,777.77" not in text and "6,222.21" not in text  # the revoked gross and net
    assert MARKER_ACCOUNT not in text

    reading = read_file(record)  # the app's own page rendering and QR decoder
    assert reading.pdf is not None
    receipts = receipts_in(reading.pdf.page_payloads)
    assert len(receipts) == 3  # one per payslip with a verdict, none for the non-code
    jwks = _jwks(demo_context)
    claims = [_verify(r, jwks) for r in receipts]
    assert sorted(c["sub"] for c in claims) == sorted(references)
    by_ref = {c["sub"]: c for c in claims}
    assert by_ref[references[0]]["verified"] and by_ref[references[0]]["employee_name"] == APPLICANT
    assert by_ref[references[2]]["verified"] is False
    assert by_ref[references[2]]["status"] == "revoked"

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    checked_cli = run_module("app", "receipt", "check", str(record), "--jwks", str(keys), env=env)
    assert checked_cli.returncode == 0, checked_cli.stderr
    assert "Receipt 3 of 3" in checked_cli.stdout and checked_cli.stdout.count("GENUINE") == 3
    for reference in references:
        assert reference in checked_cli.stdout

    screen.pages.setCurrentIndex(0)
    with qtbot.waitSignal(screen.records.record_checked, timeout=30000) as checked:
        screen.open_path(record)
    assert checked.args == ["genuine"]
    notice = screen.notice.text()
    assert notice.startswith("Verification record of 3 payslips: all 3 receipts genuine")
    assert notice.count("NOT VERIFIED") == 1 and notice.count("VERIFIED") == 3
    assert REVOKED_NAME not in notice
    assert not screen.showing_result


@pytest.mark.gui
def test_clear_all_hides_the_record_button(
    screen: VerifyScreen,  # noqa: F811
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    payslips = register_fortnights(demo_context.issuer, demo_context.issuer_info.encryption_key, 1)
    panel = _open(qtbot, screen)
    panel.add_code(payslips[0].sealed.payload)
    _wait_done(qtbot, panel)
    assert panel.record.button.isVisible()
    panel.clear_all()
    assert not panel.record.button.isVisible()


@pytest.mark.gui
def test_only_codes_that_are_no_payslip_give_no_record_button(
    screen: VerifyScreen,  # noqa: F811
    qtbot: Any,
) -> None:
    panel = _open(qtbot, screen)
    panel.add_code("hello")
    panel.add_code("world")
    _wait_done(qtbot, panel)
    assert panel.check is not None
    assert not panel.record.button.isVisible()


def test_cli_writes_each_documents_receipt_into_a_folder(
    demo_context: AppContext, tmp_path: Path
) -> None:
    files, references = _set_of_three(demo_context, tmp_path)
    assert demo_context.demo is not None
    remote = [
        f"--service-url={demo_context.service_url}",
        f"--client-id={demo_context.demo.verifier.client_id}",
        f"--client-secret={demo_context.demo.verifier.client_secret}",
    ]
    folder = tmp_path / "receipts"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = run_module("app", "verify", *files, "--receipt", str(folder), *remote, env=env)
    assert out.returncode == 1, out.stdout + out.stderr  # the revoked payslip: NOT VERIFIED
    assert "NO_RECEIPT" not in out.stderr and "Traceback" not in out.stderr
    written = sorted(folder.glob("*.jws"))
    assert [p.name.split("-")[1] for p in written] == ["1", "2", "3"]
    jwks = _jwks(demo_context)
    subs = [_verify(p.read_text().strip(), jwks)["sub"] for p in written]
    assert subs == references
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x")
    refused = run_module(
        "app", "verify", *files[:2], "--receipt", str(not_a_folder), *remote, env=env
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("NO_RECEIPT: a-file is not a folder")
    assert "Traceback" not in refused.stderr


def test_the_set_record_is_letter_in_us_locales_and_a4_elsewhere(
    qapp: object, tmp_path: Path
) -> None:
    empty = check_set([], today=date.today())  # nothing read: CANNOT VERIFY, no receipts
    sizes = {}
    for name, locale in (("us", QLocale("en_US")), ("au", QLocale("en_AU"))):
        path = tmp_path / f"{name}.pdf"
        write_set_record(path, empty, [], "desk 1", None, page_size_for(locale))
        info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
        sizes[name] = next(line for line in info.splitlines() if line.startswith("Page size"))
        assert "CANNOT VERIFY" in _pdf_text(path)
    assert "612 x 792" in sizes["us"] and "(letter)" in sizes["us"]
    assert "595" in sizes["au"] and "(A4)" in sizes["au"]
