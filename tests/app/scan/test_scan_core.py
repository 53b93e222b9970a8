"""The Qt-free scanning core on real images: decoders, debounce, frames and a recorded camera."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import segno

from app.scan.debounce import Debouncer
from app.scan.decoders import (
    Decoder,
    DecoderChain,
    ZxingDecoder,
    as_grey,
    decoder_chain,
    pyzbar_decoder,
)
from app.scan.frames import CameraUnavailable, OpenCVSource, crop_box, prepare_frame
from service.documents.badge import render_badge_png
from service.protocol.barcode_text import build_scan_url_v2, parse_barcode, scan_url_prefix
from service.protocol.encoding import b64url_encode

SCAN_BASE = "https://verify.example.com"


def badge(ciphertext_bytes: int, seed: int, px: int = 640) -> tuple[str, np.ndarray]:
    """A scan URL v2 as the two-segment QR of PROTOCOL §3, smoothly rendered px wide, in grey."""
    rng = np.random.default_rng(seed)
    reference = b64url_encode(rng.bytes(16))
    text = build_scan_url_v2(SCAN_BASE, reference, rng.bytes(ciphertext_bytes))
    prefix = scan_url_prefix(SCAN_BASE, reference)
    segments = [
        (prefix, segno.consts.MODE_BYTE),
        (text[len(prefix) :], segno.consts.MODE_ALPHANUMERIC),
    ]
    try:
        code = segno.make(segments, error="M", boost_error=False)
        if 720 / (code.symbol_size(scale=1, border=0)[0] + 8) < 3:
            raise segno.DataOverflowError
    except segno.DataOverflowError:
        code = segno.make(segments, error="L", boost_error=False)
    modules = np.where(np.array(code.matrix, dtype=np.uint8) == 1, 0, 255).astype(np.uint8)
    big = np.kron(np.pad(modules, 4, constant_values=255), np.ones((8, 8), np.uint8))
    return text, cv2.resize(big, (px, px), interpolation=cv2.INTER_AREA)


def blur(img: np.ndarray) -> np.ndarray:
    return cv2.GaussianBlur(img, (0, 0), 1.2)


def noise(img: np.ndarray, sigma: float = 25, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(img + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)


def jpeg(img: np.ndarray, quality: int = 30) -> np.ndarray:
    ok, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    decoded = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    assert decoded is not None
    return decoded


def tilt(img: np.ndarray, degrees: float = 20) -> np.ndarray:
    """Perspective: the right edge leans away, as a payslip held at an angle to the camera."""
    h, w = img.shape[:2]
    shrink = (1 - np.cos(np.radians(degrees))) * w / 2 + 0.06 * w
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    dst = np.array([[0, 0], [w, shrink], [w, h - shrink], [0, h]], dtype=np.float32)
    matrix = cv2.getPerspectiveTransform(src, dst)
    return cv2.warpPerspective(img, matrix, (w, h), borderValue=(255, 255, 255))


def rotate(img: np.ndarray, degrees: float = 35) -> np.ndarray:
    h, w = img.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 0.7)
    return cv2.warpAffine(img, matrix, (w, h), borderValue=(255, 255, 255))


def downscale(img: np.ndarray) -> np.ndarray:
    return cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_AREA)


DEGRADATIONS = {
    "clean": lambda img: img,
    "blur": blur,
    "noise": noise,
    "jpeg30": jpeg,
    "tilt20": tilt,
    "rotation35": rotate,
    "downscale50": downscale,
    "all_at_once": lambda img: jpeg(noise(blur(tilt(img)), sigma=12)),
}


@pytest.fixture(scope="module")
def chain() -> Decoder:
    return decoder_chain()


# ---------------------------------------------------------------- decoders


@pytest.mark.parametrize("size", [150, 1024, 2164])
@pytest.mark.parametrize("kind", list(DEGRADATIONS))
def test_chain_reads_exact_text_of_degraded_badges(chain: Decoder, size: int, kind: str) -> None:
    text, image = badge(size, seed=size)
    assert chain.decode(DEGRADATIONS[kind](image)) == [text]


@pytest.mark.parametrize("size", [150, 1024, 2164])
@pytest.mark.parametrize("kind", ["clean", "tilt20", "jpeg30", "all_at_once"])
def test_chain_reads_the_real_badge_at_640_px(chain: Decoder, size: int, kind: str) -> None:
    rng = np.random.default_rng(size)
    text = build_scan_url_v2(SCAN_BASE, b64url_encode(rng.bytes(16)), rng.bytes(size))
    png = render_badge_png(text, width=720)
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_GRAYSCALE)
    height = image.shape[0] * 640 // image.shape[1]
    image = cv2.resize(image, (640, height), interpolation=cv2.INTER_AREA)
    assert chain.decode(DEGRADATIONS[kind](image)) == [text]


def test_the_text_read_is_a_payload_the_protocol_parses(chain: Decoder) -> None:
    text, image = badge(600, seed=3)
    (found,) = chain.decode(image)
    assert parse_barcode(found) == parse_barcode(text)


def test_bgr_and_bgra_frames_are_read(chain: Decoder) -> None:
    text, image = badge(400, seed=4)
    assert chain.decode(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)) == [text]
    assert chain.decode(cv2.cvtColor(image, cv2.COLOR_GRAY2BGRA)) == [text]


def test_upscale_retry_reads_what_a_single_pass_misses() -> None:
    # A 1024-byte payload (version 28) at 280 px is about 2 px per module: one pass of zxing-cpp
    # misses it, the 2x cubic upscale reads it. This is why the app's decoder retries once.
    text, image = badge(1024, seed=7, px=280)
    assert ZxingDecoder(upscale=False).decode(image) == []
    assert ZxingDecoder().decode(image) == [text]


def test_two_codes_in_one_image_are_both_returned(chain: Decoder) -> None:
    first, left = badge(150, seed=8, px=400)
    second, right = badge(150, seed=9, px=400)
    assert set(chain.decode(np.hstack([left, right]))) == {first, second}


def test_a_code_inside_another_is_dropped_as_a_phantom(chain: Decoder) -> None:
    # The bench met zxing-cpp reading a 6-digit version 1 "QR" in a corner of a blurred version 34
    # badge. Here a real small code is pasted inside a high-EC code: both decode, but a code
    # cannot legitimately sit inside another, and a second text would make the debounce refuse
    # every frame, so only the outer one is returned.
    outer = "https://verify.example.com/v/" + "A" * 22 + "#2." + "B" * 200
    modules = np.array(segno.make(outer, error="H", boost_error=False).matrix, dtype=np.uint8)
    grid = np.kron(np.pad(np.where(modules == 1, 0, 255), 4, constant_values=255), np.ones((8, 8)))
    image = cv2.resize(grid.astype(np.uint8), (800, 800), interpolation=cv2.INTER_AREA)
    inner = np.array(segno.make("775518", error="L", micro=False).matrix, dtype=np.uint8)
    patch = np.kron(np.pad(np.where(inner == 1, 0, 255), 4, constant_values=255), np.ones((4, 4)))
    image[400 : 400 + patch.shape[0], 400 : 400 + patch.shape[1]] = patch
    assert chain.decode(image) == [outer]
    side_by_side = np.full((800, 1000), 255, np.uint8)
    side_by_side[:, :800] = image
    side_by_side[50 : 50 + patch.shape[0], 850 : 850 + patch.shape[1]] = patch
    assert set(chain.decode(side_by_side)) == {outer, "775518"}  # beside it, it is a real code


GARBAGE: list[Any] = [
    None,
    "not an image",
    np.zeros((0, 0), np.uint8),
    np.zeros(50, np.uint8),
    np.zeros((5, 5), np.uint8),
    np.zeros((100, 100, 2), np.uint8),
    np.zeros((10, 10, 10, 10), np.uint8),
    np.random.default_rng(0).random((200, 200)),
    np.full((200, 200), np.nan),
    np.ones((64, 64), bool),
    np.random.default_rng(1).integers(0, 65535, (120, 120), dtype=np.uint16),
    np.random.default_rng(2).integers(0, 256, (300, 300, 4), dtype=np.uint8),
    np.asfortranarray(np.random.default_rng(3).integers(0, 256, (300, 200), dtype=np.uint8)),
    np.zeros((1, 100_000), np.uint8),
    np.array([["a", "b"]] * 30),
]


@pytest.mark.parametrize("image", GARBAGE, ids=lambda image: type(image).__name__)
def test_no_decoder_raises_on_garbage(image: Any) -> None:
    decoders: list[Decoder] = [ZxingDecoder(), ZxingDecoder(upscale=False), decoder_chain()]
    zbar = pyzbar_decoder()
    if zbar is not None:
        decoders.append(zbar)
    for decoder in decoders:
        assert decoder.decode(image) == []


def test_float_images_in_0_1_are_scaled(chain: Decoder) -> None:
    text, image = badge(150, seed=10)
    assert chain.decode(image.astype(np.float32) / 255) == [text]
    assert as_grey(np.zeros((30, 30, 3), np.float64)) is not None


def test_chain_stops_at_the_first_decoder_that_finds_something() -> None:
    class Scripted:
        def __init__(self, name: str, answer: list[str]) -> None:
            self.name, self.answer, self.calls = name, answer, 0

        def decode(self, image: np.ndarray) -> list[str]:
            self.calls += 1
            return self.answer

    first, second, third = Scripted("a", []), Scripted("b", ["x"]), Scripted("c", ["y"])
    chain = DecoderChain([first, second, third])
    assert chain.decode(np.zeros((40, 40), np.uint8)) == ["x"]
    assert (first.calls, second.calls, third.calls) == (1, 1, 0)
    assert chain.name == "a -> b -> c"
    assert isinstance(first, Decoder)


def test_default_chain_is_zxing_and_pyzbar_only_on_request() -> None:
    assert [type(d).__name__ for d in decoder_chain().decoders] == ["ZxingDecoder"]
    with_zbar = [type(d).__name__ for d in decoder_chain(use_pyzbar=True).decoders]
    expected = ["ZxingDecoder"] + (["PyzbarDecoder"] if pyzbar_decoder() else [])
    assert with_zbar == expected


def test_pyzbar_reads_a_clean_mixed_mode_badge() -> None:
    zbar = pyzbar_decoder()
    if zbar is None:
        pytest.skip("pyzbar or libzbar0 is not installed")
    text, image = badge(600, seed=11)
    assert zbar.decode(image) == [text]


# ---------------------------------------------------------------- debounce


def test_one_sighting_is_not_enough() -> None:
    debouncer = Debouncer()
    assert debouncer.feed(["A"]) is None
    assert debouncer.feed([]) is None
    assert debouncer.feed([]) is None
    assert debouncer.feed(["A"]) is None  # the first sighting has left the 3-frame window


def test_two_of_the_last_three_frames_accept() -> None:
    debouncer = Debouncer(required=2, window=3)
    assert debouncer.feed(["A"]) is None
    assert debouncer.feed([]) is None  # a missed frame in between is fine
    assert debouncer.feed(["A"]) == "A"


def test_sightings_must_be_identical() -> None:
    debouncer = Debouncer()
    assert debouncer.feed(["A"]) is None
    assert debouncer.feed(["B"]) is None
    assert debouncer.feed(["C"]) is None
    assert debouncer.feed(["C"]) == "C"


def test_frames_with_several_codes_are_refused() -> None:
    debouncer = Debouncer()
    assert debouncer.feed(["A", "B"]) is None
    assert debouncer.several_codes
    assert debouncer.feed(["A", "B"]) is None
    assert debouncer.feed(["A", "B"]) is None
    assert debouncer.feed(["A"]) is None
    assert not debouncer.several_codes
    assert debouncer.feed(["A", "A"]) == "A"  # the same code found twice is one code


def test_accepted_code_is_held_until_released() -> None:
    debouncer = Debouncer()
    debouncer.feed(["A"])
    assert debouncer.feed(["A"]) == "A"
    assert debouncer.held == "A"
    for _ in range(5):
        assert debouncer.feed(["A"]) is None  # still in front of the camera: verified once
    debouncer.release()
    assert debouncer.held is None
    assert debouncer.feed(["A"]) is None  # fresh sightings are needed after a release
    assert debouncer.feed(["A"]) == "A"


def test_held_code_does_not_block_another_code() -> None:
    debouncer = Debouncer()
    debouncer.hold("A")
    assert debouncer.feed(["A", "B"]) is None
    assert not debouncer.several_codes  # the held code is ignored, not counted
    assert debouncer.feed(["A", "B"]) == "B"
    assert debouncer.held == "B"


def test_other_thresholds_and_bad_ones() -> None:
    immediate = Debouncer(required=1, window=1)
    assert immediate.feed(["A"]) == "A"
    strict = Debouncer(required=3, window=5)
    assert [strict.feed(t) for t in (["A"], [], ["A"], [], ["A"])] == [None, None, None, None, "A"]
    for required, window in ((0, 3), (3, 2)):
        with pytest.raises(ValueError):
            Debouncer(required, window)


# ---------------------------------------------------------------- frames


def test_prepare_frame_keeps_the_centred_square_in_grey() -> None:
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[:, 80:560] = (10, 200, 30)
    prepared = prepare_frame(frame)
    assert prepared.shape == (480, 480)
    assert prepared.dtype == np.uint8
    assert np.all(prepared == cv2.cvtColor(np.uint8([[[10, 200, 30]]]), cv2.COLOR_BGR2GRAY)[0, 0])
    assert crop_box(480, 640) == (80, 0, 480, 480)
    assert crop_box(480, 640, 0.5) == (200, 120, 240, 240)
    assert prepare_frame(frame, fraction=0.5).shape == (240, 240)
    grey = np.arange(100 * 60, dtype=np.uint32).reshape(100, 60).astype(np.uint8)
    assert np.array_equal(prepare_frame(grey), grey[20:80])
    with pytest.raises(ValueError):
        crop_box(10, 10, 0)


def test_prepared_frame_does_not_share_the_camera_buffer() -> None:
    frame = np.zeros((100, 100), np.uint8)
    prepared = prepare_frame(frame)
    frame[:] = 255
    assert prepared.max() == 0


def test_missing_video_file_is_camera_unavailable(tmp_path: Path) -> None:
    with pytest.raises(CameraUnavailable, match="does not exist"):
        OpenCVSource(tmp_path / "nothing.mp4")


def test_file_that_is_not_a_video_is_camera_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.mp4"
    path.write_text("not a video")
    with pytest.raises(CameraUnavailable, match="cannot be opened"):
        OpenCVSource(path)


def test_absent_camera_is_camera_unavailable() -> None:
    with pytest.raises(CameraUnavailable, match="camera 97"):
        OpenCVSource(97)


class FlakyCapture:
    """A camera that gives two frames, then is unplugged."""

    def __init__(self, target: int | str) -> None:
        self.frames = [np.zeros((48, 64, 3), np.uint8)] * 2
        self.released = False

    def isOpened(self) -> bool:
        return True

    def read(self) -> tuple[bool, Any]:
        if self.frames:
            return True, self.frames.pop()
        return False, None

    def release(self) -> None:
        self.released = True


def test_lost_camera_gives_none_then_camera_unavailable() -> None:
    captures: list[FlakyCapture] = []

    def factory(target: int | str) -> FlakyCapture:
        captures.append(FlakyCapture(target))
        return captures[-1]

    source = OpenCVSource(0, capture_factory=factory)
    assert source.read() is not None
    assert source.read() is not None
    assert source.read() is None
    with pytest.raises(CameraUnavailable, match="stopped delivering frames"):
        source.read()
    source.close()
    assert captures[0].released
    with pytest.raises(CameraUnavailable, match="closed"):
        source.read()


def test_a_missed_frame_is_forgiven_when_frames_come_back() -> None:
    script: list[tuple[bool, Any]] = [
        (True, np.zeros((8, 8, 3), np.uint8)),
        (False, None),
        (True, np.zeros((8, 8, 3), np.uint8)),
        (False, None),
    ]

    class Hiccup(FlakyCapture):
        def read(self) -> tuple[bool, Any]:
            return script.pop(0)

    source = OpenCVSource(0, capture_factory=Hiccup)
    assert [source.read() is None for _ in range(4)] == [False, True, False, True]


# ---------------------------------------------------------------- a recorded camera


def camera_frame(code: np.ndarray | None, index: int) -> np.ndarray:
    """A 960x720 BGR frame: a desk, maybe a tilted, blurred, noisy badge near the middle."""
    rng = np.random.default_rng(index)
    frame = np.full((720, 960), 120, np.uint8)
    frame[:, :200] = 70  # an edge of the desk that prepare_frame crops away
    if code is not None:
        degrees = 10 + 2 * (index % 5)
        held = tilt(code, degrees) if index % 2 else rotate(code, 5 * index)
        held = cv2.resize(held, (580, 580), interpolation=cv2.INTER_AREA)
        top, left = 70 + index % 3 * 10, 190 + index % 4 * 8
        frame[top : top + 580, left : left + 580] = held
    frame = cv2.GaussianBlur(frame, (0, 0), 0.9)
    frame = np.clip(frame + rng.normal(0, 8, frame.shape), 0, 255).astype(np.uint8)
    return cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)


@pytest.mark.parametrize("fourcc", ["mp4v", "MJPG"])
def test_recorded_camera_accepts_the_badge_once(tmp_path: Path, fourcc: str) -> None:
    text, code = badge(600, seed=12, px=640)
    path = tmp_path / ("camera.avi" if fourcc == "MJPG" else "camera.mp4")
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*fourcc), 10, (960, 720))
    assert writer.isOpened()
    frames = [None] * 3 + [code] * 8 + [None] * 2
    for index, shown in enumerate(frames):
        writer.write(camera_frame(shown, index))
    writer.release()

    chain = decoder_chain()
    debouncer = Debouncer()
    accepted: list[tuple[int, str]] = []
    read_frames = 0
    with OpenCVSource(path) as source, pytest.raises(CameraUnavailable):
        while True:
            frame = source.read()
            if frame is None:
                continue  # the file ended: the next read raises, as an unplugged camera does
            found = debouncer.feed(chain.decode(prepare_frame(frame)))
            if found is not None:
                accepted.append((read_frames, found))
            read_frames += 1
    assert read_frames == len(frames)
    assert [found for _, found in accepted] == [text]
    assert 3 < accepted[0][0] <= 5  # two sightings after the badge appears at frame 3
