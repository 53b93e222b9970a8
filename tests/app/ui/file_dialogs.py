"""Answer the app's real file dialogs through their widgets, as a person would.

The app calls Qt's static file dialogs (``QFileDialog.getOpenFileName`` and friends). Where no
platform theme offers a native dialog (offscreen here, a Linux desktop without a GTK theme, the
bundle) Qt builds its own widget dialog, and that dialog once crashed the app with its event
filters installed (issue 35): a test that replaces the call with a lambda never meets it. So
tests let the real dialog open and drive it: when a ``QFileDialog`` is shown, the next queued
answer types a path into its file-name field and presses its Open/Save/Choose button, or presses
Cancel. What each dialog showed (title, folder, mode) is kept for assertions.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QDialogButtonBox,
    QFileDialog,
    QLineEdit,
    QMessageBox,
)

CANCEL = "<cancel>"


@dataclass(frozen=True)
class Seen:
    """One dialog as it was shown: what a person would read on it."""

    title: str
    folder: str
    suggested: str
    saving: bool
    widget_dialog: bool


class FileDialogs(QObject):
    """Answers each real file dialog that opens, in order, with a queued answer."""

    def __init__(self) -> None:
        app = QApplication.instance()
        assert app is not None
        super().__init__(app)
        self._answers: deque[list[str]] = deque()
        self.seen: list[Seen] = []
        self.unanswered = 0
        app.installEventFilter(self)

    def pick(self, *paths: Path | str) -> None:
        """The next dialog chooses ``paths`` (one file, several files, or a folder)."""
        self._answers.append([str(path) for path in paths])

    def cancel(self) -> None:
        """The next dialog is cancelled."""
        self._answers.append([CANCEL])

    def close(self) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self.deleteLater()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show:
            if isinstance(watched, QFileDialog):
                QTimer.singleShot(0, lambda: self._answer(watched))
            elif isinstance(watched, QMessageBox) and isinstance(
                watched.parentWidget(), QFileDialog
            ):
                # "The file already exists. Do you want to replace it?": yes, it was chosen.
                QTimer.singleShot(0, lambda: _press(watched, QMessageBox.StandardButton.Yes))
        return False

    def _answer(self, dialog: QFileDialog) -> None:
        if not dialog.isVisible():
            return
        edit = dialog.findChild(QLineEdit, "fileNameEdit")
        self.seen.append(
            Seen(
                title=dialog.windowTitle(),
                folder=dialog.directory().absolutePath(),
                suggested=edit.text() if edit is not None else "",
                saving=dialog.acceptMode() == QFileDialog.AcceptMode.AcceptSave,
                widget_dialog=edit is not None,
            )
        )
        if not self._answers:
            self.unanswered += 1
            dialog.reject()  # nothing queued: a person closing a dialog they did not expect
            return
        answer = self._answers.popleft()
        buttons = dialog.findChild(QDialogButtonBox, "buttonBox")
        assert edit is not None and buttons is not None, "not Qt's widget file dialog"
        if answer == [CANCEL]:
            buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
            return
        if len(answer) == 1:
            edit.setText(answer[0])
        else:  # several files: the dialog's own quoted list, in their folder
            dialog.setDirectory(str(Path(answer[0]).parent))
            edit.setText(" ".join(f'"{Path(path).name}"' for path in answer))
        accept = buttons.button(QDialogButtonBox.StandardButton.Open) or buttons.button(
            QDialogButtonBox.StandardButton.Save
        )
        assert accept is not None
        accept.click()


def _press(box: QMessageBox, which: QMessageBox.StandardButton) -> None:
    button = box.button(which)
    if button is not None and box.isVisible():
        button.click()
