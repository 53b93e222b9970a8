"""The applicant page compares each PDF's printed figures with its registered payslip (PROTOCOL
§13, §10): three PDFs dropped at once, one of them a genuine badge on an altered copy, against
the real embedded demo service. The altered one's row is NOT VERIFIED with no figures or name, and
its problem sentence, naming both values, is on the set's verdict."""

from __future__ import annotations

import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from app.shell.context import AppContext
from app.ui.verify.screen import VerifyScreen
from testbed.applicant_payslips import APPLICANT, Registered, register_fortnights
from testbed.factories import MARKER_ACCOUNT
from testbed.payslip_pages import LAYOUTS, Shown
from testbed.stamped_pages import stamped
from tests.app.shots import shoot
from tests.app.ui.applicant.test_applicant_screen import (  # noqa: F401 - the fixture
    _drop,
    _open,
    _table,
    _texts,
    _wait_done,
    screen,
)
from tests.app.ui.file_dialogs import FileDialogs

pytestmark = pytest.mark.gui
REVIEW = Path("/tmp/shots34")


def money(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def shown_of(payslip: Registered) -> Shown:
    """A page printing ``payslip``'s registered figures (its tax is AU_V1's 782.00)."""
    return Shown(
        name=APPLICANT,
        gross=f"${money(payslip.gross_cents)}",
        net=f"{money(payslip.net_cents)} AUD",
        paid=payslip.payment_date.strftime("%d/%m/%Y"),
        start=payslip.period_start.strftime("%d/%m/%Y"),
        end=payslip.period_end.strftime("%d/%m/%Y"),
    )


def test_one_altered_pdf_among_genuine_ones_is_not_verified_with_its_problem(
    screen: VerifyScreen,  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
    file_dialogs: FileDialogs,
) -> None:
    assert demo_context.issuer is not None and demo_context.issuer_info is not None
    key = demo_context.issuer_info.encryption_key
    fortnights = register_fortnights(demo_context.issuer, key, 3)  # one applicant's, no gaps
    raised = money(fortnights[2].gross_cents + 200_000)
    files = []
    for payslip, name, layout, changes in (
        (fortnights[0], "march.pdf", "label_list", {}),
        (fortnights[1], "april.pdf", "headings", {}),
        (fortnights[2], "raised.pdf", "two_pages", {"gross": f"${raised}"}),
    ):
        pdf, _ = LAYOUTS[layout](shown_of(payslip).altered(**changes))
        path = tmp_path / name
        path.write_bytes(stamped(pdf, payslip.sealed))
        files.append(str(path))
    problem = (
        f"#3 raised.pdf is NOT VERIFIED: The page shows gross pay {raised} AUD; the registered "
        f"payslip says {money(fortnights[2].gross_cents)} AUD. This copy was altered: do not "
        "accept it."
    )
    panel = _open(qtbot, screen)
    panel.name_field.setText(APPLICANT)
    assert _drop(panel, files).isAccepted()
    _wait_done(qtbot, panel, 60000)
    rows = _table(panel)
    assert [r[2] for r in rows] == ["VERIFIED", "VERIFIED", "NOT VERIFIED"]
    assert rows[0][3] == APPLICANT and rows[0][7] == f"{money(fortnights[0].gross_cents)} AUD"
    assert rows[2][:3] == ["#3", "raised.pdf", "NOT VERIFIED"]
    assert set(rows[2][3:]) == {""}  # no name, employer, dates or figures of the altered copy
    banner = _texts(panel.banner)
    assert "NOT VERIFIED" in banner and problem in banner
    assert raised not in _texts(panel.income) and MARKER_ACCOUNT not in banner
    shoot(screen, tmp_path, "applicant-altered-row", ((1366, 768), (1024, 600)), REVIEW)

    # The set's record: the altered copy's block is NOT VERIFIED (its receipt says VERIFIED)
    # and names the changed field, registered and shown; the others say their pages match.
    record = tmp_path / "applicant-record.pdf"
    file_dialogs.pick(record)
    with qtbot.waitSignal(panel.record.saved, timeout=60000):
        panel.record.button.click()
    done = subprocess.run(["pdftotext", str(record), "-"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = " ".join(unicodedata.normalize("NFKC", done.stdout).split())
    assert "#3 raised.pdf: NOT VERIFIED" in text and "#1 march.pdf: VERIFIED" in text
    assert "Document check: Altered: the printed figures differ from the registered payslip" in text
    assert (
        f"Gross pay: registered {money(fortnights[2].gross_cents)} AUD; the page shows {raised} AUD"
    ) in text
    assert text.count("Document check: Matches: the printed figures match") == 2
    assert MARKER_ACCOUNT not in text
