"""A signed receipt for each document of an applicant check (issues 23 and 24, PROTOCOL §11).

The set's verification record (:mod:`app.ui.records.set_record_pdf`) and ``app verify A B C
--receipt DIR`` both need one receipt per document that got a verdict (VERIFIED or NOT VERIFIED): a
document with no payslip code, or one that could not be checked, has nothing a receipt could record.
The receipts are asked for concurrently with the caller's one API client (one token, one connection
pool), never on a GUI thread. Qt-free; nothing here is logged or kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jwt

from app.api.errors import ApiError
from app.applicant.documents import Document
from app.applicant.gather import MAX_WORKERS
from app.verify.flow import ReceiptMaker
from app.verify.verdicts import RECORDABLE
from service.protocol.schemas import ReceiptClaims


@dataclass(frozen=True)
class DocumentReceipt:
    """The receipt of one document of the set: its JWS and the claims it holds."""

    position: int
    """The document's place in the set (0-based, the order of the set's documents)."""
    receipt: str
    claims: ReceiptClaims


@dataclass(frozen=True)
class MissingReceipt:
    """A document that should have had a receipt and got none (the service refused)."""

    position: int
    label: str
    code: str


def wants_receipt(doc: Document) -> bool:
    """Only a verdict about one payslip code can be recorded."""
    return doc.verdict in RECORDABLE and doc.barcode is not None


def fetch_receipts(
    client: ReceiptMaker, documents: Sequence[Document]
) -> tuple[list[DocumentReceipt], list[MissingReceipt]]:
    """One receipt per document that wants one, in document order, and those the service
    would not give (with its error code)."""
    wanted = [(i, d) for i, d in enumerate(documents) if wants_receipt(d)]

    def one(position: int, doc: Document) -> DocumentReceipt | MissingReceipt:
        assert doc.barcode is not None
        try:
            answer = client.receipt(doc.barcode)
        except ApiError as exc:
            return MissingReceipt(position, doc.label, exc.code)
        claims = ReceiptClaims.model_validate(
            jwt.decode(answer.receipt, options={"verify_signature": False})
        )
        return DocumentReceipt(position, answer.receipt, claims)

    if not wanted:
        return [], []
    with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(wanted))) as pool:
        answers = list(pool.map(lambda pair: one(*pair), wanted))
    got = [a for a in answers if isinstance(a, DocumentReceipt)]
    missing = [a for a in answers if isinstance(a, MissingReceipt)]
    return got, missing


def receipt_file_name(receipt: DocumentReceipt) -> str:
    """``receipt-2-<reference>.jws``: the document's place in the set (1-based) and whose it is."""
    sub = receipt.claims.sub or ""
    reference = "".join(c for c in sub if c.isalnum() or c in "-_")[:40]
    return f"receipt-{receipt.position + 1}" + (f"-{reference}" if reference else "") + ".jws"


def save_receipts(client: ReceiptMaker, documents: Sequence[Document], folder: str) -> list[str]:
    """``app verify A B C --receipt DIR``: each document's receipt as a JWS file in ``folder``
    (made if missing). Returns plain problem lines (none when every receipt was written)."""
    directory = Path(folder)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return [f"NO_RECEIPT: {directory.name or folder} is not a folder ({exc.strerror})"]
    got, missing = fetch_receipts(client, documents)
    problems = [f"NO_RECEIPT: {m.label}: {m.code}: the service made no receipt" for m in missing]
    for receipt in got:
        path = directory / receipt_file_name(receipt)
        try:
            path.write_text(f"{receipt.receipt}\n", encoding="ascii")
        except OSError as exc:
            problems.append(f"NO_RECEIPT: {path.name} could not be written ({exc.strerror})")
    if not got and not missing:
        problems.append("NO_RECEIPT: no payslip in the set got a verdict a receipt can record")
    return problems
