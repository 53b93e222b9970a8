"""``python -m app verify A B C [--applicant-name NAME] [--max-age-days N] [--json]
[--receipt DIR]``.

Several inputs, or one with an applicant name, are one applicant check (PROTOCOL §10); one input
without a name stays the single verify of :mod:`app.commands.verify`. The service is chosen
exactly as there, and one client (one token, one connection pool) serves every input.
``--receipt DIR`` writes each document's signed receipt (VERIFIED or NOT VERIFIED ones) into
DIR.
"""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from datetime import date
from functools import partial

from app.applicant.gather import check_inputs
from app.applicant.report import print_set, set_wire
from app.applicant.rules import DEFAULT_MAX_AGE_DAYS, check_set
from app.applicant.set_receipts import save_receipts
from app.commands.verify import NO_SERVICE, desk_client
from app.inputs.reading import read_input
from app.verify.verdicts import EXIT_STATUS


def is_applicant_check(args: Namespace) -> bool:
    return len(args.input) > 1 or args.applicant_name is not None


def _inputs(given: list[str]) -> list[str] | None:
    """The inputs, with ``-`` replaced by the text on stdin (once)."""
    if given.count("-") > 1:
        print("INPUT_UNREADABLE: - (stdin) may be given once", file=sys.stderr)
        return None
    return [sys.stdin.read().strip() if text == "-" else text for text in given]


def run_set(args: Namespace) -> int:
    inputs = _inputs(list(args.input))
    if inputs is None:
        return 2
    max_age = DEFAULT_MAX_AGE_DAYS if args.max_age_days is None else args.max_age_days
    with desk_client(args) as client:
        if client is None:
            print(NO_SERVICE, file=sys.stderr)
            return 2
        readers = [partial(read_input, text) for text in inputs]
        documents = check_inputs(client, inputs, readers)
        receipt_problems = (
            save_receipts(client, documents, args.receipt) if getattr(args, "receipt", None) else []
        )
    check = check_set(
        documents, today=date.today(), applicant_name=args.applicant_name, max_age_days=max_age
    )
    if args.json:
        print(json.dumps(set_wire(check), indent=2, ensure_ascii=False))
    else:
        print_set(check, sys.stdout)
    for line in receipt_problems:
        print(line, file=sys.stderr)
    return max(EXIT_STATUS[check.verdict], 2 if receipt_problems else 0)
