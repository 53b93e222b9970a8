"""`python -m app issue-run FILE --out DIR`: issue a whole pay run from the terminal.

    python -m app issue-run payrun.csv --out OUT [--pdf-dir DIR] [--schema S] [--batch-size N]
        [--mapping MAPPING.json] [--combined-pdf PDF]
        (--demo | --service-url URL --client-id ID [--client-secret S] [--encryption-key K]
                  [--key-version KV] [--auth-url U] [--issuer-url U] [--scan-base U]
                  [--tls-fingerprint SHA256])
    python -m app issue-run export.xlsx --suggest-mapping > MAPPING.json

Every payslip registered is written to the issuer's ledger (app.issuer.ledger); a run whose rows
were issued before, into another folder, stops before registering anything and says when and
where, unless --skip-issued (leave them out) or --issue-again (issue them a second time, after
revoking the earlier ones) is given.

A payroll system's own export (CSV or XLSX, its own headers) is read through a mapping file
(PROTOCOL §12); --suggest-mapping prints a guessed one and needs neither --out nor a service.

Secrets are better passed in the environment than on the command line (other users can see a
process's arguments): PAYSLIP_CLIENT_SECRET and PAYSLIP_ENCRYPTION_KEY are read when the options
are absent. Progress goes to stderr (one line per batch, or a live line on a terminal); the
summary to stdout. Exit codes: 0 every row registered; 1 some rows rejected or refused (see
results.csv); 2 the run could not start (bad options, unreadable file, output folder unwritable);
3 the run stopped part way (network, credentials) and can be resumed with the same --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pydantic import SecretStr

from app.api.client import ApiClient
from app.api.fail_fast import issuer_client
from app.api.pinning import normalize_fingerprint, pinned_options
from app.issuer.export.mapping import ExportMapping, load_mapping
from app.issuer.journal import JournalError
from app.issuer.ledger import AlreadyIssued, Ledger
from app.issuer.progress import Progress
from app.issuer.records import IssuerKey
from app.issuer.run.results import MAX_BATCH, RunInterrupted, RunSettings, RunSummary
from app.issuer.run.rows import PayrunFileError
from app.issuer.run.runner import PayRun
from app.output.files import OutputError
from service.composition.settings import read_settings
from service.hosting.network_address import loopback_warning
from service.protocol.schemas import PAYSLIP_SCHEMAS
from service.protocol.sealing import EncryptionKeyError, decode_key

EXIT_OK, EXIT_ROWS, EXIT_START, EXIT_STOPPED = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app issue-run",
        description="Register a pay run and write one badge per payslip.",
    )
    parser.add_argument("file", type=Path, help="the pay run: .csv, .xlsx, .json or .jsonl")
    parser.add_argument("--out", type=Path, help="output folder (resumable)")
    parser.add_argument("--pdf-dir", type=Path, help="folder of the employees' payslip PDFs")
    parser.add_argument(
        "--combined-pdf", type=Path, help="one PDF with every employee's payslip, to split"
    )
    parser.add_argument("--mapping", type=Path, help="MAPPING.json for a payroll export")
    parser.add_argument(
        "--suggest-mapping",
        action="store_true",
        help="print a mapping guessed from FILE's headers and exit",
    )
    parser.add_argument("--schema", choices=sorted(PAYSLIP_SCHEMAS), help="default schema")
    parser.add_argument("--batch-size", type=int, default=MAX_BATCH, help="1 to 1000")
    parser.add_argument("--workers", type=int, help="badge worker processes (default: CPUs)")
    parser.add_argument("--demo", action="store_true", help="use a temporary demo service")
    parser.add_argument("--service-url", help="the service's base URL")
    parser.add_argument("--auth-url", help="the token endpoint's base URL, when elsewhere")
    parser.add_argument("--issuer-url", help="the Issuer API's base URL, when elsewhere")
    parser.add_argument("--scan-base", help="the verifier's public URL badges point to")
    parser.add_argument(
        "--tls-fingerprint",
        metavar="SHA256",
        help="an office service's certificate fingerprint, as Admin shows it: that certificate "
        "is accepted and no other (by --auth-url and --issuer-url too)",
    )
    parser.add_argument("--client-id", help="the issuer client's id")
    parser.add_argument("--client-secret", help="or PAYSLIP_CLIENT_SECRET")
    parser.add_argument("--encryption-key", help="base64url, or PAYSLIP_ENCRYPTION_KEY")
    parser.add_argument("--key-version", help="pin records to this key version")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--skip-issued", action="store_true", help="leave out rows issued before (the ledger)"
    )
    again.add_argument(
        "--issue-again",
        action="store_true",
        help="issue rows issued before a second time, on purpose",
    )
    return parser


class _Printer:
    """Terminal progress: a live line on a TTY, else one line per batch (logs stay readable)."""

    def __init__(self, stream: TextIO, quiet: bool) -> None:
        self.stream = stream
        self.quiet = quiet
        self.live = stream.isatty()
        self._last = ""

    def progress(self, progress: Progress) -> None:
        if self.quiet or not self.live:
            return
        total = f"/{progress.total}" if progress.total else ""
        line = (
            f"\r{progress.rows}{total} rows  {progress.registered} registered  "
            f"{progress.rejected} rejected  {progress.errors} refused  [{progress.phase}]"
        )
        if line != self._last:
            self.stream.write(line.ljust(78))
            self.stream.flush()
            self._last = line

    def batch(self, number: int, progress: Progress) -> None:
        if self.quiet:
            return
        if self.live:
            self.stream.write("\n")
        self.stream.write(f"batch {number} registered ({progress.batches} so far)\n")
        self.stream.flush()

    def done(self) -> None:
        if self.live and not self.quiet and self._last:
            self.stream.write("\n")
            self.stream.flush()


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value() if value is not None else ""


def _fail(message: str, code: int = EXIT_START) -> int:
    print(f"issue-run: {message}", file=sys.stderr)
    return code


def _suggest(args: argparse.Namespace) -> int:
    from app.issuer.export.suggest import suggest_for_file

    sheet = None
    if args.mapping is not None:
        try:
            sheet = load_mapping(args.mapping).sheet
        except PayrunFileError as exc:
            return _fail(str(exc))
    try:
        mapping = suggest_for_file(args.file, sheet)
    except PayrunFileError as exc:
        return _fail(str(exc))
    print(json.dumps(mapping, indent=2, ensure_ascii=False))
    return EXIT_OK


class _CannotStart(Exception):
    """The run cannot start (exit 2): the message is the one line the operator reads."""


def _checked_options(args: argparse.Namespace) -> ExportMapping | None:
    """The mapping to read the file with (None: today's layout), once every option is checked,
    in a fixed order, before anything is started or contacted; the first mistake is raised."""
    if args.out is None:
        raise _CannotStart("--out is required (the output folder)")
    mapping = None
    if args.mapping is not None:
        try:
            mapping = load_mapping(args.mapping)
        except PayrunFileError as exc:
            raise _CannotStart(str(exc)) from None
    if args.combined_pdf is not None:
        if args.pdf_dir is not None:
            raise _CannotStart("give either --pdf-dir or --combined-pdf, not both")
        if not args.combined_pdf.is_file():
            raise _CannotStart(f"--combined-pdf {args.combined_pdf} is not a file")
    if not 1 <= args.batch_size <= MAX_BATCH:
        raise _CannotStart(f"--batch-size must be 1 to {MAX_BATCH}")
    if not args.file.is_file():  # named as given, so the person sees which path was wrong
        what = "is a folder, not a pay-run file" if args.file.is_dir() else "does not exist"
        raise _CannotStart(f"{args.file} {what}")
    if args.pdf_dir is not None and not args.pdf_dir.is_dir():
        raise _CannotStart(f"--pdf-dir {args.pdf_dir} is not a folder")
    return mapping


@dataclass(frozen=True)
class _Service:
    """Where the run registers its records, and with which key and badge links."""

    client: ApiClient
    key: IssuerKey
    scan_base: str
    client_id: str


def _demo_service(args: argparse.Namespace, stack: ExitStack) -> _Service:
    """A temporary demo service, stopped when `stack` closes (its records go with it)."""
    from service.hosting.server import start_demo

    running = start_demo()
    stack.callback(running.stop)
    assert running.demo is not None
    info = running.demo.issuer.wire()
    client = issuer_client(running.url, info["client_id"], info["client_secret"], deadline=60.0)
    service = _Service(
        client,
        IssuerKey.from_info(info),
        args.scan_base or running.config.scan_base,
        info["client_id"],
    )
    print(
        "issue-run: using a temporary demo service; its records vanish when this command ends",
        file=sys.stderr,
    )
    return service


def _remote_service(args: argparse.Namespace) -> _Service:
    """The service named by the options, its secret and key from the options or else the
    environment (other users can see a process's arguments)."""
    env = read_settings()
    secret = args.client_secret or _secret(env.client_secret)
    key_text = args.encryption_key or _secret(env.encryption_key)
    if not (args.service_url and args.client_id and secret and key_text):
        raise _CannotStart(
            "give --demo, or --service-url, --client-id, a client secret and an "
            "encryption key (options or PAYSLIP_CLIENT_SECRET / PAYSLIP_ENCRYPTION_KEY)"
        )
    try:
        key = IssuerKey(decode_key(key_text), args.key_version)
    except (EncryptionKeyError, UnicodeEncodeError):
        raise _CannotStart("the encryption key is not 32 bytes of base64url text") from None
    fingerprint = ""
    if args.tls_fingerprint:
        fingerprint = normalize_fingerprint(args.tls_fingerprint) or ""
        if not fingerprint:
            raise _CannotStart(
                "--tls-fingerprint is not a SHA-256 fingerprint (64 hex digits, as Admin shows it)"
            )
    issuer_url = args.issuer_url or args.service_url
    client = issuer_client(
        issuer_url,
        args.client_id,
        secret,
        auth_url=args.auth_url,
        deadline=60.0,
        **pinned_options(fingerprint),
    )
    return _Service(client, key, args.scan_base or args.service_url, args.client_id)


def _run(args: argparse.Namespace, mapping: ExportMapping | None, service: _Service) -> int:
    """Run the pay run against `service` with progress on stderr and the summary on stdout."""
    warning = loopback_warning(service.scan_base, "the badges' links", "--scan-base")
    if warning:
        print(f"issue-run: {warning}", file=sys.stderr)
    settings = RunSettings(
        source=args.file,
        out_dir=args.out,
        pdf_dir=args.pdf_dir,
        default_schema=args.schema,
        batch_size=args.batch_size,
        workers=args.workers,
        mapping=mapping,
        combined_pdf=args.combined_pdf,
        already_issued="skip" if args.skip_issued else "again" if args.issue_again else "stop",
    )
    printer = _Printer(sys.stderr, args.quiet)
    run = PayRun(
        service.client,
        service.key,
        service.scan_base,
        settings,
        on_progress=printer.progress,
        on_batch_registered=printer.batch,
        ledger=Ledger.for_issuer(service.client_id),
    )
    try:
        summary = run.run()
    except RunInterrupted as exc:
        printer.done()
        return _fail(str(exc), EXIT_STOPPED)
    except AlreadyIssued as exc:
        printer.done()
        return _fail(
            f"{exc}; nothing was registered. Give --skip-issued to leave them out, or "
            "--issue-again to issue them a second time (revoke the earlier ones first)"
        )
    except (PayrunFileError, OutputError, JournalError) as exc:
        printer.done()
        return _fail(str(exc))
    finally:
        service.client.close()
    printer.done()
    _print_summary(summary)
    return EXIT_OK if summary.clean else EXIT_ROWS


def _print_summary(summary: RunSummary) -> None:
    p = summary.progress
    resumed = " (resumed an interrupted run)" if summary.resumed else ""
    print(
        f"{p.rows} rows: {p.created} created, {p.duplicate} already registered, "
        f"{p.errors} refused by the service, {p.rejected} rejected before sending"
        f"{f', {p.skipped} skipped (issued before)' if p.skipped else ''}"
        f"{resumed}; {p.rows / summary.seconds if summary.seconds else 0:.0f} rows/s"
    )
    for note in summary.notes:
        print(note)
    print(f"results: {summary.results_csv}")


def main(argv: Sequence[str]) -> int:
    """Run `issue-run` with `argv` (the words after it); the exit code is returned."""
    args = _parser().parse_args(list(argv))
    if args.suggest_mapping:
        return _suggest(args)
    try:
        mapping = _checked_options(args)
    except _CannotStart as exc:
        return _fail(str(exc))
    with ExitStack() as stack:  # a demo service is stopped after the last message is written
        try:
            service = _demo_service(args, stack) if args.demo else _remote_service(args)
            return _run(args, mapping, service)
        except _CannotStart as exc:
            return _fail(str(exc))
        except KeyboardInterrupt:
            return _fail("interrupted; run again with the same --out to resume", EXIT_STOPPED)
