"""The payload in a PDF's metadata (PROTOCOL §3): an XMP property and an info-dictionary key.

Only the bare barcode payload is written, never plaintext PII. An existing XMP packet is kept: our
property goes into its own rdf:Description, replacing an earlier one of ours.

Writing goes through `edit`, shared with the stamp: a PDF that qpdf reads without repairing
anything gets the change as an incremental update (`pdf_append`: new versions of the catalog and
the information dictionary after the original bytes); any other is repaired by qpdf and rewritten
whole. Reading (the verifier's side) stays with pypdf, which is lenient with damaged files.
"""

from __future__ import annotations

import io
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pikepdf
from pikepdf import Dictionary, Name, Stream, String
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from service.documents.pdf_append import NotAppendable, Objects, Update
from service.protocol.barcode_text import BarcodeTextError, parse_barcode

NS = "urn:payslip-verify:xmp:1.0/"
INFO_KEY = "/PayslipVerifyPayload"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
X = "adobe:ns:meta/"

ET.register_namespace("x", X)
ET.register_namespace("rdf", RDF)
ET.register_namespace("pv", NS)


class PdfError(ValueError):
    """The PDF cannot be read or written (encrypted, damaged). The message is plain text."""


# What pypdf raises on damaged input varies with the damage (measured by fuzzing stamped PDFs:
# its own errors, but also ValueError, KeyError, AttributeError, ...), at any step: reading,
# cloning or writing; pikepdf raises its own errors (qpdf's), or TypeError/ValueError when an
# object is not of the type a key asks for. Callers get one PdfError instead.
_DAMAGE = (
    PyPdfError,
    pikepdf.PikepdfError,
    RuntimeError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    OSError,
    RecursionError,
    AssertionError,
    UnicodeError,
    zlib.error,
    struct.error,
)


@contextmanager
def damage_as_pdf_error(what: str = "the PDF is damaged or not a PDF") -> Iterator[None]:
    """Turn any pypdf failure on untrusted bytes into a PdfError with a plain message."""
    try:
        yield
    except PdfError:
        raise
    except _DAMAGE as exc:
        raise PdfError(what) from exc


_ENCRYPTED = "the PDF is encrypted; save an unprotected copy first"


def open_reader(pdf: bytes) -> PdfReader:
    """A pypdf reader for an unencrypted, parseable PDF (reading metadata)."""
    with damage_as_pdf_error():
        reader = PdfReader(io.BytesIO(pdf), strict=False)
        if reader.is_encrypted:
            raise PdfError(_ENCRYPTED)
        _ = len(reader.pages)
    return reader


Change = Callable[[pikepdf.Pdf, Objects], None]
"""An edit of a document in memory, reporting the objects it makes and changes."""


def edit(pdf: bytes, change: Change, what: str = "the PDF is damaged or not a PDF") -> bytes:
    """`pdf` with `change` made to it: an incremental update when qpdf reads the document
    without repairing anything, else the document repaired by qpdf and written whole.

    A PdfError from `change` (a refusal such as a page that does not exist) is raised as it is;
    any other failure on the update's way means damage met late, and the rewrite is tried."""
    try:
        update: Update | None = Update(pdf)
    except NotAppendable:
        update = None
    if update is not None:
        try:
            change(update.doc, update)
            return update.to_bytes()
        except PdfError:
            raise
        except (NotAppendable, *_DAMAGE):
            pass  # damage a strict reading met only now: rewrite it whole after all
        finally:
            update.close()
    with damage_as_pdf_error():
        try:
            doc = pikepdf.open(io.BytesIO(pdf))
        except pikepdf.PasswordError as exc:
            raise PdfError(_ENCRYPTED) from exc
    try:
        if doc.is_encrypted:
            raise PdfError(_ENCRYPTED)
        with damage_as_pdf_error(what):
            change(doc, _Whole(doc))
            out = io.BytesIO()
            # Deterministic bytes (the /ID from the content); streams kept as they are (no
            # decoding and compressing again); pikepdf's XMP helper (lxml) left alone.
            doc.save(
                out,
                deterministic_id=True,
                fix_metadata_version=False,
                stream_decode_level=pikepdf.StreamDecodeLevel.none,
            )
        return out.getvalue()
    finally:
        doc.close()


class _Whole:
    """The objects of a document that is written whole: nothing to keep track of."""

    def __init__(self, doc: pikepdf.Pdf) -> None:
        self._doc = doc

    def add(self, obj: pikepdf.Object) -> pikepdf.Object:
        return self._doc.make_indirect(obj)

    def add_stream(self, data: bytes, entries: Mapping[str, Any]) -> pikepdf.Object:
        stream = Stream(self._doc, data)
        for key, value in entries.items():
            stream[key] = value
        return stream

    def changed(self, obj: pikepdf.Object) -> None:
        pass


def check_payload(payload: str) -> None:
    """Only a bare v1/v2 barcode payload may go into metadata: never a URL, never plaintext."""
    ok = isinstance(payload, str) and payload == payload.strip() and payload[:2] in ("1|", "2|")
    if ok:
        try:
            parse_barcode(payload)
        except BarcodeTextError:
            ok = False
    if not ok:
        raise PdfError("the metadata payload is not a bare version 1 or 2 barcode payload")


def _no_dtd(packet: bytes) -> bool:
    """XMP forbids DTDs; refusing them keeps entity tricks away from the XML parser."""
    return b"<!DOCTYPE" not in packet and b"<!ENTITY" not in packet


def _packet(existing: bytes | None, payload: str) -> bytes:
    root: ET.Element | None = None
    if existing and _no_dtd(existing):
        try:
            root = ET.fromstring(existing)  # noqa: S314 - XMP from the document, no DTDs
        except ET.ParseError:
            root = None
    if root is None or root.find(f".//{{{RDF}}}RDF") is None:
        root = ET.Element(f"{{{X}}}xmpmeta")
        ET.SubElement(root, f"{{{RDF}}}RDF")
    rdf = root.find(f".//{{{RDF}}}RDF")
    assert rdf is not None
    for description in list(rdf.findall(f"{{{RDF}}}Description")):
        for old in description.findall(f"{{{NS}}}payload"):
            description.remove(old)
        description.attrib.pop(f"{{{NS}}}payload", None)
        if len(description) == 0 and set(description.attrib) <= {f"{{{RDF}}}about"}:
            rdf.remove(description)
    ours = ET.SubElement(rdf, f"{{{RDF}}}Description", {f"{{{RDF}}}about": ""})
    ET.SubElement(ours, f"{{{NS}}}payload").text = payload
    body = ET.tostring(root, encoding="unicode")
    return (
        '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
        + body
        + '\n<?xpacket end="w"?>'
    ).encode("utf-8")


def _existing_xmp(reader: PdfReader) -> bytes | None:
    try:
        metadata = reader.root_object.get("/Metadata")
        return bytes(metadata.get_object().get_data()) if metadata is not None else None
    except _DAMAGE:  # an unreadable XMP stream is treated as none; the info key may remain
        return None


def write_payload_metadata(pdf: bytes, payload: str) -> bytes:
    """Put the bare payload into the catalog's XMP packet and the info dictionary.

    Both places, because readers differ: XMP survives most editing tools, the info key is what
    simple tools show. Existing info entries and XMP properties are kept.
    """
    check_payload(payload)
    return edit(pdf, lambda doc, objects: set_metadata(doc, objects, payload))


def set_metadata(doc: pikepdf.Pdf, objects: Objects, payload: str) -> None:
    """The payload into `doc`: a new XMP stream, the catalog pointing to it, and the
    information dictionary (changed in place, or a new one) with our key."""
    check_payload(payload)
    packet = _packet(_document_xmp(doc), payload)
    catalog = doc.Root
    catalog.Metadata = objects.add_stream(packet, {"/Type": Name.Metadata, "/Subtype": Name.XML})
    objects.changed(catalog)
    info = doc.trailer.get("/Info")
    if isinstance(info, Dictionary) and info.is_indirect:
        info[INFO_KEY] = String(payload)
        objects.changed(info)
    else:
        fresh = info.copy() if isinstance(info, Dictionary) else Dictionary()
        fresh[INFO_KEY] = String(payload)
        doc.trailer.Info = objects.add(fresh)


def _document_xmp(doc: pikepdf.Pdf) -> bytes | None:
    try:
        metadata = doc.Root.get("/Metadata")
        return metadata.read_bytes() if isinstance(metadata, Stream) else None
    except _DAMAGE:  # an unreadable XMP stream is treated as none; the info key may remain
        return None


def read_payload_metadata(pdf: bytes) -> tuple[str | None, str | None]:
    """(XMP payload, info-dictionary payload); either may be None.

    The XMP property is read as an element or as an attribute of rdf:Description (PROTOCOL §3).
    Values are returned as found (stripped), unvalidated: the caller parses them as barcodes.
    """
    return payload_metadata_of(open_reader(pdf))


def payload_metadata_of(reader: PdfReader) -> tuple[str | None, str | None]:
    """:func:`read_payload_metadata` of a PDF already opened (and decrypted) by the caller, so
    that a reader that also looks at the pages parses the file once."""
    with damage_as_pdf_error():
        return _xmp_payload(_existing_xmp(reader)), _info_payload(reader)


def _info_payload(reader: PdfReader) -> str | None:
    try:
        info = reader.metadata
        value = info.get(INFO_KEY) if info is not None else None
    except _DAMAGE:
        return None
    return str(value).strip() if value else None


def _xmp_payload(packet: bytes | None) -> str | None:
    if not packet or not _no_dtd(packet):
        return None
    try:
        root = ET.fromstring(packet)  # noqa: S314
    except ET.ParseError:
        start, end = packet.find(b"<x:xmpmeta"), packet.rfind(b"</x:xmpmeta>")
        if start < 0 or end < 0:
            return None
        try:
            root = ET.fromstring(packet[start : end + len(b"</x:xmpmeta>")])  # noqa: S314
        except ET.ParseError:
            return None
    for description in root.iter(f"{{{RDF}}}Description"):
        element = description.find(f"{{{NS}}}payload")
        if element is not None and element.text and element.text.strip():
            return element.text.strip()
        attribute = description.get(f"{{{NS}}}payload")
        if attribute and attribute.strip():
            return attribute.strip()
    return None
