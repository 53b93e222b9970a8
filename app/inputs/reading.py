"""Find the payload(s) to verify in a PDF, an image file or typed barcode text.

PROTOCOL §3: a PDF reader prefers the XMP payload, then the information dictionary, then a QR on
the page; when the metadata and a QR on the page name different records, both are verified and the
document is not verified. Detecting that needs the page QR even when the metadata is present, so
:func:`read_pdf` always looks at the pages, cheaply: first the images embedded in each page (a
stamped badge is one), and only when no page image holds a QR does it render pages with pdfium
at 300 dpi (a vector QR has no image; 150 dpi misses dense codes printed 4 cm wide).

The file is parsed once by pypdf (decryption, the XMP and info-dictionary metadata) and once by
pdfium (the pages, :mod:`app.inputs.pdf_pages`). Page images are taken with pdfium, as stored
(~0.7 ms for a stamped badge, the page load included, against ~5-9 ms for pypdf's decoding
into PIL: bench/applicant_bench.py). Only when they hold no payslip code are the images taken
again by pypdf, as before: pypdf flattens a soft mask onto white (a badge whose transparent
pixels are stored black is a black square as stored, and pdfium renders it so too), and reads a
file pdfium cannot open.

Every failure the user can cause (a damaged, encrypted or unknown file) is an :class:`InputError`
with a plain message; no parser exception escapes as a traceback.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
from PIL import Image
from pypdf import PageObject, PasswordType, PdfReader, PdfWriter

from app.inputs import pdf_pages
from app.output.files import unreadable
from app.scan.decoders import Decoder, decoder_chain
from service.documents.pdf_metadata import payload_metadata_of
from service.protocol.barcode_text import BarcodeTextError, parse_barcode

MAX_INPUT_BYTES = 100 * 1024 * 1024
_log = logging.getLogger(__name__)
_PDF_MAGIC = b"%PDF-"
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


class InputError(Exception):
    """The input cannot be read. The message is plain text fit for a dialog or a CLI line."""


@dataclass(frozen=True)
class PdfReading:
    """What a PDF says about itself (metadata) and what its pages show (QR codes)."""

    metadata_payload: str | None
    """The XMP payload, else the information dictionary's, else None."""
    page_payloads: list[str] = field(default_factory=list)
    """Distinct QR texts found on the pages, in page order (any QR, not only payslip badges)."""
    metadata_source: Literal["xmp", "info"] | None = None
    rendered: bool = False
    """True when pages had to be rendered because no embedded image held a QR."""

    @property
    def disagreement(self) -> bool:
        """The metadata and a page QR name different records (unparseable texts don't count)."""
        wanted = _reference(self.metadata_payload)
        if wanted is None:
            return False
        return any(_reference(text) not in (None, wanted) for text in self.page_payloads)

    def payloads_to_verify(self) -> list[str]:
        """The metadata payload first, then each page QR naming another record."""
        return _payloads_to_verify(self.metadata_payload, self.page_payloads)


def _payloads_to_verify(first: str | None, found: list[str]) -> list[str]:
    """``first`` (if any), then each found text naming a record not yet listed, in order.

    Texts that are no payslip barcode (another QR on the page) are left out; but when nothing
    else is found, the first of them is returned so that the verifier can say why it is not a
    payslip badge instead of the app saying "nothing found".
    """
    chosen: list[str] = []
    references: set[str | None] = set()
    if first is not None:
        chosen.append(first)
        references.add(_reference(first))
    for text in found:
        reference = _reference(text)
        if reference is not None and reference not in references:
            chosen.append(text)
            references.add(reference)
    if not chosen and found:
        chosen.append(found[0])
    return chosen


@dataclass(frozen=True)
class InputReading:
    """The payloads one command-line or dropped input yields, in the order to verify them."""

    kind: Literal["pdf", "image", "text"]
    payloads: list[str]
    pdf: PdfReading | None = None
    data: bytes | None = field(default=None, repr=False, compare=False)
    """The file's bytes, in memory only, for the document check (PROTOCOL §13)."""

    @property
    def disagreement(self) -> bool:
        return self.pdf is not None and self.pdf.disagreement


def _reference(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return parse_barcode(text).service_reference
    except BarcodeTextError:
        return None


def _read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise InputError(f"{path.name} is too large ({size // (1024 * 1024)} MiB)")
        return path.read_bytes()
    except OSError as exc:
        raise InputError(unreadable(path, exc)) from None


def read_image_file(path: str | os.PathLike[str], decoder: Decoder | None = None) -> list[str]:
    """QR texts in a PNG or JPEG file (decoded from the bytes, so any Unicode path works)."""
    file = Path(path)
    return _decode_image_bytes(_read_bytes(file), file.name, decoder or decoder_chain())


def read_image_bytes(data: bytes, name: str, decoder: Decoder | None = None) -> InputReading:
    """An in-memory PNG or JPEG as a reading (the GUI's demo samples are rendered, never saved);
    ``name`` is what an error message calls it."""
    texts = _decode_image_bytes(data, name, decoder or decoder_chain())
    return InputReading(kind="image", payloads=_payloads_to_verify(None, texts))


def read_file(path: str | os.PathLike[str], decoder: Decoder | None = None) -> InputReading:
    """A PDF or an image file, told apart by its first bytes (a file can be named anything).

    The one way a file is read, by ``app verify`` and by the verify screen alike. A file that
    holds no code is no error here: its reading has no payloads, and the caller says so in its
    own words (the verify flow as "no code found", ``app verify`` as an error).
    """
    file = Path(path)
    data = _read_bytes(file)
    decoder = decoder or decoder_chain()
    if _PDF_MAGIC in data[:1024]:
        pdf = _read_pdf_bytes(data, file.name, decoder)
        return InputReading(kind="pdf", payloads=pdf.payloads_to_verify(), pdf=pdf, data=data)
    try:
        texts = _decode_image_bytes(data, file.name, decoder)
    except InputError:
        raise InputError(_neither(file)) from None
    return InputReading(kind="image", payloads=_payloads_to_verify(None, texts), data=data)


def _neither(file: Path) -> str:
    """What a file that is neither a PDF nor a readable image is called, by what its name
    promised: `fake.pdf is not a PDF` says more than "not a readable image" (issue 36)."""
    suffix = file.suffix.lower()
    if suffix == ".pdf":
        return f"{file.name} is not a PDF (it does not start as a PDF file does)"
    if suffix in (".png", ".jpg", ".jpeg"):
        return f"{file.name} is not a readable PNG or JPEG image"
    return f"{file.name} is neither a PDF nor a PNG or JPEG image"


def _decode_image_bytes(data: bytes, name: str, decoder: Decoder) -> list[str]:
    try:
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    except cv2.error:
        image = None
    if image is None:
        raise InputError(f"{name} is not a readable PNG or JPEG image")
    return decoder.decode(image)


def read_pdf(source: str | os.PathLike[str] | bytes, decoder: Decoder | None = None) -> PdfReading:
    """The metadata payload and the page QR texts of a PDF (a path or its bytes)."""
    if isinstance(source, bytes):
        return _read_pdf_bytes(source, "the PDF", decoder or decoder_chain())
    path = Path(source)
    return _read_pdf_bytes(_read_bytes(path), path.name, decoder or decoder_chain())


def _read_pdf_bytes(data: bytes, name: str, decoder: Decoder) -> PdfReading:
    given = data  # the caller's bytes (the reading's): a decrypted copy may replace `data`
    reader, data = _open_pdf(data, name)
    try:
        xmp, info = payload_metadata_of(reader)
    except Exception as exc:  # PdfError, or whatever else a broken file makes pypdf raise
        raise InputError(f"{name} is damaged: its metadata cannot be read") from exc
    metadata, source_kind = _prefer_xmp(xmp, info)
    document = pdf_pages.open_document(data)
    try:
        texts = [] if document is None else pdf_pages.stored_image_texts(document, decoder)
        if not any(_reference(text) for text in texts):
            # pdfium takes an image as stored; pypdf applies its soft mask (a badge whose
            # transparent pixels are stored black), and reads what pdfium could not open.
            texts = list(dict.fromkeys(texts + _page_image_texts(reader, decoder)))
        rendered = False
        if not any(_reference(text) for text in texts):
            # No payslip badge among the images (none at all, or only another QR such as a help
            # link): the badge may be vector art, so look at the rendered pages too.
            if document is None:
                raise InputError(f"{name} is damaged and cannot be rendered")
            texts = list(dict.fromkeys(texts + pdf_pages.rendered_page_texts(document, decoder)))
            rendered = True
    finally:
        if document is not None:
            pdf_pages.keep_document(given, document)  # for the document check that may follow
    return PdfReading(
        metadata_payload=metadata,
        page_payloads=texts,
        metadata_source=source_kind,
        rendered=rendered,
    )


def _prefer_xmp(
    xmp: str | None, info: str | None
) -> tuple[str | None, Literal["xmp", "info"] | None]:
    if xmp is not None and xmp.strip():
        return xmp.strip(), "xmp"
    if info is not None and info.strip():
        return info.strip(), "info"
    return None, None


def _open_pdf(data: bytes, name: str) -> tuple[PdfReader, bytes]:
    """A pypdf reader and the PDF's bytes, or InputError for a broken or locked file.

    A PDF encrypted with an empty user password (only an owner password against editing, common
    for payroll exports) opens in any viewer without a question, so it is read too: decrypted
    once and written out plain, so the metadata reader and the renderer see ordinary bytes.
    A PDF that needs a password to open is refused.
    """
    if _PDF_MAGIC not in data[:1024]:
        raise InputError(f"{name} is not a PDF")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            if reader.decrypt("") == PasswordType.NOT_DECRYPTED:
                raise InputError(f"{name} is password-protected; open it without a password")
            plain = io.BytesIO()
            PdfWriter(clone_from=reader).write(plain)
            data = plain.getvalue()
            reader = PdfReader(io.BytesIO(data))
        if len(reader.pages) == 0:
            raise InputError(f"{name} has no pages")
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many kinds of error on broken files
        raise InputError(f"{name} is damaged and cannot be read") from exc
    return reader, data


def _page_image_texts(reader: PdfReader, decoder: Decoder) -> list[str]:
    """QR texts in the images embedded in the pages."""
    texts: list[str] = []
    for page in reader.pages:
        for pixels in _page_images(page):
            texts.extend(decoder.decode(pixels))
    return list(dict.fromkeys(texts))


def _page_images(page: PageObject) -> Iterator[np.ndarray]:
    """The page's images in grey; one that fails to load is skipped (rendering may still read it).

    Only the exception's type is logged: its message could quote document content.
    """
    try:
        images = list(page.images)
    except Exception as exc:  # a broken image dictionary
        _log.debug("page images unreadable: %s", type(exc).__name__)
        return
    for embedded in images:
        try:
            picture = embedded.image
            pixels = None if picture is None else np.asarray(_on_white(picture).convert("L"))
        except Exception as exc:  # an unsupported filter or a damaged stream
            _log.debug("page image skipped: %s", type(exc).__name__)
            continue
        if pixels is not None:
            yield pixels


def _on_white(picture: Image.Image) -> Image.Image:
    """Flatten transparency onto white, as a viewer shows it: a badge whose transparent
    background pixels are stored black would otherwise come out as a black square."""
    if picture.mode in ("RGBA", "LA", "PA") or "transparency" in picture.info:
        rgba = picture.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba)
    return picture


def read_input(arg: str, decoder: Decoder | None = None) -> InputReading:
    """Interpret a command-line argument: a PDF path, an image path, or raw barcode text.

    A file wins over text (a file can be named anything); the file type is taken from its first
    bytes, not its name. Text that is neither an existing file nor a barcode is an error here, so
    ``app verify`` never sends a typo to the service.
    """
    path = Path(arg)
    if _is_file(path):
        reading = read_file(path, decoder)
        if reading.payloads:
            return reading
        if reading.kind == "pdf":
            raise InputError(f"{path.name} has no payslip metadata and no QR code")
        raise InputError(f"no QR code found in {path.name}")
    if _is_dir(path):
        raise InputError(f"{path.name or arg} is a folder, not a file")
    text = arg.strip()
    if _reference(text) is not None:
        return InputReading(kind="text", payloads=[text])
    looks_like_path = os.sep in text and "://" not in text and "|" not in text
    if looks_like_path or text.lower().endswith((".pdf", *_IMAGE_SUFFIXES)):
        raise InputError(f"{path.name or text} does not exist")
    raise InputError("the input is neither a file nor payslip barcode text")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a 10 kB barcode is "File name too long", NUL is ValueError
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
