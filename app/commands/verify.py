"""`python -m app verify INPUT`: the GUI's reading and verification pipeline, headless.

Exit status follows the three verdicts of :mod:`app.verify.verdicts`: 0 VERIFIED, 1 NOT VERIFIED
(revoked, altered or forged, unknown reference, a PDF whose metadata and QR disagree), 2 CANNOT
VERIFY (service unreachable, busy or failing, this desk's credentials refused) or bad input
(no verdict: nothing was sent). Problems are one plain line on stderr, starting with the code.

The service is ``--service-url``, else the remote service in the settings, else this computer's
embedded instance if it already exists with a desk verifier. With none of them it refuses: a new
empty instance would report every genuine badge of another service as unknown (NOT VERIFIED).
"""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from app.api import ApiClient
from app.commands.receipt import save_receipt
from app.document.compare import compared_lines
from app.inputs.reading import InputError, read_input
from app.settings.desk import SecretStore, Settings
from app.shell.context import (
    AppContext,
    desk_options,
    embedded_ready,
    start_embedded_context,
    start_remote_context,
    verifier_client,
)
from app.verify.flow import Outcome, verify_reading
from app.verify.presentation import employee_lines, shows_payslip_data, summary_lines
from app.verify.verdicts import AppOutcome
from service.composition.settings import read_settings
from service.protocol.vocabulary import Verdict

NO_SERVICE = (
    "NO_SERVICE: no verification service is configured; pass --service-url (with --client-id "
    "and --client-secret), or set the service up in the app first"
)


def _client_from_args(
    args: Namespace, settings: Settings, secrets: SecretStore
) -> ApiClient | None:
    if not args.service_url:
        return None
    env = read_settings()
    client_id = args.client_id or env.client_id or settings.client_id
    secret = (
        args.client_secret
        or (env.client_secret.get_secret_value() if env.client_secret else None)
        or secrets.get(f"remote:{client_id}")
        or ""
    )
    # The desk's own service named on the command line: its certificate stays pinned.
    same = args.service_url.rstrip("/") == settings.verifier_url.rstrip("/")
    pinned = desk_options(settings) if same else {}
    return verifier_client(
        args.auth_url or args.service_url, client_id, secret, args.service_url, **pinned
    )


def exit_status(outcome: Outcome) -> int:
    return outcome.exit_status


def print_summary(outcome: Outcome, out: TextIO) -> None:
    print(f"{outcome.headline}: {outcome.explanation} {outcome.instruction}".rstrip(), file=out)
    if outcome.reason == AppOutcome.DOCUMENT_ALTERED and outcome.document is not None:
        # The compared fields, registered and shown, and nothing else of the employee (§13).
        print(f"\n{'':<15}{'Registered':<26}Shown on the page", file=out)
        for label, registered, shown in compared_lines(outcome.document):
            print(f"{label:<15}{registered:<26}{shown}", file=out)
        return
    if not shows_payslip_data(outcome.verdict):
        return  # the one privacy rule: no payslip figures or employee data unless VERIFIED
    if outcome.document_words:
        print(f"\nDocument     {outcome.document_words}", file=out)
    for attempt in outcome.attempts:
        if attempt.result is None:
            continue
        print(f"\nReference  {attempt.result.service_reference}", file=out)
        for label, value in summary_lines(attempt.result):
            print(f"{label:<13}{value}", file=out)
        if outcome.verdict == Verdict.VERIFIED:
            for label, value in employee_lines(attempt.result.employee, reveal=False):
                print(f"{label:<13}{value}", file=out)


@contextmanager
def desk_client(args: Namespace) -> Iterator[ApiClient | None]:
    """The verifier client a headless check uses: the options' service, else the configured one
    (remote, or this computer's embedded instance if it exists); None when there is none. Closed
    (with the embedded instance, if one was started) when the block ends."""
    settings = Settings.load()
    secrets = SecretStore()
    client = _client_from_args(args, settings, secrets)
    context: AppContext | None = None
    try:
        if client is None:
            context = _context(settings, secrets)
            client = None if context is None else context.verifier
        yield client
    finally:
        if context is not None:
            context.close()
        elif client is not None:
            client.close()


def _context(settings: Settings, secrets: SecretStore) -> AppContext | None:
    """The configured service, or None when there is none (never creates an instance)."""
    if settings.mode == "remote" and settings.verifier_url:
        return start_remote_context(settings, secrets)
    if embedded_ready(settings, secrets):
        return start_embedded_context(settings, secrets)
    return None


def run(args: Namespace) -> int:
    text = sys.stdin.read() if args.input == "-" else args.input
    try:
        reading = read_input(text)
    except InputError as exc:
        print(f"INPUT_UNREADABLE: {exc}", file=sys.stderr)
        return 2
    with desk_client(args) as client:
        if client is None:
            print(NO_SERVICE, file=sys.stderr)
            return 2
        outcome = verify_reading(client, reading)
        receipt_problem = (
            save_receipt(client, outcome, args.receipt) if getattr(args, "receipt", None) else None
        )
    if outcome.verdict is None:  # not a payslip code: no verdict, nothing was sent
        print(f"{outcome.reason}: {outcome.explanation}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(outcome.as_json(), indent=2, ensure_ascii=False))
    else:
        print_summary(outcome, sys.stdout)
    status = exit_status(outcome)
    if receipt_problem:
        print(receipt_problem, file=sys.stderr)
        status = max(status, 2)
    if status != 0 and outcome.code:
        rid = f" (request id {outcome.request_id})" if outcome.request_id else ""
        print(f"{outcome.code}: {outcome.explanation}{rid}", file=sys.stderr)
    return status
