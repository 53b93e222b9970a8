"""`python -m app verify INPUT`: the GUI's reading and verification pipeline, headless.

Exit status: 0 verified, 1 not verified (revoked, or a PDF whose metadata and QR name different
records), 2 on an error (its code on stderr).
"""

from __future__ import annotations

import json
import os
import sys
from argparse import Namespace
from typing import TextIO

from app.api_client import ApiClient
from app.context import AppContext, start_context
from app.inputs.reading import InputError, read_input
from app.presentation import employee_lines, error_message, summary_lines
from app.settings import SecretStore, Settings
from app.verify_flow import Outcome, verify_reading


def _client_from_args(
    args: Namespace, settings: Settings, secrets: SecretStore
) -> ApiClient | None:
    if not args.service_url:
        return None
    client_id = args.client_id or os.environ.get("PAYSLIP_CLIENT_ID") or settings.client_id
    secret = (
        args.client_secret
        or os.environ.get("PAYSLIP_CLIENT_SECRET")
        or secrets.get(f"remote:{client_id}")
        or ""
    )
    return ApiClient(
        args.auth_url or args.service_url,
        client_id,
        secret,
        verifier_url=args.service_url,
        deadline=30.0,
    )


def exit_status(outcome: Outcome) -> int:
    if outcome.disagreement:
        return 1
    result = outcome.result
    if result is not None:
        return 0 if result.get("verified") else 1
    return 2


def print_summary(outcome: Outcome, out: TextIO) -> None:
    print(f"{outcome.headline}: {outcome.explanation}", file=out)
    for attempt in outcome.attempts:
        if attempt.result is None:
            continue
        print(f"\nReference  {attempt.result.get('service_reference')}", file=out)
        for label, value in summary_lines(attempt.result):
            print(f"{label:<13}{value}", file=out)
        for label, value in employee_lines(attempt.result.get("employee", {}), reveal=False):
            print(f"{label:<13}{value}", file=out)


def run(args: Namespace) -> int:
    text = sys.stdin.read() if args.input == "-" else args.input
    try:
        reading = read_input(text)
    except InputError as exc:
        print(f"INPUT_UNREADABLE: {exc}", file=sys.stderr)
        return 2
    settings = Settings.load()
    secrets = SecretStore()
    client = _client_from_args(args, settings, secrets)
    context: AppContext | None = None
    try:
        if client is None:
            context = start_context(settings, secrets, demo=False)
            client = context.verifier
        outcome = verify_reading(client, reading)
    finally:
        if context is not None:
            context.close()
        elif client is not None:
            client.close()
    if args.json:
        print(json.dumps(outcome.as_json(), indent=2, ensure_ascii=False))
    else:
        print_summary(outcome, sys.stdout)
    status = exit_status(outcome)
    if status == 2:
        code = outcome.code or "NO_CODE_FOUND"
        rid = f" (request id {outcome.request_id})" if outcome.request_id else ""
        print(f"{code}: {error_message(code)}{rid}", file=sys.stderr)
    return status
