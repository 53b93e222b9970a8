"""An incremental update of a PDF (ISO 32000-1 §7.5.6): new and changed objects appended after
the original bytes, with a cross-reference section and trailer of their own.

Why: rewriting a payslip PDF means parsing and re-serialising every object in it (pypdf: ~20 ms
of CPU for a typical 70 KB, 200-object payslip printed by a browser, ten times the rest of a
payslip's work in a pay run; README, "Stamping PDFs (issue 12)"). An update reads only what it
changes (the catalog, the page, the information dictionary), leaves every original byte where it
was (a signature over the original still covers its revision), and costs well under a millisecond
whatever the document's size.

qpdf (through pikepdf) parses: it reads the cross-reference data, then only the objects asked for,
in C++, so a page inside an object stream costs what a page in a classic file costs (pypdf parsed
the whole object stream in Python to reach it: 6 ms a stamp for office-suite PDFs). The caller
edits the document in memory with pikepdf objects and names what it made (`add`) and what it
changed (`changed`); `to_bytes` writes those objects, serialised by qpdf, after the original bytes.
Only the framing is ours: `N G obj ... endobj`, the cross-reference section (a table after a
table, a stream after a stream, as the document's last section is) and the trailer, which carries
the previous trailer's entries as §7.5.6 requires.

Only a document qpdf reads without repairing or guessing gets an update: opened with recovery off,
and no warning by the time the update is written (qpdf warns lazily, as it meets damage).
Anything else raises `NotAppendable`, and the caller rewrites the document whole.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping
from typing import Any, Protocol

import pikepdf
from pikepdf import Array, Dictionary, Name, Stream, String

__all__ = ["NotAppendable", "Objects", "Update"]

_STARTXREF = re.compile(rb"startxref\s+(\d+)\s+%%EOF", re.S)
# Keys that describe one cross-reference section (or its stream), never carried to the next.
_SECTION_KEYS = {
    "/Prev",
    "/XRefStm",
    "/Size",
    "/Type",
    "/W",
    "/Index",
    "/Filter",
    "/DecodeParms",
    "/Length",
    "/ID",  # carried, but by `to_bytes` (its second half names the new version)
}


# qpdf warnings about a file that every reader takes as it is, and that an update does not lean
# on: pypdf's incremental writer, for one, leaves its cross-reference stream out of itself.
_HARMLESS = ("xref entry for the xref stream itself is missing",)


class NotAppendable(Exception):
    """The document cannot take an update (qpdf would have to repair or guess): rewrite it."""


class Objects(Protocol):
    """How an edit of a document in memory makes new objects and reports changed ones, so that
    whoever writes the document (an update, or the whole file) knows what to write."""

    def add(self, obj: pikepdf.Object) -> pikepdf.Object:
        """A new object from a direct one (not a stream); returns its indirect reference."""

    def add_stream(self, data: bytes, entries: Mapping[str, Any]) -> pikepdf.Object:
        """A new stream of `data` (encoded as `entries` says); returns its reference."""

    def changed(self, obj: pikepdf.Object) -> None:
        """An existing indirect object was edited in place."""


def _last_xref(pdf: bytes) -> int | None:
    """The offset the file's last `startxref` names, when it points inside the file."""
    found = list(_STARTXREF.finditer(pdf, max(len(pdf) - 2048, 0)))
    if not found:
        return None
    offset = int(found[-1].group(1))
    return offset if 0 < offset < len(pdf) else None


class Update:
    """One incremental update of `pdf`: edit `doc`, report objects, then `to_bytes`.

    Raises NotAppendable when the document cannot take an update: qpdf cannot read it with
    recovery off, it is encrypted, or its last `startxref` points nowhere.

    New objects are numbered here, from the trailer's /Size on, and put into qpdf's object table
    under those numbers: asking qpdf to number them (`make_indirect`, `Stream(doc, ...)`) makes
    it parse every object in the file first (1.5 ms for a 200-object payslip). A new stream's
    data stays here; qpdf holds its dictionary.
    """

    def __init__(self, pdf: bytes) -> None:
        previous = _last_xref(pdf)
        if previous is None:
            raise NotAppendable("the PDF has no usable startxref")
        try:
            # inherit_page_attributes=False: qpdf would otherwise copy a /Pages node's
            # /Resources, /MediaBox, /CropBox or /Rotate down to every page as new objects it
            # numbers itself, under the numbers this update takes (pdf_stamp reads them from
            # the tree instead).
            doc = pikepdf.open(
                io.BytesIO(pdf), attempt_recovery=False, inherit_page_attributes=False
            )
        except Exception as exc:  # any failure only means: rewrite it whole instead
            raise NotAppendable("qpdf cannot read the PDF without repairing it") from exc
        try:
            size = int(doc.trailer.get("/Size", 0))
            if doc.is_encrypted or size <= 0:
                raise NotAppendable("the PDF is encrypted or has no /Size")
        except Exception:
            doc.close()
            raise
        self.doc = doc
        self._pdf = pdf
        self._previous = previous
        self._next = size
        self._written: set[tuple[int, int]] = set()
        self._data: dict[int, bytes] = {}

    def close(self) -> None:
        self.doc.close()

    def add(self, obj: pikepdf.Object) -> pikepdf.Object:
        if obj.is_indirect or isinstance(obj, Stream):
            raise ValueError("add takes a direct object that is not a stream")
        number = self._next
        self._next += 1
        if self.doc.get_object(number, 0) is not None:
            # Only a file whose /Size understates its objects gets here; a rewrite numbers
            # everything itself.
            raise NotAppendable("an object already holds a number the update would take")
        # pikepdf's (private) hook into QPDF::replaceObject: the object under our number,
        # without qpdf numbering anything. pikepdf is pinned to one version for this.
        self.doc._replace_object((number, 0), obj)
        self._written.add((number, 0))
        return self.doc.get_object(number, 0)

    def add_stream(self, data: bytes, entries: Mapping[str, Any]) -> pikepdf.Object:
        reference = self.add(Dictionary({**entries, "/Length": len(data)}))
        self._data[reference.objgen[0]] = data
        return reference

    def changed(self, obj: pikepdf.Object) -> None:
        if not obj.is_indirect or isinstance(obj, Stream):
            raise NotAppendable("a changed object is a direct object or a stream")
        self._written.add(obj.objgen)

    def to_bytes(self) -> bytes:
        # qpdf warns instead of failing on damage it can live with, and it warns when it makes
        # an object indirect on its own (such as a direct page): both mean rewrite.
        warnings = self.doc.get_warnings()  # all since opening (reading them clears them)
        if any(not any(harmless in w for harmless in _HARMLESS) for w in warnings):
            raise NotAppendable("qpdf had to repair or guess while reading the PDF")
        out = io.BytesIO()
        out.write(self._pdf)
        if not self._pdf.endswith((b"\n", b"\r")):
            out.write(b"\n")
        start = out.tell()
        offsets: dict[int, tuple[int, int]] = {}
        for number, generation in sorted(self._written):
            offsets[number] = (out.tell(), generation)
            out.write(b"%d %d obj\n" % (number, generation))
            out.write(self.doc.get_object(number, generation).unparse(resolved=True))
            if number in self._data:
                out.write(b"\nstream\n" + self._data[number] + b"\nendstream")
            out.write(b"\nendobj\n")
        trailer = Dictionary(
            {key: value for key, value in self.doc.trailer.items() if key not in _SECTION_KEYS}
        )
        identifier = self.doc.trailer.get("/ID")
        if isinstance(identifier, Array) and len(identifier) == 2:
            # The first ID names the document, the second this version of it (§14.4): derived
            # from the update's bytes, so the same stamp gives the same file.
            digest = hashlib.md5(out.getvalue()[start:], usedforsecurity=False).digest()
            first = identifier[0]
            trailer.ID = Array([String(bytes(first)) if isinstance(first, String) else first])
            trailer.ID.append(String(digest))
        elif identifier is not None:
            trailer.ID = identifier  # not the usual pair of strings: carried as it is
        trailer.Prev = self._previous
        if self._pdf[self._previous : self._previous + 16].lstrip().startswith(b"xref"):
            trailer.Size = self._next
            xref_at = _write_table(out, offsets, trailer)
        else:
            xref_at = _write_stream(out, offsets, trailer, self._next)
        out.write(b"startxref\n%d\n%%%%EOF\n" % xref_at)
        return out.getvalue()


def _write_table(out: io.BytesIO, offsets: dict[int, tuple[int, int]], trailer: Dictionary) -> int:
    xref_at = out.tell()
    # The section starts with object 0, the head of the free list (as Acrobat writes updates):
    # readers that take a table not starting at 0 for a damaged one (pypdf warns and re-checks
    # every entry) read it as it is.
    out.write(b"xref\n0 1\n0000000000 65535 f\r\n")
    for first, run in _runs(sorted(offsets)):
        out.write(b"%d %d\n" % (first, len(run)))
        for number in run:
            offset, generation = offsets[number]
            out.write(b"%010d %05d n\r\n" % (offset, generation))  # 20 bytes an entry
    out.write(b"trailer\n" + trailer.unparse() + b"\n")
    return xref_at


def _write_stream(
    out: io.BytesIO, offsets: dict[int, tuple[int, int]], trailer: Dictionary, number: int
) -> int:
    """A cross-reference stream (§7.5.8) numbered `number`, uncompressed, listing itself too."""
    xref_at = out.tell()
    offsets = {**offsets, number: (xref_at, 0)}
    width = max(4, (xref_at.bit_length() + 7) // 8)
    rows = b"".join(
        b"\x01" + offsets[n][0].to_bytes(width, "big") + offsets[n][1].to_bytes(2, "big")
        for n in sorted(offsets)
    )
    trailer.Type = Name.XRef
    trailer.Size = number + 1
    trailer.W = Array([1, width, 2])
    trailer.Index = Array([v for first, run in _runs(sorted(offsets)) for v in (first, len(run))])
    trailer.Length = len(rows)
    out.write(b"%d 0 obj\n" % number + trailer.unparse() + b"\nstream\n")
    out.write(rows + b"\nendstream\nendobj\n")
    return xref_at


def _runs(numbers: list[int]) -> list[tuple[int, list[int]]]:
    """Consecutive object numbers grouped into (first, [numbers]) subsections."""
    runs: list[tuple[int, list[int]]] = []
    for number in numbers:
        if runs and runs[-1][1][-1] == number - 1:
            runs[-1][1].append(number)
        else:
            runs.append((number, [number]))
    return runs
