"""Decode success and speed of the app's QR chain against its parts, on degraded badge images.

Run: ``python bench/decode_bench.py [--quick] [--px 640 300]``. Every image is generated here (no
files, no network): the badges' own symbols (``badge_symbol``: PROTOCOL §3's two segments, as
``render_badge_png`` draws them), for ciphertexts over the spec's whole range
(``encrypted_pii`` of 200 to 2886 base64url characters, i.e. 150 to 2164 bytes, or 240 to 3463
Base32 characters), rendered at ``--px`` and degraded. All decoders read the
same images in one run, so the printed ratios compare like with like on this machine.
A read counts only when the exact text comes back; any other text is counted as a wrong read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.scan.decoders import (  # after the path fix above
    Decoder,
    ZxingDecoder,
    decoder_chain,
    pyzbar_decoder,
)
from service.documents.badge import badge_symbol
from service.protocol.barcode_text import build_scan_url_v2
from service.protocol.encoding import b64url_encode

SCAN_BASE = "https://verify.example.com"
CIPHERTEXT_BYTES = (150, 400, 600, 1024, 1500, 2164)  # base64url 200 ... 2886 characters
TARGET = 0.98

Image = np.ndarray
Degrade = Callable[[Image, np.random.Generator], Image]


def qr_for(ciphertext: bytes, reference: str) -> tuple[str, np.ndarray]:
    """The scan URL and the module grid of its badge: the very symbol `render_badge_png` draws
    (two segments, M when modules stay >= 3 px at 720 px, else L: PROTOCOL §3)."""
    text = build_scan_url_v2(SCAN_BASE, reference, ciphertext)
    return text, badge_symbol(text).modules


def render(modules: np.ndarray, px: int) -> Image:
    """The code with its quiet zone, smoothly scaled to px x px grey (as a printer or screen)."""
    grid = np.pad(np.where(modules, 0, 255).astype(np.uint8), 4, constant_values=255)
    upscaled = np.kron(grid, np.ones((8, 8), dtype=np.uint8))
    return cv2.resize(upscaled, (px, px), interpolation=cv2.INTER_AREA)


def blur(img: Image, rng: np.random.Generator) -> Image:
    sigma = rng.uniform(0.8, 1.6)
    return cv2.GaussianBlur(img, (0, 0), sigma)


def noise(img: Image, rng: np.random.Generator) -> Image:
    noisy = img.astype(np.float32) + rng.normal(0, rng.uniform(15, 30), img.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def jpeg(img: Image, rng: np.random.Generator) -> Image:
    ok, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 30])
    decoded = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE) if ok else None
    if decoded is None:
        raise RuntimeError("JPEG round trip failed")
    return decoded


def tilt(img: Image, rng: np.random.Generator) -> Image:
    """A 15-25 degree perspective tilt about a random axis, as a code held at an angle."""
    h, w = img.shape[:2]
    angle = np.radians(rng.uniform(15, 25))
    shrink = (1 - np.cos(angle)) * w / 2 + 0.06 * w
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    dst = src.copy()
    side = int(rng.integers(4))
    if side == 0:
        dst[0, 1] += shrink
        dst[3, 1] -= shrink
    elif side == 1:
        dst[1, 1] += shrink
        dst[2, 1] -= shrink
    elif side == 2:
        dst[0, 0] += shrink
        dst[1, 0] -= shrink
    else:
        dst[3, 0] += shrink
        dst[2, 0] -= shrink
    matrix = cv2.getPerspectiveTransform(src, dst)
    return cv2.warpPerspective(img, matrix, (w, h), borderValue=255)


def rotate(img: Image, rng: np.random.Generator) -> Image:
    h, w = img.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), rng.uniform(10, 80), 0.7)
    return cv2.warpAffine(img, matrix, (w, h), flags=cv2.INTER_LINEAR, borderValue=255)


def downscale(img: Image, rng: np.random.Generator) -> Image:
    h, w = img.shape[:2]
    return cv2.resize(img, (w // 2, h // 2), interpolation=cv2.INTER_AREA)


def low_contrast(img: Image, rng: np.random.Generator) -> Image:
    low, high = rng.uniform(70, 110), rng.uniform(150, 190)
    return (low + img.astype(np.float32) * (high - low) / 255).astype(np.uint8)


def page(img: Image, rng: np.random.Generator) -> Image:
    """The code pasted into an A4 page scanned at 150 dpi, among lines of 'text'."""
    sheet = np.full((1754, 1240), 255, np.uint8)
    for y in range(120, 1700, 38):
        x_end = int(rng.integers(600, 1150))
        cv2.line(sheet, (90, y), (x_end, y), 40, 9)
    h, w = img.shape[:2]
    scale = min(1.0, 1100 / w)
    code = cv2.resize(img, (int(w * scale), int(h * scale)), interpolation=cv2.INTER_AREA)
    top = int(rng.integers(60, sheet.shape[0] - code.shape[0] - 60))
    left = int(rng.integers(40, sheet.shape[1] - code.shape[1] - 40))
    sheet[top : top + code.shape[0], left : left + code.shape[1]] = code
    return sheet


def phone_photo(img: Image, rng: np.random.Generator) -> Image:
    """Tilt, uneven light, slight blur, sensor noise and JPEG together."""
    out = tilt(img, rng)
    w = out.shape[1]
    ramp = np.linspace(rng.uniform(0.65, 0.85), 1.0, w, dtype=np.float32)[None, :]
    out = (out.astype(np.float32) * ramp).astype(np.uint8)
    out = cv2.GaussianBlur(out, (0, 0), 0.8)
    out = noise(out, rng)
    return jpeg(out, rng)


DEGRADATIONS: dict[str, Degrade] = {
    "clean": lambda img, rng: img,
    "blur": blur,
    "noise": noise,
    "jpeg30": jpeg,
    "tilt": tilt,
    "rotation": rotate,
    "downscale50": downscale,
    "low_contrast": low_contrast,
    "page": page,
    "phone_photo": phone_photo,
}


@dataclass
class Tally:
    ok: int = 0
    wrong: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.ok / self.total if self.total else 0.0


def build_set(px: int, variants: int, seed: int) -> list[tuple[str, str, int, Image]]:
    """(expected text, degradation, ciphertext bytes, image) for every combination."""
    rng = np.random.default_rng(seed)
    images = []
    for size in CIPHERTEXT_BYTES:
        for _ in range(variants):
            reference = b64url_encode(rng.bytes(16))
            text, code = qr_for(rng.bytes(size), reference)
            clean = render(code, px)
            for name, degrade in DEGRADATIONS.items():
                images.append((text, name, size, degrade(clean, rng)))
    return images


def run(decoder: Decoder, images: list[tuple[str, str, int, Image]]) -> dict[str, object]:
    overall = Tally()
    by_kind: dict[str, Tally] = {}
    by_size: dict[int, Tally] = {}
    times = []
    for text, kind, size, image in images:
        start = time.perf_counter()
        found = decoder.decode(image)
        times.append(time.perf_counter() - start)
        tallies = (overall, by_kind.setdefault(kind, Tally()), by_size.setdefault(size, Tally()))
        for tally in tallies:
            tally.total += 1
            tally.ok += text in found
            tally.wrong += any(other != text for other in found)
    median_ms = 1000 * statistics.median(times)
    return {"overall": overall, "kind": by_kind, "size": by_size, "median_ms": median_ms}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="640 px only, 1 code per size")
    parser.add_argument("--variants", type=int, default=6, help="codes per ciphertext size")
    parser.add_argument("--px", type=int, nargs="+", default=[640, 300, 200], help="code sizes")
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    variants = 1 if args.quick else args.variants
    sizes = [640] if args.quick else args.px

    chain = decoder_chain()
    decoders: list[Decoder] = [chain]
    with_zbar = decoder_chain(use_pyzbar=True)
    if len(with_zbar.decoders) > len(chain.decoders):
        decoders.append(with_zbar)
    decoders.append(ZxingDecoder(upscale=False))
    zbar = pyzbar_decoder()
    if zbar is not None:
        decoders.append(zbar)
    else:
        print("note: pyzbar rows skipped: pyzbar or the libzbar shared library is missing")
    print(f"app chain: {chain.name}")

    passed = True
    for px in sizes:
        started = time.perf_counter()
        images = build_set(px, variants, args.seed)
        print(f"\n{len(images)} images at {px} px, built in {time.perf_counter() - started:.1f} s")
        results = {decoder.name: run(decoder, images) for decoder in decoders}
        print(f"{'decoder':34} {'success':>8} {'wrong':>6} {'median ms':>10}")
        for name, result in results.items():
            overall = result["overall"]
            assert isinstance(overall, Tally)
            print(f"{name:34} {overall.rate:8.1%} {overall.wrong:6d} {result['median_ms']:10.2f}")
        kinds = list(DEGRADATIONS)
        print("\nsuccess by degradation: " + ", ".join(n for n in results))
        for kind in kinds:
            rates = [r["kind"][kind].rate for r in results.values()]  # type: ignore[index]
            print(f"  {kind:14} " + "  ".join(f"{rate:6.0%}" for rate in rates))
        print("success by ciphertext bytes:")
        for size in CIPHERTEXT_BYTES:
            rates = [r["size"][size].rate for r in results.values()]  # type: ignore[index]
            print(f"  {size:14} " + "  ".join(f"{rate:6.0%}" for rate in rates))
        chain_rate = results[chain.name]["overall"].rate  # type: ignore[attr-defined]
        if px == 640:
            verdict = "meets" if chain_rate >= TARGET else "MISSES"
            print(f"\napp chain at 640 px: {chain_rate:.1%} {verdict} the {TARGET:.0%} target")
            passed = passed and chain_rate >= TARGET
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
