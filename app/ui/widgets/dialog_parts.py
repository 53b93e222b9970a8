"""Building blocks the small modal dialogs share (operator PIN, new PIN, settings).

They look and behave alike on purpose: a dialog opens with one plain sentence on what it asks,
says what is wrong in one red line under the fields (words, not only colour), and ends with the
platform's own button row, so Enter and Esc do what they do everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout


def prompt_column(dialog: QDialog, title: str, min_width: int, prompt: str) -> QVBoxLayout:
    """Make ``dialog`` modal, titled and at least ``min_width`` wide; its layout opens with the
    wrapped ``prompt``."""
    dialog.setWindowTitle(title)
    dialog.setModal(True)
    dialog.setMinimumWidth(min_width)
    layout = QVBoxLayout(dialog)
    layout.setSpacing(10)
    text = QLabel(prompt)
    text.setWordWrap(True)
    layout.addWidget(text)
    return layout


def error_line(name: str = "") -> QLabel:
    """The red line that says what is wrong (empty until something is)."""
    line = QLabel("")
    if name:
        line.setObjectName(name)
    line.setStyleSheet("color:#b3261e;font-weight:600;")
    line.setWordWrap(True)
    return line


def dialog_buttons(
    dialog: QDialog, ok: QDialogButtonBox.StandardButton, on_ok: Callable[[], None]
) -> QDialogButtonBox:
    """``ok`` and Cancel: ``ok`` runs ``on_ok`` (which decides whether to accept); Cancel
    rejects."""
    buttons = QDialogButtonBox(ok | QDialogButtonBox.StandardButton.Cancel)
    buttons.accepted.connect(on_ok)
    buttons.rejected.connect(dialog.reject)
    return buttons
