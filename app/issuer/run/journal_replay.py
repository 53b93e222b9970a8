"""What the encrypted run journal holds, and reading it back when a run is resumed.

The journal (`app.issuer.journal.RunJournal`) is a sequence of frames: one `header` (issuer key
version, service, pay-run file name and the run's issue time), then for every batch a `batch`
frame with each sealed row (`Entry`) written before the batch is sent, and an `ack` frame with
the rows' results written once their badges and PDFs are durable. Replaying it tells a re-run
which rows are finished (acknowledged) and which were sent but never answered (pending), so
nothing is issued twice and a pending batch is resent byte for byte.

A row's `fingerprint` (a MAC under the journal's key over everything that went into it) lets the
re-run notice a row that was edited in the file after the interrupted run sent it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from app.issuer.journal import JournalError, RunJournal
from app.issuer.records import IssuerKey, utc_now
from app.issuer.row_status import RowStatus
from app.issuer.run.results import RecordResult
from app.issuer.run.rows import PayrunRow
from service.protocol.encoding import b64url_decode, b64url_encode
from service.protocol.schemas import canonical_json

__all__ = ["Acked", "Entry", "Pending", "fingerprint", "open_header", "replay"]


@dataclass
class Entry:
    """A sealed row: everything needed to (re)send it and to write its outputs."""

    row: int
    fingerprint: str
    external_id: str
    body: dict[str, Any] = field(repr=False)
    ciphertext: bytes = field(repr=False)
    stem: str
    pdf: str | None
    pdf_page: int
    pdf_corner: str

    @property
    def reference(self) -> str:
        return str(self.body["service_reference"])

    def to_json(self) -> dict[str, Any]:
        """The journal form (the body is shared, not copied: the journal serialises it at
        once; `dataclasses.asdict` deep-copied it, a tenth of a millisecond per row)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["ciphertext"] = b64url_encode(self.ciphertext)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        values = dict(data)
        values["ciphertext"] = b64url_decode(values["ciphertext"])
        return cls(**values)


Acked = dict[int, tuple[RecordResult, str]]
"""Row number -> (its acknowledged result, the fingerprint of the row it was made from)."""
Pending = dict[int, Entry]
"""Row number -> the entry journaled and sent but never acknowledged."""

_SETTING_WORDS = {"key_version": "issuer key", "scan_base": "service", "source": "pay-run file"}


def open_header(
    journal: RunJournal, key: IssuerKey, scan_base: str, source: Path
) -> dict[str, Any]:
    """The run's header frame: written for a new run; for a resumed one, read back and checked
    against these settings (resuming with another key, service or file would mix two runs)."""
    expected = {
        "t": "header",
        "v": 1,
        "key_version": key.key_version,
        "scan_base": scan_base,
        "source": source.name,
    }
    if journal.resumed:
        first = next(journal.frames(), None)
        if first is None or first.get("t") != "header":
            raise JournalError("the run journal is damaged; choose a new output folder")
        for name, what in _SETTING_WORDS.items():
            if first.get(name) != expected[name]:
                raise JournalError(
                    f"this output folder holds an unfinished run with another {what}; "
                    "resume it with the same settings or choose a new output folder"
                )
        return first
    header = {**expected, "issued_at": utc_now()}
    journal.append(header)
    return header


def replay(journal: RunJournal) -> tuple[Acked, Pending]:
    """Acknowledged results (with the row fingerprints they were made from) and the entries
    that were journaled but never answered."""
    acked: Acked = {}
    pending: Pending = {}
    for index, frame in enumerate(journal.frames()):
        if index == 0:
            continue
        kind = frame.get("t")
        if kind == "batch":
            for data in frame["records"]:
                entry = Entry.from_json(data)
                pending[entry.row] = entry
        elif kind == "ack":
            for data in frame["results"]:
                fingerprint = str(data.pop("fingerprint", ""))
                result = RecordResult(**{**data, "status": RowStatus(data["status"])})
                pending.pop(result.row, None)
                acked[result.row] = (result, fingerprint)
    return acked, pending


def fingerprint(journal: RunJournal, row: PayrunRow) -> str:
    """A MAC over everything that goes into a row's record and outputs (personal data
    included, hence keyed): equal fingerprints mean the row is unchanged since it was sent."""
    data = {
        "schema": row.schema,
        "issued_at": row.issued_at,
        "payslip_non_pii": row.payslip_non_pii,
        "pii": row.pii_text,
        "external_id": row.external_id,
        "pdf": [row.pdf, row.pdf_page, row.pdf_corner],
    }
    return journal.mac(canonical_json(data).encode("utf-8"))
