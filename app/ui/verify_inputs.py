"""Files, dropped URLs and demo samples as input readings for the verify screen.

Run on the task runner, never on the GUI thread: decoding a photo or rendering a PDF page takes
a moment.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from app.inputs.reading import InputError, InputReading, read_image_file, read_pdf
from app.scan.decoders import decoder_chain

_PDF_MAGIC = b"%PDF-"


def reading_from_file(path: Path) -> InputReading:
    """A PDF or an image file, told apart by its first bytes (a file can be named anything).

    Unlike :func:`app.inputs.reading.read_input`, a file without a code is not an error here: it
    becomes a reading without payloads, which the flow reports as "no code found".
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
    except FileNotFoundError:
        raise InputError(f"{path.name} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"{path.name} is a folder, not a file") from None
    except OSError:
        raise InputError(f"{path.name} cannot be read") from None
    decoder = decoder_chain()
    if _PDF_MAGIC in head:
        pdf = read_pdf(path, decoder)
        return InputReading(kind="pdf", payloads=pdf.payloads_to_verify(), pdf=pdf)
    return InputReading(kind="image", payloads=read_image_file(path, decoder))


def reading_from_image_bytes(data: bytes) -> InputReading:
    """The image pipeline on an in-memory PNG or JPEG (the demo samples' rendered badges)."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise InputError("the sample image could not be decoded")
    return InputReading(kind="image", payloads=decoder_chain().decode(image))


def sample_badge_png(scan_url: str) -> bytes:
    """The badge a payslip of this scan URL carries, rendered in memory, never to disk."""
    from service.protocol.badge import render_badge_png

    return bytes(render_badge_png(scan_url))


def local_files(urls: list[object]) -> list[Path]:
    paths = []
    for url in urls:
        to_local = getattr(url, "toLocalFile", None)
        if to_local is not None and (text := to_local()):
            paths.append(Path(text))
    return paths
