"""Run by test_scaled_screens in a child process with QT_SCALE_FACTOR=1.5 and an offscreen
screen of 1366x768 device pixels (910x512 logical): the real scale, which a test process that
already has a QApplication cannot switch to. Prints one JSON object of sizes, in logical pixels.

Not a test module itself (no `test_` prefix): the child builds the demo context, the main window
at the screen's size, an applicant set of four (one of them revoked and one another person's),
and the Pair a phone dialog, and reports what fits.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication


def _settle(app: QApplication, until: Any = None, seconds: float = 30.0) -> None:
    """Process events until `until()` holds (the demo answers over loopback), then a little."""
    end = time.monotonic() + seconds
    while until is not None and not until() and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)
    for _ in range(5):
        app.processEvents()


def main() -> int:
    import os

    config = Path(tempfile.mkdtemp()) / "config"
    os.environ["PAYSLIP_CONFIG_DIR"] = str(config)
    os.environ["PAYSLIP_NO_KEYRING"] = "1"
    app = QApplication(sys.argv)
    from app.settings.desk import SecretStore, Settings
    from app.shell.context import start_demo_context
    from app.ui.admin.pair_dialog import PairDialog
    from app.ui.main_window import MainWindow
    from testbed.applicant_payslips import register_fortnights

    context = start_demo_context(Settings(), SecretStore(config, use_keyring=False))
    context.settings.camera = "no-camera-here.avi"
    report: dict[str, Any] = {}
    shots = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    """Where to save what the screen shows (the test's folder), if given."""
    try:
        screen = app.primaryScreen()
        room = screen.availableGeometry()
        report["screen"] = [room.width(), room.height()]
        report["ratio"] = screen.devicePixelRatio()
        window = MainWindow(context)
        window.resize(room.size())
        window.show()
        _settle(app)
        report["window_before"] = window.width()
        assert context.issuer is not None and context.issuer_info is not None
        key = context.issuer_info.encryption_key
        mine = register_fortnights(context.issuer, key, 2)
        other = register_fortnights(context.issuer, key, 1, name="John Citizen")
        revoked = register_fortnights(context.issuer, key, 1)
        context.issuer.revoke(revoked[0].reference)
        panel = window.verify_screen.applicant
        assert panel is not None and panel.open_button_on_screen is not None
        panel.open_button_on_screen.click()
        for payslip in [*mine, *other, *revoked]:
            panel.add_code(payslip.sealed.payload)
        _settle(app, lambda: panel.pending == 0 and panel.check is not None)
        report["verdict"] = panel.check.headline if panel.check else None
        report["window_on_applicant"] = window.width()
        if shots is not None:
            window.grab().save(str(shots / "applicant-1366x768-at-150.png"))
        report["least_on_applicant"] = window.minimumSizeHint().width()
        panel.back_button.click()
        _settle(app)
        report["window_back"] = window.width()
        assert context.admin is not None
        dialog = PairDialog(context.admin, window.tasks, context.admin.admin_list(), None, window)
        dialog.show()
        _settle(app)
        report["pair_dialog"] = [dialog.width(), dialog.height()]
        if shots is not None:
            dialog.grab().save(str(shots / "pair-dialog-1366x768-at-150.png"))
        qr = dialog.qr
        report["pair_qr_whole"] = qr.visibleRegion().boundingRect().size() == qr.size()
        dialog.close()
        window.close()
        window.tasks.wait()
    finally:
        context.close()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
