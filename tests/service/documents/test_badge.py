"""The QR badge (PROTOCOL §3): real decodes of rendered badges, the EC ladder, determinism.

Decoding uses zxing-cpp, the app's decoder, so a pass here means the kiosk reads the badge.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import segno
import zxingcpp
from PIL import Image

from service.documents import qr_symbol
from service.documents.badge import (
    REFERENCE_WIDTH,
    WIDTHS,
    BadgeError,
    badge_symbol,
    choose_error_level,
    render_badge_png,
    render_badge_svg,
)
from service.protocol.barcode_text import build_scan_url_v2, scan_url_prefix
from service.protocol.encoding import b64url_encode, base32_encode
from testbed.factories import build_body, sealed_record
from tests.service.conftest import LiveService

BASE = "https://verify.example.test"
REF = "Zq9_-Ab3xYdefGHIjklMNO"
SVG_NS = "{http://www.w3.org/2000/svg}"


def _ciphertext(size: int) -> bytes:
    return np.random.default_rng(size).bytes(size)  # fixed per size: failures reproduce


def _url(size: int) -> str:
    return build_scan_url_v2(BASE, REF, _ciphertext(size))


def _parts(size: int) -> tuple[str, str]:
    return scan_url_prefix(BASE, REF), base32_encode(_ciphertext(size))


def _read(png: bytes) -> list[zxingcpp.Barcode]:
    image = Image.open(io.BytesIO(png)).convert("L")
    return list(zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode))


@pytest.mark.parametrize(
    ("size", "level"), [(16, "M"), (150, "M"), (600, "M"), (1500, "M"), (2164, "L")]
)
def test_badge_decodes_to_the_exact_scan_url_with_the_chosen_level(size: int, level: str) -> None:
    url = _url(size)
    assert choose_error_level(*_parts(size)) == level
    (result,) = _read(render_badge_png(url))
    assert result.text == url
    assert result.ec_level == level


@pytest.mark.parametrize("size", [16, 2164])
@pytest.mark.parametrize("width", WIDTHS)
def test_every_width_decodes_and_is_exactly_that_wide(width: int, size: int) -> None:
    url = _url(size)
    png = render_badge_png(url, width)
    image = Image.open(io.BytesIO(png))
    assert image.width == width and image.height > width  # QR square plus caption band
    assert [r.text for r in _read(png)] == [url]


def test_other_widths_are_refused() -> None:
    for width in (0, 479, 500, 721, 2000):
        with pytest.raises(BadgeError, match="480, 720, 960, 1440"):
            render_badge_png(_url(16), width)


def test_data_that_cannot_fit_is_a_badge_error_without_the_payload() -> None:
    url = _url(3000)
    with pytest.raises(BadgeError) as caught:
        render_badge_png(url)
    with pytest.raises(BadgeError):
        choose_error_level(*_parts(3000))
    message = str(caught.value)
    assert base32_encode(_ciphertext(3000))[:12] not in message and REF not in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "text",
    [
        f"{BASE}/v/{REF}",  # no v2 fragment
        f"{BASE}/v/{REF}#2.",  # empty ciphertext
        f"{BASE}/v/{REF}#2.mfrggzdf",  # lower case
        f"{BASE}/v/{REF}#2.MFRGGZD1",  # '1' is alphanumeric for QR but not Base32
        f"{BASE}/v/{REF}#2.MZ",  # non-canonical trailing bits
        f"{BASE}/v/short#2.MFRGGZDF",  # not a reference
        f" {BASE}/v/{REF}#2.MFRGGZDF",  # surrounding whitespace
        f"2|{REF}|MFRGGZDF",  # a bare payload is not the QR content
    ],
)
def test_texts_readers_would_reject_are_refused_without_quoting_them(text: str) -> None:
    with pytest.raises(BadgeError) as caught:
        render_badge_png(text)
    assert "MFRGGZD" not in str(caught.value) and "mfrggzd" not in str(caught.value)


def test_bytes_are_deterministic_one_bit_and_carry_no_metadata() -> None:
    url = _url(600)
    for width in WIDTHS:
        png = render_badge_png(url, width)
        assert png == render_badge_png(url, width)
        image = Image.open(io.BytesIO(png))
        assert image.mode == "1" or (image.mode == "P" and len(image.getcolors() or []) <= 3)
        assert not image.text  # no tEXt/iTXt chunks
        for chunk in (b"tIME", b"tEXt", b"iTXt", b"zTXt", b"eXIf"):
            assert chunk not in png


def _modules_from_png(png: bytes, width: int) -> tuple[np.ndarray, int]:
    """The module grid of the badge's QR square, and the pixels per module."""
    grid = np.asarray(Image.open(io.BytesIO(png)).convert("L"))[:width, :width] < 128
    rows, cols = np.nonzero(grid)
    top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    symbol = grid[top:bottom, left:right]
    # The finder pattern's top-left black run is 7 modules.
    run = int(np.argmin(symbol[0])) if not symbol[0].all() else symbol.shape[1]
    scale = run // 7
    assert run == 7 * scale and symbol.shape[0] % scale == 0
    quiet = min(top, left, width - bottom, width - right)
    assert quiet >= 4 * scale, "quiet zone under 4 modules"
    assert (top - (width - bottom)) in (-1, 0, 1), "symbol not centred"
    return symbol[scale // 2 :: scale, scale // 2 :: scale], scale


@pytest.mark.parametrize("size", [16, 600, 2164])
def test_modules_are_whole_pixels_and_every_width_holds_the_same_symbol(size: int) -> None:
    url = _url(size)
    grids = {}
    for width in WIDTHS:
        grid, scale = _modules_from_png(render_badge_png(url, width), width)
        grids[width] = grid
        if width == REFERENCE_WIDTH:
            assert scale >= 3
    reference = grids[REFERENCE_WIDTH]
    assert all(np.array_equal(grid, reference) for grid in grids.values())


def _modules_from_svg(svg: str) -> np.ndarray:
    """Rebuild the dark-module grid from segno's path (runs of 'h' after 'M'/'m' moves)."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg"
    size = int(root.get("width", "0")) // 4
    path = next(p for p in root.iter(f"{SVG_NS}path") if p.get("stroke") == "#000")
    grid = np.zeros((size, size), dtype=bool)
    x = y = 0.0
    for op, a, b in re.findall(r"([Mmh])(-?[\d.]+)(?: (-?[\d.]+))?", path.get("d", "")):
        if op == "M":
            x, y = float(a), float(b)
        elif op == "m":
            x, y = x + float(a), y + float(b)
        else:
            grid[int(y), int(x) : int(x) + int(a)] = True
            x += float(a)
    return grid[4:-4, 4:-4]  # drop the quiet zone


def test_svg_parses_and_holds_the_png_symbol_on_a_white_background() -> None:
    url = _url(600)
    svg = render_badge_svg(url)
    assert svg == render_badge_svg(url)
    assert 'fill="#fff"' in svg  # an opaque quiet zone
    grid, _ = _modules_from_png(render_badge_png(url), REFERENCE_WIDTH)
    assert np.array_equal(_modules_from_svg(svg), grid)


def test_the_symbol_has_two_segments_byte_then_alphanumeric() -> None:
    prefix, b32 = _parts(600)
    two = segno.make(
        [(prefix, segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)],
        error="M",
        boost_error=False,
        micro=False,
    )
    byte_only = segno.make(prefix + b32, error="M", mode="byte", boost_error=False, micro=False)
    grid, _ = _modules_from_png(render_badge_png(prefix + b32), REFERENCE_WIDTH)
    assert grid.shape[0] == two.symbol_size(border=0)[0] < byte_only.symbol_size(border=0)[0]
    assert np.array_equal(grid, np.array(two.matrix, dtype=bool))


def test_a_random_ciphertext_round_trips() -> None:
    url = build_scan_url_v2("http://127.0.0.1:8080", REF, os.urandom(333))
    assert [r.text for r in _read(render_badge_png(url))] == [url]


# --- the fast symbol builder (issue 12) -------------------------------------------------------

#: Ciphertext sizes over the spec's range: 200 to 2886 base64url characters (150 to 2164 bytes).
SET_SIZES = (
    150,
    151,
    200,
    260,
    333,
    400,
    480,
    600,
    700,
    800,
    900,
    1024,
    1100,
    1200,
    1300,
    1400,
    1500,
    1600,
    1700,
    1800,
    1900,
    2000,
    2100,
    2164,
)


def _segno_auto(prefix: str, b32: str, level: str) -> segno.QRCode:
    segments = [(prefix, segno.consts.MODE_BYTE), (b32, segno.consts.MODE_ALPHANUMERIC)]
    return segno.make(segments, error=level, boost_error=False, micro=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [16, 150, 480, 1024, 1500, 1800, 2164])
def test_the_symbol_equals_segnos_with_its_automatic_mask(size: int) -> None:
    """Version, level, mask (the standard's lowest penalty, as segno scores it) and every
    module are those of segno.make with the same two segments and no mask given."""
    prefix, b32 = _parts(size)
    symbol = badge_symbol(prefix + b32)
    reference = _segno_auto(prefix, b32, symbol.error)
    assert (symbol.version, symbol.mask) == (reference.version, reference.mask)
    assert np.array_equal(symbol.modules, np.array(reference.matrix, dtype=bool))
    grid, _ = _modules_from_png(render_badge_png(prefix + b32), REFERENCE_WIDTH)
    assert np.array_equal(grid, symbol.modules)


@pytest.mark.parametrize("size", [150, 600, 1500, 2164])
def test_the_badge_holds_two_segments_byte_prefix_then_alphanumeric_base32(size: int) -> None:
    prefix, b32 = _parts(size)
    grid, _ = _modules_from_png(render_badge_png(prefix + b32), REFERENCE_WIDTH)
    level, version, mask, segments = qr_symbol.read_segments(grid)
    assert level == choose_error_level(prefix, b32)
    assert (version, mask) == (badge_symbol(prefix + b32).version, badge_symbol(prefix + b32).mask)
    assert segments == [("byte", prefix), ("alphanumeric", b32)]
    assert prefix.endswith("#2.")


def test_the_ec_ladder_is_m_while_modules_stay_3px_then_l_then_an_error() -> None:
    """Sweep the sizes: M exactly while segno's M symbol for the text keeps modules >= 3 px at
    720 px, L after that while L does, then a clear error (never a silent smaller badge)."""
    seen = []
    for size in range(1450, 3000, 60):
        prefix, b32 = _parts(size)
        expected = None
        for level in ("M", "L"):
            try:
                qr = _segno_auto(prefix, b32, level)
            except segno.DataOverflowError:
                continue
            if REFERENCE_WIDTH / (qr.symbol_size(border=0)[0] + 8) >= 3:
                expected = level
                break
        if expected is None:
            with pytest.raises(BadgeError, match="too large"):
                choose_error_level(prefix, b32)
        else:
            symbol = badge_symbol(prefix + b32)
            assert symbol.error == choose_error_level(prefix, b32) == expected
            assert REFERENCE_WIDTH // (symbol.size + 8) >= 3
        seen.append(expected)
    assert seen[0] == "M" and "L" in seen and seen[-1] is None  # the sweep crossed both steps


def test_random_symbols_equal_segnos_including_rare_penalty_cases() -> None:
    """Many small random symbols (fast for segno), so the rarely taken paths of the penalty
    scoring (overlapping 1:1:3:1:1 finds) are compared too."""
    rng = np.random.default_rng(2024)
    alphabet = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    for index in range(60):
        b32 = "".join(rng.choice(alphabet, int(rng.integers(1, 160))))
        prefix = scan_url_prefix(BASE, b64url_encode(rng.bytes(16)))
        level = "ML"[index % 2]
        symbol = qr_symbol.build_symbol(
            ((qr_symbol.SEGMENT_BYTE, prefix), (qr_symbol.SEGMENT_ALPHANUMERIC, b32)), level
        )
        reference = _segno_auto(prefix, b32, level)
        assert (symbol.version, symbol.mask) == (reference.version, reference.mask)
        assert np.array_equal(symbol.modules, np.array(reference.matrix, dtype=bool))


@pytest.mark.parametrize("width", [720, 480])
def test_every_badge_of_the_size_set_decodes_with_zxing(width: int) -> None:
    rng = np.random.default_rng(width)
    for size in SET_SIZES:
        reference = b64url_encode(rng.bytes(16))
        url = build_scan_url_v2(BASE, reference, rng.bytes(size))
        results = _read(render_badge_png(url, width))
        assert [r.text for r in results] == [url], f"{size} bytes at {width} px"
        assert results[0].ec_level == badge_symbol(url).error


def test_bytes_are_a_pure_function_of_the_text_across_processes() -> None:
    """Deterministic bytes: a fresh interpreter (no caches, other hash seeds) draws the same."""
    url = _url(700)
    code = (
        "import sys, hashlib; from service.documents.badge import render_badge_png; "
        "print(hashlib.sha256(render_badge_png(sys.argv[1], 960)).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code, url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.stdout.strip() == hashlib.sha256(render_badge_png(url, 960)).hexdigest()


def test_library_and_service_badges_are_byte_identical(live: LiveService) -> None:
    from app.issuer import render_badge_png as library_render

    sealed = sealed_record(live.issuer["encryption_key"], "nz.payslip.v1", "NZ2")
    reply = live.post("/v1/registerAndBuildBarcode", build_body(sealed), live.issuer_token())
    assert reply.status_code == 201, reply.text
    body = reply.json()
    service_png = base64.b64decode(body["barcode"]["data"])
    url = build_scan_url_v2(live.url, body["service_reference"], sealed.ciphertext)
    assert service_png == library_render(url, 720) == render_badge_png(url)
    assert [r.text for r in _read(service_png)] == [url]
