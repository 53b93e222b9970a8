"""An incremental update of a PDF (ISO 32000-1 §7.5.6): new and changed objects appended after
the original bytes, with a cross-reference section and trailer of their own.

Why: rewriting a payslip PDF with pypdf means parsing and re-serialising every object in it: about
20 ms of CPU for a typical 70 KB, 200-object payslip printed by a browser, ten times the rest of a
payslip's work in a pay run (measured in bench/issue_bench.py, compared in README). An update
reads only what it changes (the catalog, the page, the information dictionary), leaves every
original byte where it was (a signature over the original still covers its revision), and costs
about a millisecond whatever the document's size.

pypdf parses the document and serialises every object written here; this module adds only the
update's framing: `N G obj ... endobj`, the cross-reference section (a table after a table, a
stream after a stream, as the document's last section is) and the trailer, which carries the
previous trailer's entries as §7.5.6 requires. Only documents pypdf reads strictly are updated
(`open_strict`); one it has to repair is rewritten whole by the caller, as before.
"""

from __future__ import annotations

import hashlib
import io
import re

from pypdf import PdfReader
from pypdf.generic import (
    ArrayObject,
    ByteStringObject,
    DecodedStreamObject,
    DictionaryObject,
    IndirectObject,
    NameObject,
    NumberObject,
    PdfObject,
    TextStringObject,
)

__all__ = ["Update", "open_strict"]

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
}


def open_strict(pdf: bytes) -> PdfReader | None:
    """A reader for `pdf` when it can take an update: pypdf reads its cross-reference data
    strictly (no repair), and its last `startxref` points at that data. None otherwise; pypdf's
    own errors on a damaged file are the caller's to meet on the lenient path."""
    try:
        reader = PdfReader(io.BytesIO(pdf), strict=True)
        if reader.is_encrypted or _last_xref(pdf) is None:
            return None
        _ = len(reader.pages)
    except Exception:  # any failure only means: rewrite it whole instead
        return None
    return reader


def _last_xref(pdf: bytes) -> int | None:
    """The offset the file's last `startxref` names, when it points inside the file."""
    found = list(_STARTXREF.finditer(pdf, max(len(pdf) - 2048, 0)))
    if not found:
        return None
    offset = int(found[-1].group(1))
    return offset if 0 < offset < len(pdf) else None


class Update:
    """One incremental update of `pdf`, read by `reader` (from `open_strict`).

    `add` gives a new object its number; `replace` writes a new version of an existing one under
    its own number and generation; `to_bytes` returns the original bytes followed by the update.
    """

    def __init__(self, pdf: bytes, reader: PdfReader) -> None:
        previous = _last_xref(pdf)
        if previous is None:
            raise ValueError("the PDF has no usable startxref")
        self._pdf = pdf
        self._reader = reader
        self._previous = previous
        # New objects are numbered from /Size, past every number the document uses already.
        used = [n for table in reader.xref.values() for n in table] + list(reader.xref_objStm)
        self._next = max([int(reader.trailer.get("/Size", 0)), *(n + 1 for n in used)])
        self._objects: dict[int, tuple[int, PdfObject]] = {}
        self._trailer = DictionaryObject(
            {
                NameObject(key): value
                for key, value in reader.trailer.items()
                if key not in _SECTION_KEYS
            }
        )

    def add(self, obj: PdfObject) -> IndirectObject:
        """A new object (streams must be added, never embedded); returns its reference."""
        number = self._next
        self._next += 1
        self._objects[number] = (0, obj)
        return IndirectObject(number, 0, self._reader)

    def replace(self, reference: IndirectObject, obj: PdfObject) -> None:
        """Write `obj` as the new version of the object `reference` names."""
        self._objects[reference.idnum] = (reference.generation, obj)
        self._next = max(self._next, reference.idnum + 1)

    def set_trailer(self, key: str, value: PdfObject) -> None:
        self._trailer[NameObject(key)] = value

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        out.write(self._pdf)
        if not self._pdf.endswith((b"\n", b"\r")):
            out.write(b"\n")
        start = out.tell()
        offsets: dict[int, tuple[int, int]] = {}
        for number in sorted(self._objects):
            generation, obj = self._objects[number]
            offsets[number] = (out.tell(), generation)
            out.write(b"%d %d obj\n" % (number, generation))
            obj.write_to_stream(out)
            out.write(b"\nendobj\n")
        trailer = self._trailer
        identifier = trailer.get("/ID")
        if isinstance(identifier, ArrayObject) and len(identifier) == 2:
            # The first ID names the document, the second this version of it (§14.4): derived
            # from the update's bytes, so the same stamp gives the same file.
            digest = hashlib.md5(out.getvalue()[start:], usedforsecurity=False).digest()
            first = identifier[0].get_object()
            if isinstance(first, TextStringObject):  # pypdf decodes what looks like text
                first = ByteStringObject(first.original_bytes)
            trailer[NameObject("/ID")] = ArrayObject([first, ByteStringObject(digest)])
        trailer[NameObject("/Prev")] = NumberObject(self._previous)
        if self._pdf[self._previous : self._previous + 16].lstrip().startswith(b"xref"):
            xref_at = self._write_table(out, offsets, trailer)
        else:
            xref_at = self._write_stream(out, offsets, trailer)
        out.write(b"startxref\n%d\n%%%%EOF\n" % xref_at)
        return out.getvalue()

    def _write_table(
        self, out: io.BytesIO, offsets: dict[int, tuple[int, int]], trailer: DictionaryObject
    ) -> int:
        xref_at = out.tell()
        # The section starts with object 0, the head of the free list (as Acrobat writes
        # updates): readers that take a table not starting at 0 for a damaged one (pypdf warns
        # and re-checks every entry) read it as it is.
        out.write(b"xref\n0 1\n0000000000 65535 f\r\n")
        for first, run in _runs(sorted(offsets)):
            out.write(b"%d %d\n" % (first, len(run)))
            for number in run:
                offset, generation = offsets[number]
                out.write(b"%010d %05d n\r\n" % (offset, generation))  # 20 bytes an entry
        trailer[NameObject("/Size")] = NumberObject(self._next)
        out.write(b"trailer\n")
        trailer.write_to_stream(out)
        out.write(b"\n")
        return xref_at

    def _write_stream(
        self, out: io.BytesIO, offsets: dict[int, tuple[int, int]], trailer: DictionaryObject
    ) -> int:
        """A cross-reference stream (§7.5.8), uncompressed, listing itself too."""
        number = self._next
        xref_at = out.tell()
        offsets = {**offsets, number: (xref_at, 0)}
        width = max(4, (xref_at.bit_length() + 7) // 8)
        rows = b"".join(
            b"\x01" + offsets[n][0].to_bytes(width, "big") + offsets[n][1].to_bytes(2, "big")
            for n in sorted(offsets)
        )
        stream = DecodedStreamObject()
        stream.update(trailer)
        stream.update(
            {
                NameObject("/Type"): NameObject("/XRef"),
                NameObject("/Size"): NumberObject(number + 1),
                NameObject("/W"): ArrayObject(
                    [NumberObject(1), NumberObject(width), NumberObject(2)]
                ),
                NameObject("/Index"): ArrayObject(
                    [
                        NumberObject(v)
                        for first, run in _runs(sorted(offsets))
                        for v in (first, len(run))
                    ]
                ),
            }
        )
        stream.set_data(rows)
        out.write(b"%d 0 obj\n" % number)
        stream.write_to_stream(out)
        out.write(b"\nendobj\n")
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
