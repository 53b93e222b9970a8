"""The verdict panel: the coloured block that *is* the verify screen while a result shows.

Icon, headline, one instruction, the reason in plain words, what the document check says of the
printed figures (PROTOCOL §13), the key facts (for VERIFIED: name,
net pay, payment date, issuer), an optional hint, Try again and Next. Its type grows with the
space it is given (:meth:`Banner.set_scale`) so the verdict reads from across a desk on any
screen from 1024x600 up.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.widgets.card_parts import clear_layout, plain_label
from app.ui.widgets.style import PALETTES, Tone, status_icon, type_scale

_ICON_NAMES: dict[Tone, str] = {
    "verified": "Verified",
    "not_verified": "Not verified",
    "error": "Warning",
    "pending": "Working",
}


def _panel_stylesheet(tone: Tone, scale: float) -> str:
    def pt(size: float) -> str:
        return f"{round(size * scale)}pt"

    return f"""
    QFrame#banner {{ background: {PALETTES[tone].strong}; border-radius: 14px; }}
    QFrame#banner QLabel {{ color: white; background: transparent; }}
    QLabel#bannerHeadline {{ font-size: {pt(34)}; font-weight: 800; letter-spacing: 1px; }}
    QLabel#bannerInstruction {{ font-size: {pt(19)}; font-weight: 700; }}
    QLabel#bannerText {{ font-size: {pt(13)}; }}
    QFrame#banner QLabel#bannerDocument {{ font-size: {pt(13)}; font-weight: 700;
        background: rgba(0,0,0,0.22); border-radius: 6px; }}
    QLabel#factLabel {{ font-size: {pt(10.5)}; font-weight: 600; }}
    QLabel#factValue {{ font-size: {pt(19)}; font-weight: 700; }}
    QFrame#banner QLabel#bannerHint {{ font-size: {pt(11)}; font-weight: 600;
        background: rgba(0,0,0,0.28); border-radius: 6px; padding: 6px 12px; }}
    QLabel#countdown {{ font-size: {pt(10.5)}; }}
    QFrame#facts {{ background: rgba(255,255,255,0.12); border-radius: 10px; }}
    QPushButton#bannerButton, QPushButton#retryButton {{ font-size: {pt(13)}; padding: 8px 18px;
        border-radius: 8px; font-weight: 700; }}
    QPushButton#bannerButton {{ background: rgba(255,255,255,0.16); color: white;
        border: 1px solid rgba(255,255,255,0.8); }}
    QPushButton#bannerButton:focus {{ border: 3px solid white; padding: 6px 16px; }}
    QPushButton#retryButton {{ background: white; color: {PALETTES[tone].strong};
        border: 2px solid white; }}
    QPushButton#retryButton:focus {{ border: 3px solid #0b2f52; padding: 7px 17px; }}
    """


class Banner(QFrame):
    """The verdict panel: icon, headline, one instruction, the reason, key facts, buttons.

    Signals:
        next_clicked(): the operator pressed Next (or Cancel while checking).
        retry_clicked(): the operator pressed Try again (CANNOT VERIFY only).
    """

    next_clicked = Signal()
    retry_clicked = Signal()

    def __init__(self, kiosk: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAccessibleName("Verdict")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._kiosk = kiosk
        self._tone: Tone = "pending"
        self._scale = type_scale(kiosk)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(28, 22, 24, 20)
        outer.setSpacing(10)

        top = QHBoxLayout()
        top.setSpacing(20)
        self.icon = QLabel()
        self.icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        top.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignVCenter)
        words = QVBoxLayout()
        words.setSpacing(2)
        self.headline = plain_label("", "bannerHeadline")
        self.instruction = plain_label("", "bannerInstruction", wrap=True)
        words.addWidget(self.headline)
        words.addWidget(self.instruction)
        top.addLayout(words, 1)
        outer.addLayout(top)

        self.text = plain_label("", "bannerText", wrap=True)
        outer.addWidget(self.text)
        self.document = plain_label("", "bannerDocument", wrap=True)
        self.document.setAccessibleName("Printed figures")
        # Margins, not stylesheet padding: a wrapped label's height for its width counts these.
        self.document.setContentsMargins(12, 6, 12, 6)
        self.document.hide()
        outer.addWidget(self.document)

        self.facts = QFrame()
        self.facts.setObjectName("facts")
        self.facts.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.facts_grid = QGridLayout(self.facts)
        self.facts_grid.setContentsMargins(18, 12, 18, 12)
        self.facts_grid.setHorizontalSpacing(32)
        self.facts_grid.setVerticalSpacing(0)
        self.facts.hide()
        outer.addWidget(self.facts)
        outer.addStretch(1)

        self._bottom = bottom = QHBoxLayout()
        bottom.setSpacing(12)
        self.retry_button = QPushButton("Try again")
        self.retry_button.setObjectName("retryButton")
        self.retry_button.setAutoDefault(True)
        self.retry_button.setToolTip("Ask the service again about the same payslip")
        self.retry_button.clicked.connect(self.retry_clicked)
        self.retry_button.hide()
        bottom.addWidget(self.retry_button)
        self.hint = plain_label("", "bannerHint")
        self.hint.hide()
        bottom.addWidget(self.hint, 0, Qt.AlignmentFlag.AlignVCenter)
        bottom.addStretch(1)
        self.countdown = plain_label("", "countdown")
        bottom.addWidget(self.countdown, 0, Qt.AlignmentFlag.AlignVCenter)
        self.next_button = QPushButton("Next  (Esc)")
        self.next_button.setObjectName("bannerButton")
        self.next_button.setAutoDefault(True)
        self.next_button.setToolTip("Clear this result and verify the next payslip")
        self.next_button.clicked.connect(self.next_clicked)
        bottom.addWidget(self.next_button)
        outer.addLayout(bottom)
        self._restyle()

    def add_action(self, button: QWidget) -> None:
        """One more button on the bottom row, after Try again (the verification record's)."""
        self._bottom.insertWidget(1, button)

    def show_verdict(self, tone: Tone, headline: str, instruction: str, text: str) -> None:
        self._tone = tone
        self._restyle()
        self.icon.setAccessibleName(_ICON_NAMES[tone])
        self.headline.setText(headline)
        self.instruction.setText(instruction)
        self.instruction.setVisible(bool(instruction))
        self.text.setText(text)
        self.text.setVisible(bool(text))
        self.set_document("")

    def set_document(self, words: str) -> None:
        """What the document check says of the printed figures (PROTOCOL §13); empty hides it."""
        self.document.setText(words)
        self.document.setVisible(bool(words))

    def set_facts(self, facts: list[tuple[str, str]]) -> None:
        """Label/value pairs shown large inside the panel, two per row."""
        clear_layout(self.facts_grid)
        for index, (label, value) in enumerate(facts):
            row, column = divmod(index, 2)
            head = plain_label(label.upper(), "factLabel")
            if row:
                head.setContentsMargins(0, 10, 0, 0)
            self.facts_grid.addWidget(head, row * 2, column)
            shown = plain_label(value, "factValue", wrap=True)
            self.facts_grid.addWidget(shown, row * 2 + 1, column, Qt.AlignmentFlag.AlignTop)
        for column in (0, 1):
            self.facts_grid.setColumnStretch(column, 1)
        self.facts.setVisible(bool(facts))

    def set_scale(self, scale: float) -> None:
        """Type and icon size for the space available (larger on a large screen)."""
        scale = round(scale, 2)
        if scale != self._scale:
            self._scale = scale
            self._restyle()

    def _restyle(self) -> None:
        self.setStyleSheet(_panel_stylesheet(self._tone, self._scale))
        size = round(64 * self._scale)
        self.icon.setFixedSize(size, size)
        self.icon.setPixmap(status_icon(self._tone, size))
