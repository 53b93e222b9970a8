"""Badge rendering cost: `render_badge_png` at 720 px against segno's own PNG writer.

Run: ``python bench/badge_bench.py [--rounds 20]``. For each ciphertext size it times, in one run:

* ``render_badge_png(url, 720)``: validation, symbol (EC ladder), drawing, caption, PNG;
* ``segno.make(...)`` alone (the symbol-building cost both sides pay);
* ``segno.make(...)`` + ``qr.save(buf, kind="png", scale=s, border=4)`` for the same two-segment
  symbol at the badge's own integer scale (no caption): what a plain segno badge would cost.

It prints the medians and the ratio render_badge_png / (segno make + save). Timings are
wall-clock medians on this machine; one warm-up call of each is not counted.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import segno

from service.protocol.badge import REFERENCE_WIDTH, render_badge_png
from service.protocol.barcode_text import build_scan_url_v2

SIZES = (16, 150, 600, 1500, 2164)
REFERENCE = "Zq9_-Ab3xYdefGHIjklMNO"


def _median_ms(fn: Callable[[], object], rounds: int) -> float:
    fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _segno_symbol(segments: Any, level: str) -> segno.QRCode:
    return segno.make(segments, error=level, boost_error=False, micro=False)


def _segno_png(segments: Any, level: str, scale: int) -> bytes:
    out = io.BytesIO()
    _segno_symbol(segments, level).save(out, kind="png", scale=scale, border=4)
    return out.getvalue()


def measure(size: int, rounds: int) -> str:
    url = build_scan_url_v2("https://verify.example.com", REFERENCE, os.urandom(size))
    prefix, _, b32 = url.partition("#2.")
    segments = [(prefix + "#2.", segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)]
    try:
        level, qr = "M", _segno_symbol(segments, "M")
    except segno.DataOverflowError:
        level, qr = "L", _segno_symbol(segments, "L")
    scale = REFERENCE_WIDTH // (qr.symbol_size(border=0)[0] + 8)
    ours = _median_ms(lambda: render_badge_png(url, REFERENCE_WIDTH), rounds)
    build = _median_ms(lambda: _segno_symbol(segments, level), rounds)
    theirs = _median_ms(lambda: _segno_png(segments, level, scale), rounds)
    return (
        f"{size:>8} B {qr.version:>3}-{level} {scale:>5} {ours:>14.1f} ms {build:>8.1f} ms "
        f"{theirs:>13.1f} ms {ours / theirs:>6.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="render_badge_png vs segno's PNG writer")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print(
        f"{'ciphertext':>10} {'ver':>5} {'px/m':>5} {'render_badge_png':>17} {'segno make':>11} "
        f"{'segno make+save':>16} {'ratio':>6}"
    )
    for size in SIZES:
        print(measure(size, args.rounds))


if __name__ == "__main__":
    main()
