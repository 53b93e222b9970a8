"""Small building blocks of the result card: plain-text labels, titled sections, folds.

Every label is plain text: payslip fields come from an issuer and must never be able to inject
markup into the screen.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


def plain_label(text: str, name: str = "", *, wrap: bool = False) -> QLabel:
    """A label that never interprets markup (issuer-supplied text could otherwise inject it)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    return label


def discard(thing: QObject) -> None:
    """Delete a widget (or layout) that is done with, now rather than "later".

    ``deleteLater`` alone waits for the event loop to come back to the level it was called
    from; a screen refilled from nested loops or ``processEvents`` (a kiosk checking all day,
    the tests) would then keep every old result alive, and grow and slow with every check.
    Processing that one deferred deletion at once is safe here: the caller is never a slot of
    the widget being deleted."""
    thing.deleteLater()
    QCoreApplication.sendPostedEvents(thing, QEvent.Type.DeferredDelete)


def clear_layout(layout: QLayout) -> None:
    """Empty a layout, deleting its widgets and nested layouts (see :func:`discard`)."""
    while layout.count():
        item = layout.takeAt(0)
        if item is None:
            break
        widget = item.widget()
        child = item.layout()
        if widget is not None:
            widget.hide()
            discard(widget)
        elif child is not None:
            clear_layout(child)
            discard(child)


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

    def add_head_button(self, text: str, tip: str, on_click: Callable[[], object]) -> QPushButton:
        """A link-style button at the right of the title (reveal numbers, copy details)."""
        button = QPushButton(text)
        button.setObjectName("linkButton")
        button.setAutoDefault(True)
        button.setToolTip(tip)
        button.clicked.connect(on_click)
        self.head.addWidget(button)
        return button

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
        clear_layout(self.grid)


class Fold(QWidget):
    """A titled toggle and the widgets it shows or hides (details below the verdict)."""

    def __init__(self, title: str, expanded: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._title = title
        self.expanded = expanded
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        self.toggle = QPushButton()
        self.toggle.setObjectName("linkButton")
        self.toggle.setAutoDefault(True)
        self.toggle.clicked.connect(lambda: self.set_expanded(not self.expanded))
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setContentsMargins(0, 0, 0, 0)
        self.body_layout.setSpacing(14)
        layout.addWidget(self.body)
        self.set_expanded(expanded)

    def set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        self.body.setVisible(expanded)
        self.toggle.setText(f"{'▾' if expanded else '▸'}  {self._title}")
        self.toggle.setAccessibleName(f"{'Hide' if expanded else 'Show'} {self._title.lower()}")
