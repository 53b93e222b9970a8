"""The result card: one verdict a front-desk worker reads at a glance, then the payslip below it.

The banner says VERIFIED, NOT VERIFIED or CANNOT VERIFY with colour, icon and words together.
Below it the payslip reads the way a person reads a payslip (who paid, for when, how much), then
the pay lines as a table, then the employee with the bank account masked until the operator
asks to see it. Errors are explained in plain words by their code, with the request id for
support. Every label is plain text: payslip fields come from an issuer and must never be able to
inject markup into the screen.

Nothing shown here is logged or written anywhere; :meth:`ResultCard.clear` drops the widgets that
held it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.presentation import (
    employee_lines,
    error_message,
    line_items,
    summary_lines,
    timestamp,
)
from app.ui.style import Tone, banner_stylesheet, status_icon, type_scale
from app.verify_flow import Attempt, Outcome

RETRYABLE_CODES = frozenset(
    {"SERVICE_UNREACHABLE", "SERVICE_UNAVAILABLE", "RATE_LIMITED", "INTERNAL_ERROR"}
)
"""Codes that say nothing about the payslip: the same code may well verify a moment later."""

UNREACHABLE_TEXT = "Service unreachable — retrying"
NARROW_WIDTH = 860
"""Below this width (scaled for kiosk type) the card's columns stack vertically."""
_KEY_LINES = frozenset({"Net pay"})


def plain_label(text: str, name: str = "", *, wrap: bool = False) -> QLabel:
    """A label that never interprets markup (issuer-supplied text could otherwise inject it)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    return label


def _clear_layout(layout: QLayout) -> None:
    while layout.count():
        item = layout.takeAt(0)
        if item is None:
            break
        widget = item.widget()
        child = item.layout()
        if widget is not None:
            widget.hide()
            widget.deleteLater()
        elif child is not None:
            _clear_layout(child)


class Banner(QFrame):
    """The coloured verdict strip: icon, headline, one-sentence explanation, countdown, Next.

    Signals:
        next_clicked(): the operator pressed Next.
    """

    next_clicked = Signal()

    def __init__(self, kiosk: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self._icon_size = round(56 * type_scale(kiosk))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(20, 16, 16, 16)
        layout.setSpacing(16)
        self.icon = QLabel()
        self.icon.setFixedSize(self._icon_size, self._icon_size)
        self.icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        words = QVBoxLayout()
        words.setSpacing(4)
        self.headline = plain_label("", "bannerHeadline")
        self.text = plain_label("", "bannerText", wrap=True)
        words.addWidget(self.headline)
        words.addWidget(self.text)
        layout.addLayout(words, 1)
        side = QVBoxLayout()
        side.setSpacing(6)
        self.next_button = QPushButton("Next  (Esc)")
        self.next_button.setObjectName("bannerButton")
        self.next_button.setAutoDefault(True)
        self.next_button.setToolTip("Clear this result and verify the next payslip")
        self.next_button.clicked.connect(self.next_clicked)
        self.countdown = plain_label("", "countdown")
        self.countdown.setAlignment(Qt.AlignmentFlag.AlignRight)
        side.addWidget(self.next_button, 0, Qt.AlignmentFlag.AlignRight)
        side.addWidget(self.countdown, 0, Qt.AlignmentFlag.AlignRight)
        side.addStretch(1)
        layout.addLayout(side)

    def show_verdict(self, tone: Tone, headline: str, text: str) -> None:
        self.setStyleSheet(banner_stylesheet(tone))
        self.icon.setPixmap(status_icon(tone, self._icon_size))
        self.icon.setAccessibleName(
            {
                "verified": "Verified",
                "not_verified": "Not verified",
                "error": "Warning",
                "pending": "Working",
            }[tone]
        )
        self.headline.setText(headline)
        self.text.setText(text)


class Section(QFrame):
    """A white panel with a small capitalised title; the body is a grid of rows."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("section")
        self.outer = QVBoxLayout(self)
        self.outer.setContentsMargins(18, 14, 18, 16)
        self.outer.setSpacing(10)
        self.head = QHBoxLayout()
        self.title = plain_label(title.upper(), "sectionTitle")
        self.head.addWidget(self.title)
        self.head.addStretch(1)
        self.outer.addLayout(self.head)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(18)
        self.grid.setVerticalSpacing(7)
        self.outer.addLayout(self.grid)

    def add_pairs(
        self, pairs: list[tuple[str, str]], *, emphasise: frozenset[str] = frozenset()
    ) -> None:
        """Label/value rows; values in ``emphasise`` are shown larger (the net pay)."""
        start = self.grid.rowCount()
        for offset, (label, value) in enumerate(pairs):
            key = plain_label(label, "fieldLabel")
            role = "keyValue" if label in emphasise else "fieldValue"
            shown = plain_label(value, role, wrap=True)
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
            self.grid.addWidget(key, start + offset, 0, Qt.AlignmentFlag.AlignTop)
            self.grid.addWidget(shown, start + offset, 1)
        self.grid.setColumnStretch(1, 1)

    def clear_rows(self) -> None:
        _clear_layout(self.grid)


class ResultCard(QWidget):
    """Shows one verification outcome, or the "checking" state while it is on its way.

    Signals:
        next_requested(): Next was pressed; the owner clears the card and resumes scanning.
        retry_requested(): "Try again" was pressed after a network or service problem.
        shown(str): a final outcome is on screen; carries its state ("verified", "not_verified"
            or "error"). The latency bench and the tests wait on it.
    """

    next_requested = Signal()
    retry_requested = Signal()
    shown = Signal(str)

    def __init__(self, kiosk: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("resultCard")
        self.kiosk = kiosk
        self._reveal = False
        self._employee: dict[str, str] = {}
        self._employee_section: Section | None = None
        self._reveal_button: QPushButton | None = None
        self._columns: QBoxLayout | None = None
        self.outcome: Outcome | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(14)
        self.banner = Banner(kiosk)
        self.banner.next_clicked.connect(self.next_requested)
        layout.addWidget(self.banner)
        self.body = QVBoxLayout()
        self.body.setSpacing(14)
        layout.addLayout(self.body)
        layout.addStretch(1)
        self.banner.hide()

    # -- states -----------------------------------------------------------------------------

    def show_pending(self, *, slow: bool = False) -> None:
        """The code is on its way to the service; ``slow`` once it has not answered for a while."""
        self._reset()
        self.outcome = None
        if slow:
            self.banner.show_verdict(
                "error",
                "CHECKING…",
                f"{UNREACHABLE_TEXT}. The result will appear here as soon as the service answers.",
            )
        else:
            self.banner.show_verdict(
                "pending", "CHECKING…", "Asking the verification service about this payslip."
            )
        self.banner.countdown.setText("")
        self.banner.show()

    def show_outcome(self, outcome: Outcome) -> None:
        """Render a final outcome: the verdict banner and everything the service returned."""
        self._reset()
        self.outcome = outcome
        tone: Tone = outcome.state
        self.banner.show_verdict(tone, outcome.headline, outcome.explanation)
        self.banner.show()
        if outcome.disagreement:
            self._add_disagreement(outcome)
        elif outcome.result is not None:
            self._add_payslip(outcome.result, revoked=not outcome.result.get("verified"))
        else:
            self._add_problem(outcome)
        self._show_new_widgets()
        self._relayout()
        self.shown.emit(outcome.state)

    def set_countdown(self, seconds: int | None) -> None:
        self.banner.countdown.setText("" if seconds is None else f"Clears in {seconds} s")
        self._relayout()

    def _relayout(self) -> None:
        """Lay out now rather than on the next event loop pass (no half-drawn first frame)."""
        for layout in (self.banner.layout(), self.layout()):
            if layout is not None:
                layout.activate()

    def clear(self) -> None:
        """Forget the result: widgets holding payslip or employee data are deleted."""
        self._reset()
        self.outcome = None
        self.banner.hide()
        self.banner.headline.setText("")
        self.banner.text.setText("")
        self.banner.countdown.setText("")

    def visible_texts(self) -> list[str]:
        """Every text a person can currently read on the card (tests assert on these)."""
        texts = []
        for label in self.findChildren(QLabel):
            if label.isVisibleTo(self) and label.text():
                texts.append(label.text())
        for button in self.findChildren(QPushButton):
            if button.isVisibleTo(self) and button.text():
                texts.append(button.text())
        return texts

    @property
    def revealed(self) -> bool:
        return self._reveal

    def toggle_reveal(self) -> None:
        """Show or hide the full bank account number (masked by default: screens get seen)."""
        self._reveal = not self._reveal
        self._render_employee()

    # -- building blocks --------------------------------------------------------------------

    def _show_new_widgets(self) -> None:
        """Show the widgets just built now, not on Qt's next event loop pass.

        A layout shows a widget added to a visible parent only later (a queued call), so for a
        moment the card would be half empty to anything reading it (tests, screen readers, the
        latency bench). Widgets hidden on purpose keep their state.
        """
        for widget in self.findChildren(QWidget):
            if not widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
                widget.show()

    def _columns_layout(self) -> QBoxLayout:
        """Side by side on a wide screen, one under the other on a narrow one (no sideways
        scrolling: a front-desk worker must not have to look for half of the payslip)."""
        row = QBoxLayout(self._column_direction())
        row.setSpacing(14)
        self._columns = row
        return row

    def _column_direction(self) -> QBoxLayout.Direction:
        narrow = self.width() < NARROW_WIDTH * type_scale(self.kiosk)
        return QBoxLayout.Direction.TopToBottom if narrow else QBoxLayout.Direction.LeftToRight

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if self._columns is not None:
            self._columns.setDirection(self._column_direction())

    def _reset(self) -> None:
        self._columns = None
        _clear_layout(self.body)
        self._reveal = False
        self._employee = {}
        self._employee_section = None
        self._reveal_button = None

    def _add_payslip(self, result: dict[str, Any], *, revoked: bool) -> None:
        row = self._columns_layout()
        left = QVBoxLayout()
        left.setSpacing(14)
        payslip = Section("Payslip (revoked)" if revoked else "Payslip")
        payslip.add_pairs(summary_lines(result), emphasise=_KEY_LINES)
        left.addWidget(payslip)
        non_pii = result.get("payslip", {}).get("payslip_non_pii", {})
        items = line_items(non_pii) if isinstance(non_pii, dict) else []
        if items:
            left.addWidget(self._items_section(items))
        left.addStretch(1)
        row.addLayout(left, 3)
        right = QVBoxLayout()
        right.setSpacing(14)
        employee = result.get("employee") or {}
        self._employee = (
            {str(k): str(v) for k, v in employee.items()} if isinstance(employee, dict) else {}
        )
        if self._employee:
            section = Section("Employee")
            if "account_number" in self._employee:
                button = QPushButton("Reveal account")
                button.setObjectName("linkButton")
                button.setAutoDefault(True)
                button.setToolTip("Show the full bank account number until this result clears")
                button.clicked.connect(self.toggle_reveal)
                section.head.addWidget(button)
                self._reveal_button = button
            self._employee_section = section
            self._render_employee()
            right.addWidget(section)
        right.addWidget(self._record_section(result))
        right.addStretch(1)
        row.addLayout(right, 2)
        self.body.addLayout(row)

    def _render_employee(self) -> None:
        section = self._employee_section
        if section is None:
            return
        section.clear_rows()
        section.add_pairs(employee_lines(self._employee, reveal=self._reveal))
        self._show_new_widgets()
        if self._reveal_button is not None:
            self._reveal_button.setText("Hide account" if self._reveal else "Reveal account")

    def _record_section(self, result: dict[str, Any]) -> Section:
        section = Section("Record")
        payslip = result.get("payslip", {})
        pairs = [("Reference", str(result.get("service_reference", "")))]
        if payslip.get("status"):
            pairs.append(("Status", str(payslip["status"]).capitalize()))
        if payslip.get("issued_at"):
            pairs.append(("Issued", timestamp(payslip["issued_at"])))
        if result.get("decrypted_at"):
            pairs.append(("Checked", timestamp(result["decrypted_at"])))
        section.add_pairs(pairs)
        return section

    def _items_section(self, items: list[tuple[str, str, str, str]]) -> Section:
        section = Section("Pay lines")
        grid = section.grid
        for column, head in enumerate(("Description", "Units × rate", "Amount")):
            label = plain_label(head.upper(), "columnHead")
            if column == 2:
                label.setAlignment(Qt.AlignmentFlag.AlignRight)
            grid.addWidget(label, 0, column)
        row = 1
        group = None
        for title, description, quantity, amount in items:
            if title != group:
                grid.addWidget(plain_label(title, "itemGroup"), row, 0, 1, 3)
                group = title
                row += 1
            grid.addWidget(plain_label(description, wrap=True), row, 0)
            grid.addWidget(plain_label(quantity, "fieldLabel"), row, 1)
            shown = plain_label(amount, "fieldValue")
            shown.setAlignment(Qt.AlignmentFlag.AlignRight)
            grid.addWidget(shown, row, 2)
            row += 1
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 0)
        return section

    def _add_problem(self, outcome: Outcome) -> None:
        section = Section("What this means")
        code = outcome.code
        pairs: list[tuple[str, str]] = []
        if code:
            pairs.append(("Code", code))
        if outcome.request_id:
            pairs.append(("Request id", outcome.request_id))
        text = plain_label(self._advice(outcome), wrap=True)
        section.outer.insertWidget(1, text)
        if pairs:
            section.add_pairs(pairs)
        if outcome.request_id:
            section.outer.addWidget(
                plain_label("Quote the request id if you contact support.", "footnote", wrap=True)
            )
        if outcome.state == "error" and code in RETRYABLE_CODES:
            button = QPushButton("Try again")
            button.setObjectName("primary")
            button.setAutoDefault(True)
            button.clicked.connect(self.retry_requested)
            section.outer.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        self.body.addWidget(section)

    @staticmethod
    def _advice(outcome: Outcome) -> str:
        code = outcome.code
        if outcome.state == "not_verified":
            return (
                "Do not accept this payslip as proof. Ask the employee for the original "
                "document or a newly issued payslip."
            )
        if code in RETRYABLE_CODES:
            return (
                "This says nothing about the payslip itself. The service will be asked again "
                "when you press Try again or scan the code again."
            )
        if code in {"UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "METHOD_NOT_ALLOWED"}:
            return "This desk is not set up correctly. An operator can fix it in Settings."
        if code is None:
            return "Nothing was sent to the service."
        return error_message(code)

    def _add_disagreement(self, outcome: Outcome) -> None:
        intro = plain_label(
            "The PDF carries hidden payslip data and a printed QR code. They should name the "
            "same payslip but do not, so someone has changed the document. Both were checked:",
            wrap=True,
        )
        self.body.addWidget(intro)
        row = self._columns_layout()
        for index, attempt in enumerate(outcome.attempts):
            title = "Hidden data in the PDF" if index == 0 else "Printed QR code on the page"
            row.addWidget(self._attempt_panel(title, attempt), 1)
        self.body.addLayout(row)

    def _attempt_panel(self, title: str, attempt: Attempt) -> Section:
        section = Section(title)
        if attempt.result is not None:
            verified = bool(attempt.result.get("verified"))
            tone: Tone = "verified" if verified else "not_verified"
            verdict = (
                "Names a registered payslip"
                if verified
                else "Names a payslip that has been revoked"
            )
        else:
            tone = "not_verified" if attempt.code not in RETRYABLE_CODES else "error"
            verdict = error_message(attempt.code)
        head = QHBoxLayout()
        icon = QLabel()
        icon.setPixmap(status_icon(tone, round(22 * type_scale(self.kiosk)), on_colour=False))
        head.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        head.addWidget(plain_label(verdict, "fieldValue", wrap=True), 1)
        section.outer.insertLayout(1, head)
        if attempt.result is not None:
            result = attempt.result
            pairs = summary_lines(result)
            pairs = [p for p in pairs if p[0] in {"Issuer", "Pay period", "Net pay"}]
            employee = result.get("employee") or {}
            if isinstance(employee, dict) and employee.get("employee_name"):
                pairs.append(("Employee", str(employee["employee_name"])))
            pairs.append(("Reference", str(result.get("service_reference", ""))))
            section.add_pairs(pairs, emphasise=_KEY_LINES)
        else:
            pairs = [("Code", attempt.code or "")]
            if attempt.request_id:
                pairs.append(("Request id", attempt.request_id))
            section.add_pairs(pairs)
        section.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        return section
