"""Inputs to documents: each input read and verified as a single check does, concurrently.

One input is a file (PDF or image) or a code text. A PDF whose pages carry several payslip codes
counts each as a document; its metadata payload is the same document as the page code of the
same record (badge and metadata of one payslip are one document, not a duplicate). A PDF whose
metadata names a record that no page shows is the §3 disagreement: one document, NOT VERIFIED.

Reading (decoding images, rendering PDF pages) and the service calls run in a thread pool with
the caller's one :class:`~app.api.ApiClient`, so the set shares one token and one
connection pool and every call keeps the client's own fail-fast deadline. What the threads
overlap is one input's C work (zxing-cpp's decode, pdfium) with another's Python; the Python,
about two thirds of a document's CPU with the embedded service's side, holds the GIL and runs
one thread at a time (docs/applicant.md, Benchmark).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from app.applicant.documents import Document, document_of, unreadable
from app.inputs.classify import is_payslip_code
from app.inputs.reading import InputError, InputReading, read_input
from app.verify.flow import Outcome, Verifier, found_codes, verify_codes, with_document_check
from app.verify.verdicts import InputProblem
from service.protocol.barcode_text import BarcodeTextError, parse_barcode

MAX_WORKERS = 6
"""Six payslips are the most a desk asks for; more threads only contend for the GIL."""
Reader = Callable[[], InputReading]


def _reference(text: str) -> str | None:
    try:
        return parse_barcode(text).service_reference
    except BarcodeTextError:
        return None


def code_groups(reading: InputReading) -> list[tuple[list[str], bool]]:
    """The payload groups to verify as separate documents, each with its disagreement flag."""
    pdf = reading.pdf
    if pdf is not None and pdf.disagreement and pdf.metadata_payload is not None:
        on_pages = {_reference(text) for text in pdf.page_payloads}
        if _reference(pdf.metadata_payload) not in on_pages:
            return [(reading.payloads, True)]
    codes = [p for p in reading.payloads if is_payslip_code(p)]
    if not codes:
        return [(reading.payloads, False)]
    return [([code], False) for code in codes]


def label_of(index: int, given: str) -> str:
    """What sentences call an input: its file name, else "code N" (1-based)."""
    path = Path(given)
    try:
        if path.is_file():
            return path.name
    except (OSError, ValueError):
        pass
    return f"code {index + 1}"


def documents_of_reading(
    client: Verifier, index: int, given: str, label: str, reading: InputReading
) -> list[Document]:
    groups = code_groups(reading)
    out: list[Document] = []
    for n, (payloads, disagreement) in enumerate(groups):
        found = found_codes(payloads)
        outcome: Outcome = (
            found
            if isinstance(found, Outcome)
            else with_document_check(verify_codes(client, found, disagreement), reading)
        )
        name = label if len(groups) == 1 else f"{label} (payslip {n + 1})"
        code = payloads[0] if len(payloads) == 1 and isinstance(found, list) else None
        out.append(document_of(index, given, name, outcome, code))
    return out


def check_input(
    client: Verifier, index: int, given: str, reader: Reader, label: str | None = None
) -> list[Document]:
    """Read one input and verify each payslip code in it; an unreadable input or one with no
    payslip code is one document with no verdict (nothing is sent for it)."""
    name = label or label_of(index, given)
    try:
        reading = reader()
    except InputError as exc:
        return [unreadable(index, given, name, InputProblem.INPUT_UNREADABLE, str(exc))]
    if not reading.payloads:
        return [
            unreadable(index, given, name, InputProblem.NO_CODE_FOUND, "no payslip code was found")
        ]
    return documents_of_reading(client, index, given, name, reading)


def check_inputs(
    client: Verifier, inputs: Sequence[str], readers: Sequence[Reader] | None = None
) -> list[Document]:
    """Every input's documents, in input order; inputs read and verified concurrently."""
    chosen = readers or [partial(read_input, text) for text in inputs]
    if len(inputs) == 1:
        return check_input(client, 0, inputs[0], chosen[0])
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(inputs))) as pool:
        futures = [
            pool.submit(check_input, client, i, text, reader)
            for i, (text, reader) in enumerate(zip(inputs, chosen, strict=True))
        ]
        return [doc for future in futures for doc in future.result()]
