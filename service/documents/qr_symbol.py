"""A fast QR symbol builder for the badge: explicit segments, numpy over the module matrix.

Why not segno alone: segno builds the same symbol in pure Python, and choosing the mask (eight
trial symbols, each scored module by module) is three quarters of its ~35-45 ms per badge; even
with a fixed mask its codeword placement and Reed-Solomon loops cost ~8 ms. No C or Rust encoder
on the package index lets us name the segment modes (zint-bindings and zxing-cpp choose modes
themselves), and PROTOCOL §3 fixes them: byte mode for the URL prefix, alphanumeric for Base32.

So the symbol is built here from segno's own tables (`segno.consts`: block structure, capacities,
Galois field, format and version words) and function-pattern helpers (`segno.encoder`), with the
per-module work done by numpy:

* Reed-Solomon: the error codewords are a linear map of the data codewords over GF(256); the
  map's rows (x^n mod g) are cached per block shape, and all blocks are computed at once;
* placement: the zigzag order of the encoding region is computed once per version and cached;
* masking: the eight candidates are stacked and scored together with segno's penalty rules
  (ISO/IEC 18004 N1-N4, scored on the symbol without format information, exactly as segno
  does), so the chosen mask, and every module, equals what `segno.make` picks automatically.
  The tests compare whole symbols with segno's across the payload range.

Determinism: the output depends on the text and the error level only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import segno.consts
import segno.encoder

# segno's tables and helpers are untyped; segno is pinned (==) because these are its internals.
consts: Any = segno.consts
encoder: Any = segno.encoder

__all__ = ["SEGMENT_ALPHANUMERIC", "SEGMENT_BYTE", "QrOverflow", "Symbol", "build_symbol"]

SEGMENT_BYTE = consts.MODE_BYTE
SEGMENT_ALPHANUMERIC = consts.MODE_ALPHANUMERIC
_LEVELS = {"L": consts.ERROR_LEVEL_L, "M": consts.ERROR_LEVEL_M}
_ALNUM_CODES = np.full(256, -1, dtype=np.int32)
_ALNUM_CODES[np.frombuffer(consts.ALPHANUMERIC_CHARS, dtype=np.uint8)] = np.arange(45)
# Galois field tables for products by logarithms: log(0) is a sentinel far past the 510 entries
# of exp (no modulo needed below that), and every sum with the sentinel in it lands on a zero.
_LOG_ZERO = 1024
_GF_EXP = np.zeros(2 * _LOG_ZERO + 1, dtype=np.uint8)  # up to log(0) + log(0)
_GF_EXP[: len(consts.GALIOS_EXP)] = consts.GALIOS_EXP
_GF_LOG = np.array(consts.GALIOS_LOG, dtype=np.int32)
_GF_LOG[0] = _LOG_ZERO
_N3 = (1, 0, 1, 1, 1, 0, 1)


class QrOverflow(ValueError):
    """The segments do not fit in a version 40 symbol at the requested error level."""


@dataclass(frozen=True)
class Symbol:
    """A finished QR symbol: `modules[i, j]` is True for a dark module (no quiet zone)."""

    modules: np.ndarray
    version: int
    error: str
    mask: int
    segments: tuple[tuple[int, int], ...]  # (mode, character count) in order

    @property
    def size(self) -> int:
        return int(self.modules.shape[0])


# --- data codewords -------------------------------------------------------------------------


def _range_of(version: int) -> int:
    return 1 if version < 10 else (2 if version < 27 else 3)


def _bits(values: np.ndarray, width: int) -> np.ndarray:
    """Each value as `width` bits, most significant first, one uint8 0/1 per bit."""
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint32)
    return ((values.astype(np.uint32)[:, None] >> shifts) & 1).astype(np.uint8).ravel()


def _segment_length(mode: int, text: str, version_range: int) -> int:
    count_len = int(consts.CHAR_COUNT_INDICATOR_LENGTH[mode][version_range])
    if mode == SEGMENT_BYTE:
        return 4 + count_len + 8 * len(text.encode("iso-8859-1"))
    return 4 + count_len + 11 * (len(text) // 2) + 6 * (len(text) % 2)


def _segment_bits(mode: int, text: str, version_range: int) -> np.ndarray:
    """One segment with its mode indicator and character count, as bits."""
    count_len = consts.CHAR_COUNT_INDICATOR_LENGTH[mode][version_range]
    if mode == SEGMENT_BYTE:
        data = np.frombuffer(text.encode("iso-8859-1"), dtype=np.uint8)
        body = np.unpackbits(data)
        count = len(data)
    elif mode == SEGMENT_ALPHANUMERIC:
        codes = _ALNUM_CODES[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
        if (codes < 0).any():
            raise ValueError("a character outside the QR alphanumeric set")
        pairs = codes[: len(codes) // 2 * 2].reshape(-1, 2)
        body = _bits(pairs[:, 0] * 45 + pairs[:, 1], 11)
        if len(codes) % 2:
            body = np.concatenate((body, _bits(codes[-1:], 6)))
        count = len(codes)
    else:
        raise ValueError("only byte and alphanumeric segments are supported")
    head = _bits(np.array([mode]), 4)
    return np.concatenate((head, _bits(np.array([count]), count_len), body))


def _data_codewords(
    segments: tuple[tuple[int, str], ...], level: int
) -> tuple[int, np.ndarray] | None:
    """(version, data codewords) of the smallest version that holds the segments, or None."""
    lengths = {
        vrange: sum(_segment_length(mode, text, vrange) for mode, text in segments)
        for vrange in (1, 2, 3)
    }
    for version in range(1, 41):
        vrange = _range_of(version)
        length = lengths[vrange]
        capacity = consts.SYMBOL_CAPACITY[version][level]
        if length > capacity:
            continue
        terminator = min(capacity - length, 4)
        # segno pads with 8 zero bits even when the stream already ends on a codeword boundary
        # (a harmless 0x00 codeword after the terminator); kept for byte-equal symbols.
        pad = 8 - (length + terminator) % 8 if length + terminator < capacity else 0
        stream = np.concatenate(
            [_segment_bits(mode, text, vrange) for mode, text in segments]
            + [np.zeros(terminator + pad, dtype=np.uint8)]
        )
        data = np.packbits(stream)
        pads = capacity // 8 - len(data)
        filler = np.resize(np.array([0xEC, 0x11], dtype=np.uint8), max(pads, 0))
        return version, np.concatenate((data, filler))
    return None


# --- Reed-Solomon -------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _rs_map(data_len: int, ecc_len: int) -> np.ndarray:
    """log(x^(data_len-1-i+ecc_len) mod g) for every data position i (row i)."""
    gen = consts.GEN_POLY[ecc_len]  # logs of g's coefficients after the leading 1
    exp = consts.GALIOS_EXP
    gcoef = [exp[g] for g in gen]
    rows = []
    current = list(gcoef)  # x^ecc_len mod g
    for _ in range(data_len):
        rows.append(list(current))
        top = current[0]
        current = [*current[1:], 0]
        if top:
            ltop = consts.GALIOS_LOG[top]
            current = [c ^ exp[ltop + g] for c, g in zip(current, gen, strict=True)]
    table = np.array(rows[::-1], dtype=np.int32)  # row i: the power for data position i
    logs: np.ndarray = _GF_LOG[table]
    return logs


def _ecc(blocks: np.ndarray, ecc_len: int) -> np.ndarray:
    """Error codewords of equally long data blocks (rows), all at once."""
    log_map = _rs_map(blocks.shape[1], ecc_len)
    products = _GF_EXP[_GF_LOG[blocks][:, :, None] + log_map[None, :, :]]
    ecc: np.ndarray = np.bitwise_xor.reduce(products, axis=1)
    return ecc


def _final_message(version: int, level: int, data: np.ndarray) -> np.ndarray:
    """Interleaved data then error codewords (ISO/IEC 18004 7.6), as bits with remainder zeros."""
    data_blocks: list[np.ndarray] = []
    ecc_blocks: list[np.ndarray] = []
    start = 0
    for info in consts.ECC[version][level]:
        size = info.num_data * info.num_blocks
        group = data[start : start + size].reshape(info.num_blocks, info.num_data)
        start += size
        ecc = _ecc(group, info.num_total - info.num_data)
        data_blocks.extend(group)
        ecc_blocks.extend(ecc)
    parts = []
    for blocks in (data_blocks, ecc_blocks):
        longest = max(len(b) for b in blocks)
        grid = np.full((len(blocks), longest), -1, dtype=np.int16)
        for row, block in enumerate(blocks):
            grid[row, : len(block)] = block
        flat = grid.T.ravel()
        parts.append(flat[flat >= 0].astype(np.uint8))
    return np.unpackbits(np.concatenate(parts))


# --- the matrix ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    template: np.ndarray  # uint8: function patterns, 0 in the reserved areas, 2 = encoding region
    rows: np.ndarray  # placement order of the encoding region
    cols: np.ndarray
    masks: np.ndarray  # (8, n, n) uint8, each mask pattern restricted to the encoding region
    maskbits: np.ndarray  # (n, n) uint8: bit m set where mask m flips the module


@lru_cache(maxsize=40)
def _layout(version: int) -> _Layout:
    size = version * 4 + 17
    matrix = encoder.make_matrix(size, size)
    encoder.add_finder_patterns(matrix, size, size)
    encoder.add_alignment_patterns(matrix, size, size)
    template = np.array([list(row) for row in matrix], dtype=np.uint8)
    region = template == 2
    rows: list[int] = []
    cols: list[int] = []
    # The zigzag of ISO/IEC 18004 7.7.3, as segno's add_codewords walks it.
    for right in range(size - 1, 0, -2):
        if right <= 6:
            right -= 1
        for vertical in range(size):
            for z in range(2):
                j = right - z
                upwards = ((right & 2) == 0) ^ (j < 6)
                i = (size - 1 - vertical) if upwards else vertical
                if region[i, j]:
                    rows.append(i)
                    cols.append(j)
    r, c = np.indices((size, size))  # row, column
    patterns = (
        (r + c) % 2 == 0,
        r % 2 == 0,
        c % 3 == 0,
        (r + c) % 3 == 0,
        (r // 2 + c // 3) % 2 == 0,
        (r * c) % 2 + (r * c) % 3 == 0,
        ((r * c) % 2 + (r * c) % 3) % 2 == 0,
        ((r + c) % 2 + (r * c) % 3) % 2 == 0,
    )
    masks = np.stack([p & region for p in patterns]).astype(np.uint8)
    maskbits = (masks << np.arange(8, dtype=np.uint8)[:, None, None]).sum(axis=0, dtype=np.uint8)
    return _Layout(template, np.array(rows), np.array(cols), masks, maskbits)


_BITS_OF = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)  # byte -> its bits


def _bit_counts(packed: np.ndarray) -> np.ndarray:
    """How many elements have bit m set, for m = 0..7 (one count per candidate mask): a
    histogram of the byte values times each value's bits."""
    counts: np.ndarray = np.bincount(packed.ravel(), minlength=256) @ _BITS_OF
    return counts


def _shifted(flags: np.ndarray, by: int) -> np.ndarray:
    """`flags` moved `by` places along each line (zeros shifted in)."""
    out = np.zeros_like(flags)
    out[:, :, by:] = flags[:, :, :-by]
    return out


def _penalties(base: np.ndarray, maskbits: np.ndarray) -> np.ndarray:
    """segno's mask_scores (N1 + N2 + N3 + N4) of the eight masked symbols, all at once.

    Bit-parallel: every module is one byte whose bit m is its colour under mask m, so each
    comparison below evaluates all eight candidates in one numpy operation on n x n bytes."""
    size = base.shape[0]
    packed = np.where(base.astype(bool), np.uint8(0xFF), np.uint8(0)) ^ maskbits
    lines = np.stack((packed, packed.T))  # rows, then columns as rows
    same = ~(lines[:, :, 1:] ^ lines[:, :, :-1])
    # N1: a run of L >= 5 scores L - 2: 3 for its first window of five, 1 for each further one
    # (a window of five that is also the end of a window of six).
    pair = same[:, :, :-1] & same[:, :, 1:]
    five = pair[:, :, :-2] & pair[:, :, 2:]
    n1 = 3 * _bit_counts(five) - 2 * _bit_counts(five[:, :, 1:] & five[:, :, :-1])
    # N2: 2x2 blocks of one colour, 3 points each.
    rows_same = same[0]
    blocks = rows_same[1:, :] & rows_same[:-1, :] & ~(packed[1:, 1:] ^ packed[:-1, 1:])
    n2 = 3 * _bit_counts(blocks)
    # N3: 1:1:3:1:1 with four light modules before or after (the symbol's edge counts as light).
    padded = np.zeros((2, size, size + 8), dtype=np.uint8)
    padded[:, :, 4:-4] = lines
    span = size - 6  # start positions in the symbol
    match = padded[:, :, 4 : 4 + span] & ~padded[:, :, 5 : 5 + span]
    for k, bit in enumerate(_N3[2:], start=2):
        piece = padded[:, :, 4 + k : 4 + k + span]
        match &= piece if bit else ~piece
    two = ~(padded[:, :, :-1] | padded[:, :, 1:])
    four = two[:, :, :-2] & two[:, :, 2:]  # four[p]: padded p .. p + 3 all light
    quiet = four[:, :, :span] | four[:, :, 11 : 11 + span]
    # segno searches each line left to right: after a counted match it resumes 7 further on,
    # after an uncounted one 4 further on, so a match 4 or 6 after a counted one is skipped:
    # found[p] = match[p] and not counted[p - 4] or counted[p - 6]. Chains settle left to right.
    counted = match & quiet
    for _ in range(size):
        found = match & ~(_shifted(counted, 4) | _shifted(counted, 6))
        again = found & quiet
        if np.array_equal(again, counted):
            break
        counted = again
    n3 = 40 * _bit_counts(counted)
    # N4: 10 points per 5 % away from half dark (segno's float arithmetic, kept exactly).
    darks = _bit_counts(packed)
    n4 = np.array([10 * int(abs(float(d) / (size**2) * 100 - 50) / 5) for d in darks])
    total: np.ndarray = n1 + n2 + n3 + n4
    return total


def build_symbol(segments: tuple[tuple[int, str], ...], error: str) -> Symbol:
    """The smallest QR symbol holding `segments` ((mode, text) in order) at level `error`.

    Raises QrOverflow when they do not fit in version 40. The mask is the one of lowest penalty
    (the first of equals), as segno chooses it.
    """
    level = _LEVELS[error]
    found = _data_codewords(segments, level)
    if found is None:
        raise QrOverflow("the data does not fit in a QR code at this error level")
    version, data = found
    layout = _layout(version)
    bits = _final_message(version, level, data)
    base = layout.template.copy()
    placed = np.zeros(len(layout.rows), dtype=np.uint8)  # remainder bits stay 0
    placed[: len(bits)] = bits
    base[layout.rows, layout.cols] = placed
    mask = int(np.argmin(_penalties(base, layout.maskbits)))
    chosen = base ^ layout.masks[mask]
    _place_format(chosen, level, mask, version)
    counts = tuple((mode, len(text)) for mode, text in segments)
    return Symbol(chosen.astype(bool), version, error, mask, counts)


_INDEX = np.arange(8)
_SKIP = np.array([0, 1, 2, 3, 4, 5, 7, 8])  # upper left: row / column 6 is the timing pattern


@lru_cache(maxsize=40)
def _version_info(version: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, columns, bits) of both copies of the version information (versions 7 and up)."""
    size = version * 4 + 17
    if version < 7:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, np.zeros(0, dtype=np.uint8)
    info = consts.VERSION_INFO[version - 7]
    rows, cols, bits = [], [], []
    for i in range(6):
        for k in range(3):
            bit = (info >> (i * 3 + k)) & 1
            rows += [size - 11 + k, i]
            cols += [i, size - 11 + k]
            bits += [bit, bit]
    return np.array(rows), np.array(cols), np.array(bits, dtype=np.uint8)


def _place_format(matrix: np.ndarray, level: int, mask: int, version: int) -> None:
    """Write the format words, the version words and the dark module with numpy indexing."""
    size = matrix.shape[0]
    word = encoder.calc_format_info(version, level, mask)
    vbits = (word >> _INDEX) & 1
    hbits = (word >> (14 - _INDEX)) & 1
    matrix[_SKIP, 8] = vbits
    matrix[8, _SKIP] = hbits
    matrix[8, size - 1 - _INDEX] = vbits
    matrix[size - 1 - _INDEX, 8] = hbits
    matrix[size - 8, 8] = 1
    rows, cols, bits = _version_info(version)
    matrix[rows, cols] = bits


# --- reading a symbol back (tests and the badge bench check segment layouts with it) ----------

_MODE_NAMES = {0b0001: "numeric", 0b0010: "alphanumeric", 0b0100: "byte", 0b1000: "kanji"}
_LEVEL_BITS = {0b01: "L", 0b00: "M", 0b11: "Q", 0b10: "H"}


def read_segments(modules: np.ndarray) -> tuple[str, int, int, list[tuple[str, str]]]:
    """(level, version, mask, [(mode name, text), ...]) of a QR symbol's module grid (True =
    dark, no quiet zone): format information, unmasking, the zigzag read, de-interleaving and
    the segment headers of ISO/IEC 18004 read back, so a symbol's segment layout can be checked
    whoever made it. Kanji segments are reported without their text."""
    size = modules.shape[0]
    version = (size - 17) // 4
    bits = [int(modules[8, c]) for c in (0, 1, 2, 3, 4, 5, 7, 8)]
    bits += [int(modules[r, 8]) for r in (7, 5, 4, 3, 2, 1, 0)]
    word = int("".join(map(str, bits)), 2) ^ 0b101010000010010
    level, mask = _LEVEL_BITS[word >> 13], (word >> 10) & 0b111
    layout = _layout(version)
    stream = (modules.astype(np.uint8) ^ layout.masks[mask])[layout.rows, layout.cols]
    codewords = np.packbits(stream[: len(stream) // 8 * 8]).tolist()
    code = {"L": consts.ERROR_LEVEL_L, "M": consts.ERROR_LEVEL_M}.get(level)
    code = {"Q": consts.ERROR_LEVEL_Q, "H": consts.ERROR_LEVEL_H}.get(level, code)
    lengths = [i.num_data for i in consts.ECC[version][code] for _ in range(i.num_blocks)]
    blocks: list[list[int]] = [[] for _ in lengths]
    position = 0
    for column in range(max(lengths)):
        for index, length in enumerate(lengths):
            if column < length:
                blocks[index].append(codewords[position])
                position += 1
    data = "".join(f"{c:08b}" for block in blocks for c in block)
    vrange = _range_of(version)
    alphabet = consts.ALPHANUMERIC_CHARS.decode("ascii")
    found: list[tuple[str, str]] = []
    at = 0
    while at + 4 <= len(data):
        mode = int(data[at : at + 4], 2)
        name = _MODE_NAMES.get(mode)
        at += 4
        if name is None:
            break  # the terminator (0000) or something this reader does not follow
        width = consts.CHAR_COUNT_INDICATOR_LENGTH[mode][vrange]
        count = int(data[at : at + width], 2)
        at += width
        if name == "byte":
            raw = bytes(int(data[at + 8 * k : at + 8 * k + 8], 2) for k in range(count))
            text, at = raw.decode("iso-8859-1"), at + 8 * count
        elif name == "alphanumeric":
            chars = []
            for _ in range(count // 2):
                value = int(data[at : at + 11], 2)
                chars += [alphabet[value // 45], alphabet[value % 45]]
                at += 11
            if count % 2:
                chars.append(alphabet[int(data[at : at + 6], 2)])
                at += 6
            text = "".join(chars)
        elif name == "numeric":
            digits = []
            for size_bits, n in ((10, 3),) * (count // 3):
                digits.append(f"{int(data[at : at + size_bits], 2):0{n}d}")
                at += size_bits
            rest = count % 3
            if rest:
                bits_rest = 4 if rest == 1 else 7
                digits.append(f"{int(data[at : at + bits_rest], 2):0{rest}d}")
                at += bits_rest
            text = "".join(digits)
        else:
            text, at = "", at + 13 * count
        found.append((name, text))
    return level, version, mask, found
