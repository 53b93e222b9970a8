"""`python -m app receipt check FILE [--jwks FILE_OR_URL]`, and `app verify ... --receipt FILE`.

`receipt check` reads a receipt from FILE (the JWS as text, or a verification record PDF or a
photo of one, whose QR code holds it), checks it with the service's published keys and prints
what it proves in words. Exit 0 genuine, 1 altered or forged (or not a receipt), 2 cannot check
(no key for it, the keys or the file cannot be had). Problems are one plain line on stderr.

The keys: `--jwks` (a saved JWKS file for offline checks, a JWKS URL, or the service's base
URL), else the service this computer is set up for. Never the receipt's own `iss`: a forger
would point it at their own keys.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.api.errors import ApiError
from app.inputs.classify import looks_like_receipt, receipts_in
from app.inputs.reading import InputError, read_file
from app.receipts.check import (
    JWKS_PATH,
    ReceiptError,
    check_receipt,
    claim_lines,
    load_jwks,
)
from app.verify.flow import Outcome, ReceiptMaker
from app.verify.verdicts import RECORDABLE
from service.protocol.schemas import ReceiptClaims

NO_KEYS = (
    "NO_KEYS: no service is set up on this computer to check against; pass --jwks with the "
    "service's published keys (a saved jwks.json, or the service's URL)"
)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app receipt")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="check a verification receipt or record")
    check.add_argument("file", help="the receipt (.jws), or a verification record PDF or image")
    check.add_argument(
        "--jwks",
        help="the service's published keys: a saved jwks.json, its URL, or the service's URL "
        "(default: the service this computer is set up for)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    try:
        receipts = read_receipts(Path(args.file))
        jwks = load_jwks(args.jwks) if args.jwks else _configured_jwks()
    except (ReceiptError, InputError) as exc:
        print(f"CANNOT_CHECK: {exc}", file=sys.stderr)
        return 2
    checks = [check_receipt(receipt, jwks) for receipt in receipts]
    for n, checked in enumerate(checks, 1):
        if len(checks) > 1:  # an applicant's record: one receipt per payslip
            print(f"{'' if n == 1 else chr(10)}Receipt {n} of {len(checks)}", file=sys.stdout)
        if checked.claims is None:
            print(f"{checked.state.upper()}: {checked.reason}", file=sys.stderr)
        else:
            print_claims(checked.reason, checked.claims, sys.stdout)
    for state in ("altered", "cannot_check"):  # not genuine wins over cannot be checked
        if any(checked.state == state for checked in checks):
            return checks[[c.state for c in checks].index(state)].exit_status
    return 0


def print_claims(reason: str, claims: ReceiptClaims, out: TextIO) -> None:
    print(f"GENUINE: {reason}", file=out)
    for label, value in claim_lines(claims):
        print(f"{label:<16}{value}", file=out)


def read_receipt(path: Path) -> str:
    """The (first) receipt in FILE: see :func:`read_receipts`."""
    return read_receipts(path)[0]


def read_receipts(path: Path) -> list[str]:
    """The receipts in FILE: its text, or every receipt QR code of a record PDF (an applicant's
    record has one per payslip) or of a photo of one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReceiptError(f"{path.name} does not exist") from None
    except OSError:
        raise ReceiptError(f"{path.name} cannot be read") from None
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        text = ""
    if text and looks_like_receipt(text):
        return [text]
    if data.startswith(b"%PDF-") or data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff":
        reading = read_file(path)
        pages = reading.pdf.page_payloads if reading.pdf is not None else []
        found = receipts_in([*reading.payloads, *pages])
        if found:
            return found
        raise ReceiptError(f"{path.name} holds no verification receipt")
    if text:
        return [text]  # checked (and refused in words) as the text it is
    raise ReceiptError(f"{path.name} holds no verification receipt")


def _configured_jwks() -> dict[str, object]:
    """The keys of the service this computer is set up for: the remote service's URL, or the
    embedded instance (started for the moment, as `app verify` does)."""
    from app.settings.desk import SecretStore, Settings
    from app.shell.context import desk_options, embedded_ready, start_embedded_context

    settings = Settings.load()
    if settings.mode == "remote" and settings.verifier_url:
        trust = desk_options(settings).get("verify")  # the office certificate, pinned
        return load_jwks(settings.verifier_url.rstrip("/") + JWKS_PATH, trust)
    secrets = SecretStore()
    if not embedded_ready(settings, secrets):
        raise ReceiptError(NO_KEYS.split(": ", 1)[1])
    context = start_embedded_context(settings, secrets)
    try:
        own = context.own_options().get("verify")  # this computer's own certificate, pinned
        return load_jwks(context.service_url.rstrip("/") + JWKS_PATH, own)
    finally:
        context.close()


# --- app verify --receipt ---------------------------------------------------------------------


def save_receipt(client: ReceiptMaker, outcome: Outcome, path: str) -> str | None:
    """Ask the service for a receipt of the check just made and write its JWS to `path`.

    Only for a verdict about one payslip code (VERIFIED or NOT VERIFIED): a check that could not
    be made has nothing to prove. Returns a plain problem line, or None when the file was
    written. The service checks the code again for the receipt, so the receipt says what the
    service found at that moment."""
    if outcome.verdict not in RECORDABLE or outcome.disagreement:
        return "NO_RECEIPT: a receipt records a verdict about one payslip code; there is none"
    sent = outcome.sent  # the code the check sent, not read again
    if sent is None:
        return "NO_RECEIPT: no payslip code was checked"
    try:
        answer = client.receipt(sent.text)
    except ApiError as exc:
        return f"NO_RECEIPT: {exc.code}: the service made no receipt"
    try:
        Path(path).write_text(f"{answer.receipt}\n", encoding="ascii")
    except OSError as exc:
        return f"NO_RECEIPT: {Path(path).name} could not be written ({exc.strerror})"
    return None
