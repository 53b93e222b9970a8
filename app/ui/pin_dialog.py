"""The operator PIN that locks a kiosk: its settings, leaving full screen and closing it.

A kiosk stands where the public can reach it; its settings hold the service address and the
desk's credentials, and a closed kiosk leaves a desktop open to whoever stands there. So a kiosk
never runs unlocked: the first kiosk start asks the operator to choose a PIN (or takes one from
``PAYSLIP_KIOSK_PIN``, or a ``kiosk_pin_hash`` already in settings.json, for fleet set-up), and
refuses to start without one.
The PIN is checked with :meth:`Settings.check_pin` (scrypt, memory-hard: app.settings.pin_hash;
constant time compare); a right PIN stored under the older PBKDF2 is re-hashed and saved. After a
few wrong tries the dialog locks for a while, so guessing a 4-digit PIN at the desk takes hours
instead of minutes. The count lives in a :class:`PinGuard` that outlives one dialog, so closing and
reopening the dialog does not reset it. The PIN itself is never logged or kept.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QWidget,
)

from app.settings.desk import Settings
from app.ui.widgets.dialog_parts import dialog_buttons, error_line, prompt_column
from service.composition.settings import read_settings

PIN_ENV = "PAYSLIP_KIOSK_PIN"
MIN_PIN, MAX_PIN = 4, 12

log = logging.getLogger("app.pin")

MAX_TRIES = 5
LOCK_SECONDS = 60


class PinGuard:
    """Checks PINs and counts wrong ones across dialogs; locks after ``MAX_TRIES`` in a row.

    ``clock`` is injectable so tests can run the lockout without waiting a minute.
    """

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        save: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._save = save or settings.save
        self.failures = 0
        self.locked_until = 0.0

    @property
    def locked_for(self) -> float:
        """Seconds until PINs are accepted again (0 when not locked)."""
        return max(0.0, self.locked_until - self._clock())

    def check(self, pin: str) -> Literal["ok", "wrong", "locked"]:
        if self.locked_for > 0:
            return "locked"
        stored = self.settings.kiosk_pin_hash
        if self.settings.check_pin(pin):
            self.failures = 0
            if self.settings.kiosk_pin_hash != stored:  # upgraded to today's KDF: keep it
                try:
                    self._save()
                except OSError as exc:
                    log.warning("could not save the re-hashed PIN: %s", type(exc).__name__)
            return "ok"
        self.failures += 1
        log.info("wrong operator PIN (%d of %d)", self.failures, MAX_TRIES)
        if self.failures >= MAX_TRIES:
            self.failures = 0
            self.locked_until = self._clock() + LOCK_SECONDS
            return "locked"
        return "wrong"


class PinDialog(QDialog):
    """Asks for the operator PIN; ``exec()`` returns Accepted only for the right PIN.

    No signals of its own beyond QDialog's ``accepted``/``rejected``/``finished``.
    """

    def __init__(
        self,
        guard: PinGuard,
        parent: QWidget | None = None,
        prompt_text: str = "Enter the operator PIN to open the settings.",
    ) -> None:
        super().__init__(parent)
        self.guard = guard
        # No minimise or maximise button: a kiosk's PIN prompt must not be put away either.
        self.setWindowFlags(
            Qt.WindowType.Dialog
            | Qt.WindowType.CustomizeWindowHint
            | Qt.WindowType.WindowTitleHint
            | Qt.WindowType.WindowCloseButtonHint
        )
        layout = prompt_column(self, "Operator PIN", 360, prompt_text)
        self.field = QLineEdit()
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        self.field.setAccessibleName("Operator PIN")
        self.field.setMaxLength(32)
        self.field.setInputMethodHints(
            Qt.InputMethodHint.ImhDigitsOnly | Qt.InputMethodHint.ImhSensitiveData
        )
        layout.addWidget(self.field)
        self.message = error_line("pinMessage")
        layout.addWidget(self.message)
        self.buttons = dialog_buttons(self, QDialogButtonBox.StandardButton.Ok, self.try_pin)
        layout.addWidget(self.buttons)
        self._unlock_timer = QTimer(self)
        self._unlock_timer.setSingleShot(True)
        self._unlock_timer.timeout.connect(self._unlock)
        if guard.locked_for > 0:
            self._lock()
        self.field.setFocus()

    def try_pin(self) -> None:
        """Accept on the right PIN; say how many tries are left, or lock."""
        pin = self.field.text()
        self.field.clear()
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)  # about a second of scrypt
        try:
            verdict = self.guard.check(pin)
        finally:
            QApplication.restoreOverrideCursor()
        if verdict == "ok":
            self.accept()
        elif verdict == "locked":
            self._lock()
        else:
            left = MAX_TRIES - self.guard.failures
            self.message.setText(f"Wrong PIN. {left} {'try' if left == 1 else 'tries'} left.")

    def _lock(self) -> None:
        wait = max(1, round(self.guard.locked_for))
        self.message.setText(f"Too many wrong PINs. Try again in {wait} s.")
        self.field.setEnabled(False)
        self._unlock_timer.start(wait * 1000)

    def _unlock(self) -> None:
        self.field.setEnabled(True)
        self.message.setText("")
        self.field.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.try_pin()
            return
        super().keyPressEvent(event)


def ask_pin(
    guard: PinGuard,
    parent: QWidget | None = None,
    prompt: str = "Enter the operator PIN to open the settings.",
    *,
    required: bool = False,
) -> bool:
    """True when the operator entered the right PIN, or when no PIN is set and ``required`` is
    False (a desk's first setup). A locked kiosk passes ``required``: no PIN, no way through."""
    if not guard.settings.kiosk_pin_hash:
        return not required
    dialog = PinDialog(guard, parent, prompt)
    try:
        return dialog.exec() == QDialog.DialogCode.Accepted
    finally:
        dialog.deleteLater()


def pin_problem(pin: str, again: str) -> str | None:
    """Why a new PIN cannot be used, or None."""
    if not (pin.isdigit() and MIN_PIN <= len(pin) <= MAX_PIN):
        return f"The PIN must be {MIN_PIN} to {MAX_PIN} digits."
    if pin != again:
        return "The two PINs differ."
    return None


class SetPinDialog(QDialog):
    """The first kiosk start: choose the operator PIN (twice). ``exec()`` is Accepted only with a
    usable PIN, which is then in :attr:`settings` (hashed; the caller saves)."""

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        layout = prompt_column(
            self,
            "Lock this kiosk",
            420,
            "Choose an operator PIN. It is needed to change the settings, to leave full screen "
            "and to close the kiosk. The kiosk does not start without one.",
        )
        self.field = QLineEdit()
        self.again = QLineEdit()
        for field, name in ((self.field, "New PIN"), (self.again, "Repeat the PIN")):
            field.setEchoMode(QLineEdit.EchoMode.Password)
            field.setPlaceholderText(name)
            field.setAccessibleName(name)
            field.setMaxLength(MAX_PIN)
            layout.addWidget(field)
        self.message = error_line()
        layout.addWidget(self.message)
        layout.addWidget(dialog_buttons(self, QDialogButtonBox.StandardButton.Ok, self.try_set))
        self.field.setFocus()

    def try_set(self) -> None:
        problem = pin_problem(self.field.text(), self.again.text())
        if problem is not None:
            self.message.setText(problem)
            return
        self.settings.set_pin(self.field.text())
        self.field.clear()
        self.again.clear()
        self.accept()


def ensure_kiosk_pin(
    settings: Settings,
    parent: QWidget | None = None,
    *,
    save: Callable[[], None] | None = None,
) -> bool:
    """Make sure the kiosk has an operator PIN before it starts; False means do not start.

    Order: a PIN already in the settings; ``PAYSLIP_KIOSK_PIN`` (fleet set-up; stored hashed,
    the variable can then be dropped); else ask once with :class:`SetPinDialog`.
    """
    store = save or settings.save
    if settings.kiosk_pin_hash:
        return True
    pin = read_settings().kiosk_pin
    from_env = pin.get_secret_value() if pin is not None else ""
    if from_env:
        if pin_problem(from_env, from_env) is not None:
            log.warning("%s is not %d to %d digits; asking instead", PIN_ENV, MIN_PIN, MAX_PIN)
        else:
            settings.set_pin(from_env)
            store()
            return True
    dialog = SetPinDialog(settings, parent)
    try:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return False
    finally:
        dialog.deleteLater()
    store()
    return True
