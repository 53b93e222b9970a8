"""QR decoders behind one small interface, and the chain the app uses.

zxing-cpp restricted to QR codes is the fastest and most tolerant decoder measured (FINDINGS: 95% at
640 px, ~1 ms); retrying once on a 2x cubic upscale lifts it to 98% for dense codes with thin
modules. pyzbar is optional (it needs the libzbar shared library) and, when asked for, comes last:
it added nothing after zxing-cpp in the measurements, and it slows every frame without a code.

Every decoder returns ``[]`` on anything it cannot read, garbage arrays included: a camera loop or a
file import must never die on an odd frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import cv2
import numpy as np
import zxingcpp

# The smallest QR symbol (version 1) has 21 modules; anything narrower cannot hold a code.
_MIN_SIDE = 21
# Upscaling an already large image (a 300 dpi A4 render is 8.7 MP) costs far more than it gains:
# its modules are already wide. Skip the retry above this many output pixels.
_MAX_UPSCALED_PIXELS = 16_000_000
_QR_ONLY = zxingcpp.BarcodeFormat.QRCode
"""The enum member itself: a module-level BarcodeFormats object outlives nanobind's cleanup and
prints a leak warning at every exit."""


@runtime_checkable
class Decoder(Protocol):
    """Anything that finds QR texts in an image (grey ``HxW`` or BGR ``HxWx3``, uint8)."""

    name: str

    def decode(self, image: np.ndarray) -> list[str]:
        """All QR texts found, in reading order, no duplicates; ``[]`` if none or unreadable."""
        ...


def as_grey(image: object) -> np.ndarray | None:
    """A contiguous uint8 grey view of ``image``, or None when it cannot hold a QR code.

    Accepts grey, BGR and BGRA arrays of any numeric dtype (floats are taken as 0-255, or 0-1
    when no value exceeds 1), so callers need not pre-check what a camera or file gave them.
    """
    try:
        array = np.asarray(image)
        if array.ndim == 3 and array.shape[2] == 1:
            array = array[:, :, 0]
        if array.ndim not in (2, 3) or min(array.shape[:2]) < _MIN_SIDE:
            return None
        converted = _to_uint8(array)
        if converted is None:
            return None
        array = converted
        if array.ndim == 3:
            conversions = {3: cv2.COLOR_BGR2GRAY, 4: cv2.COLOR_BGRA2GRAY}
            code = conversions.get(array.shape[2])
            if code is None:
                return None
            array = cv2.cvtColor(np.ascontiguousarray(array), code)
        return np.ascontiguousarray(array)
    except (TypeError, ValueError, cv2.error):
        return None


def _to_uint8(array: np.ndarray) -> np.ndarray | None:
    if array.dtype == np.uint8:
        return array
    if array.dtype == np.bool_:
        return array.astype(np.uint8) * 255
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        return None
    values = np.nan_to_num(array.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
    if np.issubdtype(array.dtype, np.floating) and values.size and values.max() <= 1.0:
        values = values * 255.0
    return np.clip(values, 0, 255).astype(np.uint8)


def _unique(texts: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each non-empty text (one code can be found twice)."""
    return list(dict.fromkeys(text for text in texts if text))


Corners = Sequence[tuple[float, float]]


def _outside_others(found: Sequence[tuple[str, Corners]]) -> list[str]:
    """Texts of the codes whose centre lies inside no larger code found in the same image.

    A dense, blurred code can contain a patch that zxing-cpp reads as a tiny phantom QR (the
    bench met a 6-digit version 1 "code" in a corner of a version 34 badge). A real code cannot
    sit inside another, and a phantom would make the debounce refuse the frame as showing two
    codes, so it is dropped here.
    """
    shapes = [np.array(corners, dtype=np.float32).reshape(-1, 1, 2) for _, corners in found]
    areas = [abs(float(cv2.contourArea(shape))) for shape in shapes]
    kept = []
    for index, (text, _) in enumerate(found):
        centre = shapes[index].reshape(-1, 2).mean(axis=0)
        point = (float(centre[0]), float(centre[1]))
        nested = any(
            areas[other] > areas[index] and cv2.pointPolygonTest(shapes[other], point, False) > 0
            for other in range(len(found))
            if other != index
        )
        if not nested:
            kept.append(text)
    return _unique(kept)


class ZxingDecoder:
    """zxing-cpp limited to QR codes, with one retry on a 2x cubic upscale when nothing is found.

    Limiting the formats matters: FINDINGS measured 23 ms instead of 3 ms for a 640 px code with
    all formats enabled, and it rules out misreading a 1D barcode on a payslip.
    """

    def __init__(self, *, upscale: bool = True) -> None:
        self.upscale = upscale
        self.name = "zxing-cpp + 2x upscale" if upscale else "zxing-cpp"

    def decode(self, image: np.ndarray) -> list[str]:
        grey = as_grey(image)
        if grey is None:
            return []
        texts = self._read(grey)
        if texts or not self.upscale:
            return texts
        height, width = grey.shape
        if 4 * height * width > _MAX_UPSCALED_PIXELS:
            return []
        try:
            bigger = cv2.resize(grey, (2 * width, 2 * height), interpolation=cv2.INTER_CUBIC)
        except cv2.error:
            return []
        return self._read(bigger)

    @staticmethod
    def _read(grey: np.ndarray) -> list[str]:
        try:
            found = zxingcpp.read_barcodes(grey, formats=_QR_ONLY)  # type: ignore[arg-type]
        except Exception:  # a C++ error on an odd image must not stop a scan
            return []
        if len(found) < 2:
            return _unique(barcode.text for barcode in found)
        return _outside_others([(barcode.text, _zxing_corners(barcode)) for barcode in found])


def _zxing_corners(barcode: zxingcpp.Barcode) -> Corners:
    position = barcode.position
    return [
        (float(p.x), float(p.y))
        for p in (
            position.top_left,
            position.top_right,
            position.bottom_right,
            position.bottom_left,
        )
    ]


class PyzbarDecoder:
    """ZBar through pyzbar, as a last resort. Build it with :func:`pyzbar_decoder`."""

    name = "pyzbar"

    def __init__(self) -> None:
        # Imported here, not at module level: the library is optional and its import fails
        # without the libzbar shared library.
        from pyzbar import pyzbar

        self._pyzbar = pyzbar

    def decode(self, image: np.ndarray) -> list[str]:
        grey = as_grey(image)
        if grey is None:
            return []
        try:
            found = self._pyzbar.decode(grey, symbols=[self._pyzbar.ZBarSymbol.QRCODE])
        except Exception:  # ctypes and ZBar can fail in many ways; none may stop a scan
            return []
        texts: list[tuple[str, Corners]] = []
        for symbol in found:
            try:
                text = symbol.data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # ZBar guessed another charset; a payslip badge is ASCII, so not ours
            texts.append((text, [(float(p.x), float(p.y)) for p in symbol.polygon]))
        return _outside_others(texts)


def pyzbar_decoder() -> PyzbarDecoder | None:
    """A pyzbar decoder when pyzbar and libzbar load, else None."""
    try:
        return PyzbarDecoder()
    except (ImportError, OSError):
        return None


class DecoderChain:
    """Try decoders in order; the first that finds anything wins, so the fast one runs alone."""

    def __init__(self, decoders: Sequence[Decoder]) -> None:
        self.decoders = tuple(decoders)
        self.name = " -> ".join(decoder.name for decoder in self.decoders)

    def decode(self, image: np.ndarray) -> list[str]:
        grey = as_grey(image)  # convert once, not once per decoder
        if grey is None:
            return []
        for decoder in self.decoders:
            texts = decoder.decode(grey)
            if texts:
                return texts
        return []


def decoder_chain(*, use_pyzbar: bool = False) -> DecoderChain:
    """The app's chain: zxing-cpp with the upscale retry, then pyzbar if asked for and loadable.

    pyzbar is off by default: in bench/decode_bench.py and in FINDINGS it read no image that
    zxing-cpp with the upscale retry missed, and it runs on every frame without a code (most
    camera frames), where it roughly triples the cost (~30 ms instead of ~10 ms at 1080 px).
    """
    decoders: list[Decoder] = [ZxingDecoder()]
    if use_pyzbar:
        fallback = pyzbar_decoder()
        if fallback is not None:
            decoders.append(fallback)
    return DecoderChain(decoders)
