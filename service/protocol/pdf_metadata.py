"""The payload in a PDF's metadata (PROTOCOL §3): an XMP property and an info-dictionary key.

Only the bare barcode payload is written, never plaintext PII. An existing XMP packet is kept: our
property goes into its own rdf:Description, replacing an earlier one of ours.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from pypdf import PdfReader, PdfWriter
from pypdf.errors import PdfReadError, PyPdfError

NS = "urn:payslip-verify:xmp:1.0/"
INFO_KEY = "/PayslipVerifyPayload"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
X = "adobe:ns:meta/"

ET.register_namespace("x", X)
ET.register_namespace("rdf", RDF)
ET.register_namespace("pv", NS)


class PdfError(ValueError):
    """The PDF cannot be read or written (encrypted, damaged). The message is plain text."""


def open_reader(pdf: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(pdf), strict=False)
        if reader.is_encrypted:
            raise PdfError("the PDF is encrypted; save an unprotected copy first")
        _ = len(reader.pages)
    except PdfError:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise PdfError("the PDF is damaged or not a PDF") from exc
    return reader


def _packet(existing: bytes | None, payload: str) -> bytes:
    root: ET.Element | None = None
    if existing:
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
    except (PyPdfError, KeyError, AttributeError, ValueError):
        return None


def write_payload_metadata(pdf: bytes, payload: str) -> bytes:
    reader = open_reader(pdf)
    writer = PdfWriter(clone_from=reader)
    return _write(writer, _existing_xmp(reader), payload)


def _write(writer: PdfWriter, existing_xmp: bytes | None, payload: str) -> bytes:
    writer.xmp_metadata = _packet(existing_xmp, payload)
    writer.add_metadata({INFO_KEY: payload})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def read_payload_metadata(pdf: bytes) -> tuple[str | None, str | None]:
    """(XMP payload, info-dictionary payload); either may be None."""
    reader = open_reader(pdf)
    return _xmp_payload(_existing_xmp(reader)), _info_payload(reader)


def _info_payload(reader: PdfReader) -> str | None:
    try:
        info = reader.metadata
        value = info.get(INFO_KEY) if info is not None else None
    except (PyPdfError, ValueError, KeyError):
        return None
    return str(value).strip() if value else None


def _xmp_payload(packet: bytes | None) -> str | None:
    if not packet:
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
