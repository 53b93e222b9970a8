"""`python -m app`: the GUI (optionally --kiosk or --demo), or a headless command.

This module sets the process up (logging, freezing support) and chooses: a command goes to
:mod:`app.commands` (:func:`app.commands.run.run_command`), anything else is the window's options
(:mod:`app.ui.start`) or the self-test. The GUI is imported only when it is chosen.

python -m app [--kiosk] [--demo]          the window, with the embedded service
python -m app --self-test                 headless smoke test; exit 0 when it passes
python -m app --version
python -m app verify INPUT [INPUT ...] [--json] [--service-url URL] [--auth-url URL]
                         [--client-id ID] [--client-secret SECRET] [--receipt FILE]
                         [--applicant-name NAME] [--max-age-days N]   (docs/applicant.md)
python -m app receipt check FILE [--jwks FILE_OR_URL]                 (docs/receipts.md)
"""

from __future__ import annotations

import argparse
import difflib
import logging
import multiprocessing
import os
import sys
from collections.abc import Sequence
from logging.handlers import RotatingFileHandler
from pathlib import Path

import platformdirs

from app.commands.run import COMMANDS, run_command
from app.shell.version import __version__
from service.composition.settings import SettingsError, read_settings
from service.files.private import private_dir


def _gui_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<11} {line}" for name, line in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="python -m app",
        usage="%(prog)s [-h] [--kiosk] [--demo] [--self-test] [--version]\n"
        "       %(prog)s COMMAND ...",
        description="Payslip Verify: without a command, the window (the desk app).",
        epilog=f"commands (python -m app COMMAND --help):\n{commands}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kiosk", action="store_true", help="full screen, verify screen only")
    parser.add_argument("--demo", action="store_true", help="a temporary demo service and data")
    parser.add_argument("--self-test", action="store_true", help="headless smoke test")
    parser.add_argument("--version", action="version", version=f"Payslip Verify {__version__}")
    return parser


def _setup_logging() -> None:
    """Codes, paths and request ids only: no logger here is ever given personal data. The file
    matters for the windowed bundle, which has no console."""
    fmt = "%(asctime)s %(levelname)s %(name)s %(message)s"
    logging.basicConfig(level=logging.WARNING, format=fmt)
    for console in logging.getLogger().handlers:
        console.setLevel(logging.WARNING)  # the console shows problems; the file keeps INFO too
    override = read_settings().log_dir
    folder = override or Path(platformdirs.user_log_dir("payslip-verify", appauthor=False))
    try:
        private_dir(folder)  # 0700: the log names files and folders of this desk
        handler = RotatingFileHandler(folder / "app.log", maxBytes=1_000_000, backupCount=3)
    except OSError:
        return
    handler.setFormatter(logging.Formatter(fmt))
    handler.setLevel(logging.INFO)
    app_log = logging.getLogger("app")
    app_log.addHandler(handler)
    app_log.setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Every command ends in an exit code and at most one plain line on stderr, never a
    traceback; unforeseen failures leave theirs in the log folder that line names."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except SettingsError as exc:  # a PAYSLIP_* variable: the log may not be set up yet
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the one place that turns failures into a line
        from service.cli.errors import operator_message

        logging.getLogger("app").error("command failed: %s", type(exc).__name__)
        print(f"error: {operator_message(exc)}", file=sys.stderr)
        return 2


def _main(argv: Sequence[str] | None = None) -> int:
    multiprocessing.freeze_support()  # pay runs render badges in worker processes, also frozen
    # OpenCV warns on stderr at every camera retry (every 3 s without a camera); the screen says
    # it once, in words.
    os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")
    args_list = list(sys.argv[1:] if argv is None else argv)
    _setup_logging()
    if args_list and args_list[0] in COMMANDS:
        return run_command(args_list[0], args_list[1:])
    parser = _gui_parser()
    if args_list and not args_list[0].startswith("-"):  # a command this app does not have
        close = difflib.get_close_matches(args_list[0], list(COMMANDS), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        parser.error(f"unknown command {args_list[0]!r}{hint} (choose from {', '.join(COMMANDS)})")
    args = parser.parse_args(args_list)
    if args.self_test:
        from app.ui.self_test import run as run_self_test

        return run_self_test()
    from app.ui.start import run_gui

    return run_gui(kiosk=args.kiosk, demo=args.demo)


if __name__ == "__main__":
    sys.exit(main())
