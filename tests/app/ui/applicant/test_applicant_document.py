"""The applicant page compares each PDF's printed figures with its registered payslip (PROTOCOL
§13, §10): three PDFs dropped at once, one of them a genuine badge on an altered copy, against
the real embedded demo service. The altered one's row is NOT VERIFIED with no figures or name, and
its problem sentence, naming both values, is on the set's verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.shell.context import AppContext
from app.ui.verify.screen import VerifyScreen
from testbed.factories import MARKER_ACCOUNT
from testbed.payslip_pages import LAYOUTS, Shown
from testbed.stamped_pages import NAME, register_payslip, stamped
from tests.app.shots import shoot
from tests.app.ui.applicant.test_applicant_screen import (  # noqa: F401 - the fixture
    _drop,
    _open,
    _table,
    _texts,
    _wait_done,
    screen,
)

pytestmark = pytest.mark.gui
REVIEW = Path("/tmp/shots34")
PROBLEM = (
    "#3 raised.pdf is NOT VERIFIED: The page shows gross pay 5,846.15 AUD; the registered "
    "payslip says 3,846.15 AUD. This copy was altered: do not accept it."
)


def test_one_altered_pdf_among_genuine_ones_is_not_verified_with_its_problem(
    screen: VerifyScreen,  # noqa: F811 - the fixture
    demo_context: AppContext,
    qtbot: Any,
    tmp_path: Path,
) -> None:
    files = []
    for name, layout, shown in (
        ("march.pdf", "label_list", Shown()),
        ("april.pdf", "this_pay_ytd", Shown()),
        ("raised.pdf", "two_pages", Shown().altered(gross="$5,846.15")),
    ):
        pdf, _ = LAYOUTS[layout](shown)
        path = tmp_path / name
        path.write_bytes(stamped(pdf, register_payslip(demo_context)))
        files.append(str(path))
    panel = _open(qtbot, screen)
    panel.name_field.setText(NAME)
    assert _drop(panel, files).isAccepted()
    _wait_done(qtbot, panel, 60000)
    rows = _table(panel)
    assert [r[2] for r in rows] == ["VERIFIED", "VERIFIED", "NOT VERIFIED"]
    assert rows[0][3] == NAME and rows[0][7] == "3,846.15 AUD"
    assert rows[2][:3] == ["#3", "raised.pdf", "NOT VERIFIED"]
    assert set(rows[2][3:]) == {""}  # no name, employer, dates or figures of the altered copy
    banner = _texts(panel.banner)
    assert "NOT VERIFIED" in banner and PROBLEM in banner
    assert "5,846.15" not in _texts(panel.income) and MARKER_ACCOUNT not in banner
    shoot(screen, tmp_path, "applicant-altered-row", ((1366, 768), (1024, 600)), REVIEW)
