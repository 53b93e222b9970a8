"""Starting the GUI: the application object, first-run choice, the friendly crash handler."""

from __future__ import annotations

import logging
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_context
from app.ui.pin_dialog import ensure_kiosk_pin

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow

log = logging.getLogger("app")


def make_excepthook(
    window: MainWindow | None,
) -> Callable[[type[BaseException], BaseException, types.TracebackType | None], None]:
    """Unhandled errors: a friendly (non-blocking) dialog and a log line with the type and request
    id only, never the message, which may quote personal data; then back to the verify screen."""

    def hook(kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
        request_id = getattr(exc, "request_id", None)
        log.error("unhandled %s request_id=%s", kind.__name__, request_id or "-")
        if QApplication.instance() is None:
            return
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Something went wrong",
            "The app hit an unexpected problem and went back to the verify screen."
            + (f"\n\nRequest id for support: {request_id}" if request_id else ""),
            QMessageBox.StandardButton.Ok,
            window,
        )
        box.setObjectName("crashDialog")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        if window is not None:
            window.show_screen("Verify")

    return hook


def run_gui(kiosk: bool = False, demo: bool = False) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Payslip Verify")
    from app.ui import accessible_names

    accessible_names.install()  # every control named for screen readers as it is shown
    settings = Settings.load()
    secrets = SecretStore()
    start_screen = None
    if not demo and not kiosk:
        # First run: the welcome (try the demo, verify, issue, run the service); "Getting
        # started" opens it again, and a demo chosen there applies at the next start.
        from app.ui.welcome import first_run_choice

        if first_run_choice(settings, secrets) is not None:
            start_screen = settings.extra.get("start_screen")
        demo = bool(settings.extra.get("start_demo"))
    if kiosk and not ensure_kiosk_pin(settings):  # a kiosk never runs unlocked
        print("The kiosk needs an operator PIN; it was not started.", file=sys.stderr)
        return 2
    from app.ui.main_window import MainWindow

    context: AppContext = start_context(settings, secrets, demo=demo)
    window = MainWindow(context, kiosk=kiosk)
    sys.excepthook = make_excepthook(window)
    if isinstance(start_screen, str):
        window.show_screen(start_screen)
    window.show()
    from app.ui.quit_signals import QuitOnSignals

    def quit_now() -> None:
        """Ctrl+C or SIGTERM: the operator's quit, as closing the window (a kiosk unlocked)."""
        window.locked = False
        window.close()
        app.quit()

    quitter = QuitOnSignals(quit_now)
    log.info("window open (kiosk=%s, demo=%s): Ctrl+C or SIGTERM quits", kiosk, demo)
    try:
        return int(app.exec())
    finally:
        quitter.close()
        context.close()
