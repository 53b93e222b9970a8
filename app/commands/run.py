"""`python -m app COMMAND ...`: which front end a command name leads to, and the verify command's
options (one input is a single check, several or applicant options one applicant's set).

Each front end is imported only when its command is chosen, so `python -m app --version` and the
GUI start without them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app verify")
    parser.add_argument(
        "input", nargs="+", help="a PDF, an image file, barcode text, or - for stdin"
    )
    # Several inputs, or a name, check one applicant's payslips as a set (PROTOCOL §10).
    parser.add_argument("--applicant-name", help="the applicant's name, to match the payslips")
    parser.add_argument("--max-age-days", type=_days, help="latest payslip at most N days old")
    parser.add_argument("--json", action="store_true", help="print the verification result JSON")
    parser.add_argument("--service-url", help="the verifier base URL (default: embedded service)")
    parser.add_argument("--auth-url", help="the token endpoint's base URL, when elsewhere")
    parser.add_argument("--client-id", help="the verifier client's id (with --service-url)")
    parser.add_argument("--client-secret", help="the verifier client's secret")
    parser.add_argument(
        "--receipt",
        metavar="FILE",
        help="write a signed receipt (JWS) here; with several inputs a folder, one per payslip",
    )
    return parser


def _days(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError("expected a whole number of days, 0 or more")
    return int(text)


COMMANDS = {
    "verify": "check payslips (PDF, image or barcode text) with the service",
    "issue-run": "register a pay run and write one badge per payslip",
    "receipt": "check a signed verification receipt (receipt check FILE)",
    "service": "run or manage the service, as python -m service does",
}
"""The headless commands `_main` hands on, with the one line `--help` shows for each."""


def verify_command(args: Sequence[str]) -> int:
    """`python -m app verify ARGS` once the process is set up: one input is checked alone, several
    (or applicant options) as one applicant's set."""
    from app.commands.applicant import is_applicant_check, run_set
    from app.commands.verify import run as run_verify

    verify_args = verify_parser().parse_args(list(args))
    if is_applicant_check(verify_args):
        return run_set(verify_args)  # --receipt is then a folder: one JWS per document
    verify_args.input = verify_args.input[0]
    return run_verify(verify_args)


def run_command(name: str, args: Sequence[str]) -> int:
    """Run the command ``name`` (a key of :data:`COMMANDS`) with its arguments."""
    if name == "verify":
        return verify_command(args)
    if name == "receipt":
        from app.commands.receipt import main as receipt_main

        return receipt_main(list(args))
    if name == "service":
        from service.cli.main import main as service_main

        return service_main(list(args))
    from app.commands.issue_run import main as issue_run

    return int(issue_run(list(args)))
