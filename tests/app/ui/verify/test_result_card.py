"""The result card on its own: what a person reads for each kind of outcome (no service needed)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel, QPushButton

from app.ui.verify.result_card import SLOW_TEXT, ResultCard
from app.verify.flow import Attempt, Outcome
from app.verify.presentation import error_message, timestamp
from service.protocol.schemas import VerificationResult
from testbed.factories import AU_V1

pytestmark = pytest.mark.gui

RESULT: dict[str, Any] = {
    "verified": True,
    "service_reference": "kQffJ_u45KZ8_Mnxedo60A",
    "payslip": {
        "schema": AU_V1["schema"],
        "issued_at": AU_V1["issued_at"],
        "payslip_non_pii": {
            **AU_V1["payslip_non_pii"],
            "earnings": [
                {"type": "ordinary", "units": 76, "rate_cents": 4800, "amount_cents": 364800},
                {"type": "allowance", "allowance_type": "laundry", "amount_cents": 19815},
            ],
            "deductions": [{"type": "union_fees", "amount_cents": 1500}],
            "superannuation": [
                {"contribution_type": "superannuation_guarantee", "amount_cents": 46154}
            ],
        },
        "status": "active",
        "issuer": {"issuer_id": "i-1", "name": "Demo Payroll Pty Ltd"},
        "registered_at": "2026-11-13T09:00:01.000Z",
    },
    "employee": {
        "employee_name": "Alex Example",
        "position": "Store Manager",
        "bsb": "062-000",
        "account_number": "12345678",
        "account_name": "A Example",
    },
    "decrypted_at": "2026-11-21T10:00:00.000Z",
}


def answer(data: dict[str, Any]) -> VerificationResult:
    """A verification result as the API client hands it over."""
    return VerificationResult.model_validate(copy.deepcopy(data))


def verified() -> Outcome:
    return Outcome("VERIFIED", [Attempt(result=answer(RESULT))])


@pytest.fixture
def card(qtbot: Any, no_leaks: None) -> Iterator[ResultCard]:
    widget = ResultCard()
    qtbot.addWidget(widget)
    widget.resize(1100, 720)
    widget.show()
    qtbot.waitExposed(widget)
    yield widget
    widget.close()


def shot(card: ResultCard, screenshot_dir: Path, name: str) -> None:
    path = screenshot_dir / f"{name}.png"
    assert card.grab().save(str(path))
    assert path.stat().st_size > 0


def test_verified_reads_like_a_payslip(card: ResultCard, qtbot: Any, screenshot_dir: Path) -> None:
    with qtbot.waitSignal(card.shown) as shown:
        card.show_outcome(verified())
    assert shown.args == ["verified"]
    texts = card.visible_texts()
    for expected in (
        "VERIFIED",
        "Demo Payroll Pty Ltd",
        "30 Oct 2026 – 12 Nov 2026",
        "13 Nov 2026",
        "$3,846.15 AUD",
        "$782.00 AUD",
        "$3,064.15 AUD",
        "$34,615.35 AUD",
        "Ordinary",
        "76 × $48.00 AUD",
        "Allowance (Laundry)",
        "Union fees",
        "Superannuation guarantee",
        "Alex Example",
        "•••••678",
        "Accept this payslip.",
    ):
        assert expected in texts, expected
    assert "12345678" not in texts
    # Name, net pay, payment date and issuer are inside the verdict panel itself.
    inside = [lab.text() for lab in card.banner.findChildren(QLabel) if lab.isVisibleTo(card)]
    for fact in ("Alex Example", "$3,064.15 AUD", "13 Nov 2026", "Demo Payroll Pty Ltd"):
        assert fact in inside, fact
    # The reference and times are support details, folded; times local, to the minute.
    assert "kQffJ_u45KZ8_Mnxedo60A" not in texts
    assert card.support is not None and not card.support.expanded
    card.support.toggle.click()
    texts = card.visible_texts()
    assert "kQffJ_u45KZ8_Mnxedo60A" in texts
    assert timestamp("2026-11-21T10:00:00.000Z") in texts
    assert not any(".000" in t or "UTC" in t for t in texts)
    assert "kQffJ_u45KZ8_Mnxedo60A" in card.support_text
    assert "Alex Example" not in card.support_text
    # The verdict is told in words and by an icon, not by colour alone.
    assert card.banner.icon.pixmap() is not None and not card.banner.icon.pixmap().isNull()
    assert card.banner.icon.accessibleName() == "Verified"
    shot(card, screenshot_dir, "verified")


def test_reveal_shows_the_account_until_the_next_result(card: ResultCard, qtbot: Any) -> None:
    card.show_outcome(verified())
    reveal = next(b for b in card.findChildren(QPushButton) if b.text() == "Reveal numbers")
    qtbot.mouseClick(reveal, pytest.importorskip("PySide6.QtCore").Qt.MouseButton.LeftButton)
    assert "12345678" in card.visible_texts()
    assert "Hide numbers" in card.visible_texts()
    card.show_outcome(verified())
    assert "12345678" not in card.visible_texts()
    assert "•••••678" in card.visible_texts()


def test_revoked_is_not_verified_without_any_payslip_data(
    card: ResultCard, screenshot_dir: Path
) -> None:
    result = copy.deepcopy(RESULT)
    result["verified"] = False
    result["payslip"]["status"] = "revoked"
    card.show_outcome(Outcome("REVOKED", [Attempt(result=answer(result))]))
    texts = card.visible_texts()
    assert "NOT VERIFIED" in texts and "Do not accept this payslip." in texts
    assert "Demo Payroll Pty Ltd" in texts  # the issuer, when known
    held = " ".join(card.all_texts())
    for value in [*RESULT["employee"].values(), "$3,064.15 AUD", "$3,846.15 AUD", "•••••678"]:
        assert value not in held, value
    assert card.details is None and "Reveal numbers" not in held
    assert card.banner.icon.accessibleName() == "Not verified"
    shot(card, screenshot_dir, "revoked")


@pytest.mark.parametrize(
    ("code", "headline", "retry"),
    [
        ("DECRYPTION_FAILED", "NOT VERIFIED", False),
        ("SERVICE_REFERENCE_NOT_FOUND", "NOT VERIFIED", False),
        ("SERVICE_UNREACHABLE", "CANNOT VERIFY", True),
        ("RATE_LIMITED", "CANNOT VERIFY", True),
        ("UNAUTHORIZED", "CANNOT VERIFY", True),
    ],
)
def test_errors_in_plain_words_with_the_request_id_for_support(
    card: ResultCard, code: str, headline: str, retry: bool
) -> None:
    card.show_outcome(Outcome(code, [Attempt(code=code, request_id="req-42")]))
    texts = card.visible_texts()
    assert headline in texts
    assert error_message(code) in texts
    assert code not in " ".join(texts) and "req-42" not in texts
    assert ("Try again" in texts) is retry
    assert card.support is not None
    card.support.toggle.click()
    texts = card.visible_texts()
    assert code in texts and "req-42" in texts
    assert "req-42" in card.support_text
    expected_icon = "Not verified" if headline == "NOT VERIFIED" else "Warning"
    assert card.banner.icon.accessibleName() == expected_icon


def test_try_again_asks_for_a_retry(card: ResultCard, qtbot: Any) -> None:
    card.show_outcome(Outcome("SERVICE_UNAVAILABLE", [Attempt(code="SERVICE_UNAVAILABLE")]))
    button = next(b for b in card.findChildren(QPushButton) if b.text() == "Try again")
    with qtbot.waitSignal(card.retry_requested):
        button.click()


def test_disagreeing_pdf_says_why_and_shows_neither_payslip(
    card: ResultCard, screenshot_dir: Path
) -> None:
    other = copy.deepcopy(RESULT)
    other["service_reference"] = "OTHER_reference_000001"
    other["employee"]["employee_name"] = "Someone Else"
    other["payslip"]["payslip_non_pii"]["net_cents"] = 999999
    outcome = Outcome(
        "CONFLICTING_CODES",
        [Attempt(result=answer(RESULT)), Attempt(result=answer(other))],
        disagreement=True,
    )
    card.show_outcome(outcome)
    texts = card.visible_texts()
    assert "NOT VERIFIED" in texts
    assert error_message("CONFLICTING_CODES") in texts
    held = " ".join(card.all_texts())
    for value in ("Alex Example", "Someone Else", "$3,064.15 AUD", "$9,999.99 AUD"):
        assert value not in held
    assert card.support is not None
    card.support.toggle.click()
    texts = card.visible_texts()
    assert "kQffJ_u45KZ8_Mnxedo60A" in texts and "OTHER_reference_000001" in texts
    shot(card, screenshot_dir, "disagreement")


def test_disagreement_with_one_side_failing(card: ResultCard) -> None:
    outcome = Outcome(
        "CONFLICTING_CODES",
        [
            Attempt(result=answer(RESULT)),
            Attempt(code="SERVICE_REFERENCE_NOT_FOUND", request_id="req-7"),
        ],
        disagreement=True,
    )
    card.show_outcome(outcome)
    assert card.support is not None
    card.support.toggle.click()
    texts = card.visible_texts()
    assert error_message("SERVICE_REFERENCE_NOT_FOUND") in texts
    assert "req-7" in texts


def test_issuer_text_is_never_markup(card: ResultCard) -> None:
    result = copy.deepcopy(RESULT)
    result["payslip"]["issuer"]["name"] = "<b>Evil</b> <a href='x'>Payroll</a>"
    card.show_outcome(Outcome("VERIFIED", [Attempt(result=answer(result))]))
    label = next(lab for lab in card.findChildren(QLabel) if lab.text().startswith("<b>Evil"))
    from PySide6.QtCore import Qt

    assert label.textFormat() == Qt.TextFormat.PlainText


def test_pending_then_slow_then_clear(card: ResultCard, screenshot_dir: Path) -> None:
    card.show_pending()
    assert "CHECKING…" in card.visible_texts()
    card.show_pending(slow=True)
    assert any(SLOW_TEXT in text for text in card.visible_texts())
    shot(card, screenshot_dir, "slow")
    card.show_outcome(verified())
    card.set_countdown(42)
    assert "Clears in 42 s" in card.visible_texts()
    card.clear()
    assert card.visible_texts() == []
    assert card.outcome is None


def test_support_details_copy_without_personal_data(card: ResultCard) -> None:
    from PySide6.QtGui import QGuiApplication

    card.show_outcome(Outcome("INTERNAL_ERROR", [Attempt(code="INTERNAL_ERROR", request_id="r-9")]))
    assert card.support is not None
    card.support.toggle.click()
    copy_button = next(b for b in card.findChildren(QPushButton) if b.text() == "Copy")
    copy_button.click()
    copied = QGuiApplication.clipboard().text()
    assert "INTERNAL_ERROR" in copied and "r-9" in copied and "CANNOT VERIFY" in copied
    card.show_outcome(verified())
    assert card.support is not None
    assert "kQffJ_u45KZ8_Mnxedo60A" in card.support_text
    for value in [*RESULT["employee"].values(), "$3,064.15 AUD"]:
        assert value not in card.support_text
