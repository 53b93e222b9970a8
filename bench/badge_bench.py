"""Badge rendering: the kept way against the other ways measured for issue 12, side by side.

Run: ``python bench/badge_bench.py [--rounds 30]``. For each ciphertext size (the spec's range,
150 to 2164 bytes) it prints median milliseconds, all measured in this one run:

* ``badge``: ``render_badge_png(url, 720)`` as shipped: split and check the scan URL, the fast
  symbol (``service.documents.qr_symbol``: explicit byte + alphanumeric segments, numpy
  Reed-Solomon, placement and vectorised mask penalties), numpy drawing, zlib PNG;
* ``symbol``: the fast symbol alone;
* ``segno auto``: ``segno.make`` with the same two segments and automatic mask (the baseline
  issue 12 measures against) and ``segno fixed``: the same with ``mask=`` given;
* ``segno fixed + numpy mask``: option A of issue 12, segno building the symbol with a fixed mask
  and the eight masks scored by numpy over its matrix: segno fixed + our penalty scoring;
* ``zint`` / ``zxing``: the C/C++ encoders from the package index (zint-bindings, if installed,
  and zxing-cpp's ``create_barcode``), with the segment layout their symbols actually carry
  (read back from the modules): neither lets the caller name the segment modes;
* ``PIL png``: Pillow mode "1" writing the same pixels (``optimize=True`` as the first version
  did), against our numpy + zlib writer inside ``badge``.

Ratios are against ``segno auto``. Wall-clock medians; one warm-up call each is not counted.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import segno
import zxingcpp
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.documents import qr_symbol  # after the path fix above
from service.documents.badge import REFERENCE_WIDTH, badge_symbol, render_badge_png
from service.protocol.barcode_text import build_scan_url_v2

try:
    import zint  # type: ignore[import-not-found]
except ImportError:  # not a dependency: measured when present
    zint = None

SIZES = (150, 480, 1024, 1500, 2164)
REFERENCE = "Zq9_-Ab3xYdefGHIjklMNO"


def median_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def layout_of(modules: np.ndarray, prefix: str, b32: str) -> str:
    """The segment modes a symbol carries ('byte+alpha'), and whether they split the text as
    PROTOCOL §3 says (byte through `#2.`, then the Base32 in alphanumeric)."""
    _, _, _, segments = qr_symbol.read_segments(modules)
    names = "+".join(name[:5] for name, _ in segments)
    exact = segments == [("byte", prefix), ("alphanumeric", b32)]
    return f"{names} ({'as PROTOCOL §3' if exact else 'NOT as PROTOCOL §3'})"


def segno_segments(prefix: str, b32: str) -> Any:
    return [(prefix, segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)]


def zint_symbol(url: str, level: str) -> Any:
    symbol = zint.Symbol()
    symbol.symbology = zint.Symbology.QRCODE
    symbol.option_1 = {"L": 1, "M": 2}[level]
    symbol.encode(url)
    return symbol


def zint_modules(symbol: Any) -> np.ndarray:
    rows = np.frombuffer(bytes(symbol.encoded_data), dtype=np.uint8).reshape(200, 144)
    bits = np.unpackbits(rows, axis=1, bitorder="little")
    return bits[: symbol.rows, : symbol.width].astype(bool)


def measure(size: int, rounds: int) -> list[str]:
    rng = np.random.default_rng(size)
    url = build_scan_url_v2("https://verify.example.com", REFERENCE, rng.bytes(size))
    prefix, _, b32 = url.partition("#2.")
    prefix += "#2."
    symbol = badge_symbol(url)
    level = symbol.error
    segments = segno_segments(prefix, b32)

    def make_auto() -> segno.QRCode:
        return segno.make(segments, error=level, boost_error=False, micro=False)

    def make_fixed() -> segno.QRCode:
        return segno.make(segments, error=level, boost_error=False, micro=False, mask=0)

    fixed = make_fixed()
    layout = qr_symbol._layout(fixed.version)
    unmasked = np.array(fixed.matrix, dtype=np.uint8) ^ layout.masks[0]

    def fixed_plus_numpy() -> int:
        make_fixed()
        return int(np.argmin(qr_symbol._penalties(unmasked, layout.maskbits)))

    png = render_badge_png(url, REFERENCE_WIDTH)
    pixels = np.asarray(Image.open(io.BytesIO(png)))

    def pillow_png() -> bytes:
        out = io.BytesIO()
        Image.fromarray(pixels).convert("1").save(out, format="PNG", optimize=True)
        return out.getvalue()

    times = {
        "badge": median_ms(lambda: render_badge_png(url, REFERENCE_WIDTH), rounds),
        "symbol": median_ms(lambda: badge_symbol(url), rounds),
        "segno auto": median_ms(make_auto, max(5, rounds // 3)),
        "segno fixed": median_ms(make_fixed, rounds),
        "segno fixed + numpy mask": median_ms(fixed_plus_numpy, rounds),
        "PIL png": median_ms(pillow_png, rounds),
    }
    zx = zxingcpp.create_barcode(url, zxingcpp.BarcodeFormat.QRCode, ec_level=level)
    times["zxing"] = median_ms(
        lambda: zxingcpp.create_barcode(url, zxingcpp.BarcodeFormat.QRCode, ec_level=level),
        rounds,
    )
    zx_modules = np.asarray(zx.to_image(scale=1, add_quiet_zones=False)) < 128
    layouts = {
        "badge": layout_of(symbol.modules, prefix, b32),
        "zxing": layout_of(zx_modules, prefix, b32),
    }
    if zint is not None:
        times["zint"] = median_ms(lambda: zint_symbol(url, level), rounds)
        layouts["zint"] = layout_of(zint_modules(zint_symbol(url, level)), prefix, b32)
    base = times["segno auto"]
    lines = [f"\n{size} B ciphertext -> version {symbol.version}-{level}, {len(url)} characters"]
    for name, ms in times.items():
        note = f"  segments: {layouts[name]}" if name in layouts else ""
        lines.append(f"  {name:26} {ms:8.2f} ms  ratio {ms / base:6.3f}{note}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; zint-bindings {'present' if zint else 'not installed'}")
    for size in SIZES:
        print("\n".join(measure(size, args.rounds)))


if __name__ == "__main__":
    main()
