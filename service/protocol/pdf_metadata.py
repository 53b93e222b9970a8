"""The payload in a PDF's metadata (PROTOCOL §3): an XMP property and an info-dictionary key.

Only the bare barcode payload is written, never plaintext PII. An existing XMP packet is kept: our
property goes into its own rdf:Description, replacing an earlier one of ours.

A PDF that pypdf reads strictly gets the metadata as an incremental update (`pdf_append`: new
versions of the catalog and the information dictionary after the original bytes); any other is
rewritten whole.
"""

from __future__ import annotations

import io
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from pypdf import PdfReader, PdfWriter
from pypdf.errors import PyPdfError
from pypdf.generic import (
    ByteStringObject,
    DecodedStreamObject,
    DictionaryObject,
    IndirectObject,
    NameObject,
    StreamObject,
)

from service.protocol.barcode_text import BarcodeTextError, parse_barcode
from service.protocol.pdf_append import Update, open_strict

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
# cloning or writing. Callers get one PdfError instead.
_DAMAGE = (
    PyPdfError,
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


def open_reader(pdf: bytes) -> PdfReader:
    """A reader for an unencrypted, parseable PDF (an encrypted one cannot be rewritten)."""
    with damage_as_pdf_error():
        reader = PdfReader(io.BytesIO(pdf), strict=False)
        if reader.is_encrypted:
            raise PdfError("the PDF is encrypted; save an unprotected copy first")
        _ = len(reader.pages)
    return reader


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
    strict = open_strict(pdf)
    if strict is not None:
        try:
            update = Update(pdf, strict)
            update_metadata(update, strict, payload)
            return update.to_bytes()
        except _DAMAGE:  # damage a strict reader met only now: rewrite it whole after all
            pass
    reader = open_reader(pdf)
    with damage_as_pdf_error():
        writer = PdfWriter(clone_from=reader)
    return _write(writer, _existing_xmp(reader), payload)


def update_metadata(update: Update, reader: PdfReader, payload: str) -> None:
    """The payload into `update`: a new XMP stream, the catalog pointing to it, and the
    information dictionary (a new version of it, or a new one) with our key."""
    check_payload(payload)
    stream = DecodedStreamObject()
    stream.set_data(_packet(_existing_xmp(reader), payload))
    stream[NameObject("/Type")] = NameObject("/Metadata")
    stream[NameObject("/Subtype")] = NameObject("/XML")
    root = reader.trailer.raw_get("/Root")
    catalog = DictionaryObject(reader.root_object)
    catalog[NameObject("/Metadata")] = update.add(stream)
    update.replace(root, catalog)
    found = reader.trailer.raw_get("/Info") if "/Info" in reader.trailer else None
    old = found.get_object() if found is not None else None
    info = DictionaryObject(old if isinstance(old, DictionaryObject) else {})
    # Written as a hex string (<...>), the same text to every reader: pypdf writes a literal
    # string byte by byte in Python, a tenth of a millisecond for a 700-character payload.
    info[NameObject(INFO_KEY)] = ByteStringObject(payload.encode("ascii"))
    if isinstance(found, IndirectObject) and isinstance(old, DictionaryObject):
        update.replace(found, info)
    else:
        update.set_trailer("/Info", update.add(info))


def _write(writer: PdfWriter, existing_xmp: bytes | None, payload: str) -> bytes:
    check_payload(payload)
    with damage_as_pdf_error():
        writer.xmp_metadata = _packet(existing_xmp, payload)
        # pypdf's setter leaves a bare stream; PROTOCOL §3 (and PDF 14.3.2) want it typed.
        stream = writer.root_object["/Metadata"].get_object()
        if not isinstance(stream, StreamObject):
            raise PdfError("the PDF's metadata could not be written")
        stream[NameObject("/Type")] = NameObject("/Metadata")
        stream[NameObject("/Subtype")] = NameObject("/XML")
        writer.add_metadata({INFO_KEY: payload})
        out = io.BytesIO()
        writer.write(out)
    return out.getvalue()


def read_payload_metadata(pdf: bytes) -> tuple[str | None, str | None]:
    """(XMP payload, info-dictionary payload); either may be None.

    The XMP property is read as an element or as an attribute of rdf:Description (PROTOCOL §3).
    Values are returned as found (stripped), unvalidated: the caller parses them as barcodes.
    """
    reader = open_reader(pdf)
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
