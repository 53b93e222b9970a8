"""Answer the app's real modal dialogs (PIN, set PIN, settings) through their widgets.

A test that replaces ``ask_pin`` or ``SettingsDialog.exec`` with a lambda never opens the
dialog a person meets, so a crash or a lost focus in it goes unseen (issue 35: the file dialogs
crashed while every test replaced them). Here the real dialog opens, modal, and when it is shown
the next queued answer types into its fields and presses its buttons. What each dialog showed
(its class and its texts) is kept for assertions.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QLineEdit,
)

Answer = Callable[[QDialog], None]


@dataclass(frozen=True)
class Shown:
    kind: str
    texts: tuple[str, ...]


def _press(dialog: QDialog, which: QDialogButtonBox.StandardButton) -> None:
    for box in dialog.findChildren(QDialogButtonBox):
        button = box.button(which)
        if button is not None and button.isVisible():
            button.click()
            return
    raise AssertionError(f"{type(dialog).__name__} has no visible {which} button")


def cancel(dialog: QDialog) -> None:
    """Press the dialog's Cancel (or Close) button."""
    for which in (QDialogButtonBox.StandardButton.Cancel, QDialogButtonBox.StandardButton.Close):
        if any(box.button(which) is not None for box in dialog.findChildren(QDialogButtonBox)):
            _press(dialog, which)
            return
    raise AssertionError(f"{type(dialog).__name__} has no Cancel button")


def type_pin(*pins: str) -> Answer:
    """Type ``pins`` into the dialog's PIN fields, in order (a key at a time), then OK."""

    def answer(dialog: QDialog) -> None:
        fields = [f for f in dialog.findChildren(QLineEdit) if f.isVisible()]
        assert len(fields) >= len(pins), [f.accessibleName() for f in fields]
        for field, pin in zip(fields, pins, strict=False):
            field.setFocus()
            QTest.keyClicks(field, pin)
        _press(dialog, QDialogButtonBox.StandardButton.Ok)

    return answer


def all_of(*answers: Answer) -> Answer:
    """Several answers to one dialog, in order (a wrong PIN, then Cancel)."""

    def answer(dialog: QDialog) -> None:
        for one in answers:
            if dialog.isVisible():
                one(dialog)

    return answer


class DialogAnswers(QObject):
    """Answers each real modal dialog (except file dialogs) shown, in order, with a queued
    answer; a dialog with nothing queued is cancelled and counted in ``unexpected``."""

    def __init__(self) -> None:
        app = QApplication.instance()
        assert app is not None
        super().__init__(app)
        self._answers: deque[Answer] = deque()
        self.shown: list[Shown] = []
        self.unexpected = 0
        app.installEventFilter(self)

    def then(self, *answers: Answer) -> None:
        self._answers.extend(answers)

    @staticmethod
    def all_closed() -> bool:
        """No dialog is left, not even one closed and waiting to be deleted (the window
        behind it is active again only then)."""
        return not [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog)]

    @property
    def kinds(self) -> list[str]:
        return [shown.kind for shown in self.shown]

    def close(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self.deleteLater()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Show
            and isinstance(watched, QDialog)
            and not isinstance(watched, QFileDialog)
            and watched.isModal()
        ):
            QTimer.singleShot(0, lambda: self._answer(watched))
        return False

    def _answer(self, dialog: QDialog) -> None:
        if not dialog.isVisible():
            return
        texts = tuple(label.text() for label in dialog.findChildren(QLabel) if label.text())
        self.shown.append(Shown(type(dialog).__name__, texts))
        if not self._answers:
            self.unexpected += 1
            dialog.reject()
            return
        self._answers.popleft()(dialog)
