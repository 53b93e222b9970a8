"""A kiosk that lasts: widgets alive, memory and speed over thousands of checks in a row.

Run: ``python bench/kiosk_soak_bench.py [--checks 2000] [--window 50]``.

The real kiosk :class:`VerifyScreen` (offscreen, 1366x768) over the real embedded demo service:
for each check a demo code is pasted into the code field, Enter, the verdict is awaited, then
Next. Samples rotate (verified, revoked, other countries) so every kind of card is built and
cleared. Printed, each against its baseline measured in the same run (after the first window of
checks, once caches and the first card exist):

- widgets alive at the end / after the first check (target 1.00: nothing accumulates);
- RSS growth per check in MB over the checks after the first window (target <= 0.05);
- mean time of the last window of checks / checks 2 to window+1 (target <= 1.20).

Qt is driven with ``processEvents`` between checks, not a running event loop: ``deleteLater``
alone never runs there, so this is the harder case for leaks.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_IP", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_CLIENT", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_TOKEN_IP", "off")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication

from app.settings.desk import SecretStore, Settings
from app.shell.context import start_demo_context
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.tasks import TaskRunner

RSS_TARGET_MB = 0.05
SPEED_TARGET = 1.20


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_until(condition: object, timeout_s: float) -> bool:
    """Drive Qt with ``processEvents`` (no running event loop, as the issue's measurement did):
    the harder case, since ``deleteLater`` alone never runs there."""
    deadline = time.perf_counter() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.perf_counter() > deadline:
            return False
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    return True


def one_check(screen: VerifyScreen, payload: str, shown: list[str]) -> float:
    """Paste, Enter, wait for the verdict, Next; seconds taken."""
    started = time.perf_counter()
    count = len(shown)
    screen.code_field.setText(payload)
    screen.submit_text()
    if not wait_until(lambda: len(shown) > count, 15.0):
        raise SystemExit("no verdict within 15 s")
    screen.card.banner.next_button.click()
    QApplication.processEvents()
    return time.perf_counter() - started


def bare_verify_ms(context: object, payloads: list[str], count: int = 20) -> float:
    """The baseline: the same verifications without the screen (the service's own trend)."""
    from app.inputs.reading import InputReading
    from app.verify.flow import verify_reading

    started = time.perf_counter()
    for index in range(count):
        reading = InputReading(kind="text", payloads=[payloads[index % len(payloads)]])
        verify_reading(context.verifier, reading)  # type: ignore[attr-defined]
    return (time.perf_counter() - started) * 1000 / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--window", type=int, default=50)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as config:
        os.environ["PAYSLIP_CONFIG_DIR"] = config
        context = start_demo_context(Settings(), SecretStore(Path(config), use_keyring=False))
        assert context.demo is not None
        context.settings.camera = str(Path(config) / "no-camera.avi")
        payloads = [s.payload for s in context.demo.samples]
        tasks = TaskRunner()
        screen = VerifyScreen(context, tasks, kiosk=True, start_camera=False)
        screen.resize(1366, 768)
        screen.show()
        shown: list[str] = []
        screen.result_shown.connect(shown.append)
        times: list[float] = []
        bare_first = bare_verify_ms(context, payloads)
        widgets_first = widgets_base = rss_base = 0.0
        for index in range(args.checks):
            times.append(one_check(screen, payloads[index % len(payloads)], shown))
            if index == 0:
                widgets_first = len(app.allWidgets())
            if index + 1 == args.window:
                gc.collect()
                widgets_base = len(app.allWidgets())
                rss_base = rss_mb()
        gc.collect()
        QApplication.processEvents()
        widgets_end = len(app.allWidgets())
        rss_end = rss_mb()
        bare_last = bare_verify_ms(context, payloads)
        first = sum(times[1 : args.window + 1]) / args.window  # the very first one warms up
        last = sum(times[-args.window :]) / args.window
        later = max(1, args.checks - args.window)
        per_check = (rss_end - rss_base) / later
        screen.shutdown()
        tasks.wait(10000)
        screen.close()
        context.close()
    print(f"checks: {args.checks} (verdicts shown {len(shown)}), window {args.window}")
    print(
        f"widgets alive: {widgets_end} at the end, {int(widgets_first)} after the first check, "
        f"{int(widgets_base)} after {args.window}: ratio {widgets_end / widgets_first:.2f} "
        "(target 1.00)"
    )
    print(
        f"RSS: {rss_base:.1f} MB -> {rss_end:.1f} MB: {per_check:.4f} MB per check "
        f"(target <= {RSS_TARGET_MB})"
    )
    print(
        f"time per check: checks 2-{args.window + 1} {first * 1000:.1f} ms, last {args.window} "
        f"{last * 1000:.1f} ms: ratio {last / first:.2f} (target <= {SPEED_TARGET:.2f})"
    )
    print(
        f"baseline, the same verify call without the screen: {bare_first:.1f} ms before, "
        f"{bare_last:.1f} ms after: ratio {bare_last / bare_first:.2f}"
    )
    ok = (
        widgets_end <= widgets_first and per_check <= RSS_TARGET_MB and last / first <= SPEED_TARGET
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
