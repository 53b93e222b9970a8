"""The self-test's file-dialog check: open Qt's own file dialog with the app's filters, cancel it.

Qt's widget file dialog (what a Linux desktop without a GTK theme and the bundle show) crashed
the app with its accessible-names filter installed (issue 35); a bundle that drops a module the
dialog needs would fail the same way, and only where a person presses *Open PDF...*. So the
bundle's ``--self-test`` opens that dialog the way the app does and cancels it.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QWidget

from app.ui import accessible_names


def file_dialog_opens() -> bool:
    """True when Qt's own open dialog shows its widgets and is cancelled without a crash."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication([])
    accessible_names.install()
    window = QWidget()  # the app's dialogs have a window behind them: the crash needed one
    window.setWindowTitle("Payslip Verify self-test")
    window.show()
    shown: list[bool] = []

    def cancel() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog):
            shown.append(dialog.findChild(QLineEdit, "fileNameEdit") is not None)
            dialog.reject()

    QTimer.singleShot(0, cancel)
    # As the app opens its dialogs: the static call, Qt's own (non-native) dialog.
    chosen, _ = QFileDialog.getOpenFileName(
        window,
        "Self-test: open a payslip PDF",
        "",
        "PDF (*.pdf)",
        options=QFileDialog.Option.DontUseNativeDialog,
    )
    cancelled = chosen == ""
    window.close()
    window.deleteLater()
    app.processEvents()
    return cancelled and shown == [True]
