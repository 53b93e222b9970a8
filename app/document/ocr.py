"""Words and their boxes on a page image, read by Tesseract through tesserocr (in process: the
image never leaves memory; pytesseract would write it to a temporary file).

The model is ``eng.traineddata``: the bundle's ``tessdata/`` first, then ``TESSDATA_PREFIX``,
then Debian's folders (scripts/bootstrap installs ``tesseract-ocr-eng``). Without one, or
without tesserocr, :func:`available` is False and a page that needs OCR is not compared.
One engine per thread (Tesseract's API object is not thread-safe). Words read with confidence
under :data:`SURE_CONFIDENCE` may confirm a field but never accuse a page.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from app.document.layout import Word

SURE_CONFIDENCE = 80.0
_SPARSE_TEXT = 11  # tesseract's page segmentation mode for text anywhere on the page
_log = logging.getLogger(__name__)
_local = threading.local()


def tessdata() -> Path | None:
    """The folder holding ``eng.traineddata``, or None."""
    candidates: list[Path] = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        candidates.append(Path(bundle) / "tessdata")
    prefix = os.environ.get("TESSDATA_PREFIX")
    if prefix:
        candidates += [Path(prefix), Path(prefix) / "tessdata"]
    candidates += sorted(Path("/usr/share/tesseract-ocr").glob("*/tessdata"), reverse=True)
    candidates.append(Path("/usr/share/tessdata"))
    return next((c for c in candidates if (c / "eng.traineddata").is_file()), None)


def available() -> bool:
    return _engine() is not None


def _engine() -> Any:
    if hasattr(_local, "api"):
        return _local.api
    _local.api = None
    folder = tessdata()
    if folder is None:
        return None
    try:
        import tesserocr
    except ImportError:
        return None
    try:
        _local.api = tesserocr.PyTessBaseAPI(path=str(folder), lang="eng", psm=_SPARSE_TEXT)
    except RuntimeError as exc:
        _log.warning("the OCR engine cannot start: %s", type(exc).__name__)
    return _local.api


def read_words(grey: np.ndarray) -> list[Word] | None:
    """The words on a grey page image (pixels, y down), or None when there is no OCR engine."""
    api = _engine()
    if api is None:
        return None
    import tesserocr

    api.SetImage(Image.fromarray(grey))
    api.Recognize()
    words: list[Word] = []
    level = tesserocr.RIL.WORD
    iterator = api.GetIterator()
    for item in tesserocr.iterate_level(iterator, level):
        text = item.GetUTF8Text(level)
        box = item.BoundingBox(level)
        if not text or not text.strip() or box is None:
            continue
        x0, y0, x1, y1 = box
        sure = item.Confidence(level) >= SURE_CONFIDENCE
        words.append(Word(text.strip(), x0, y0, x1, y1, sure))
    api.Clear()
    return words
