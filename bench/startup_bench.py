"""Cold start of the kiosk app from source and from the bundle, against a bare Qt import.

Run: ``python bench/startup_bench.py [--runs 5] [--bundle dist/payslip-verify] [--no-source]``.

Every run starts a fresh process of the real app (``--kiosk``, embedded service, an already
initialised data directory in a temporary folder) and times, from just before the process is
spawned:

- ``healthz``: until the embedded service answers ``GET /healthz`` with 200. The service listens
  on a free port it picks itself, so the bench finds the port among the process's listening
  sockets (``/proc``) and polls it.
- ``camera frame``: until the verify screen shows a frame of the fake camera. The camera is a
  video file written here with ``cv2.VideoWriter`` (magenta frames) and set as ``camera`` in
  ``settings.json`` (``PAYSLIP_CONFIG_DIR``). The app runs on Qt's VNC platform plugin
  (``QT_QPA_PLATFORM=vnc``), a framebuffer that renders exactly like a screen, and a minimal RFB
  client here watches it until the preview's magenta appears: the app is timed from outside,
  unmodified, the same way from source and frozen.

The baseline is a bare ``python -c "import PySide6.QtWidgets"`` in the same run; ratios compare
like with like on this machine. One untimed warm-up run per target initialises the data directory
and warms the disk cache (the target is under 2 s from a warm disk). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0
SCREEN = (800, 600)
FRAME_SIZE = (640, 480)
MAGENTA_PIXELS = 2000
"""Pixels of the fake camera's colour that count as "a frame is on screen"."""
TIMEOUT_S = 30.0


def write_fake_camera(path: Path, seconds: int = 60, fps: int = 25) -> Path:
    """A magenta video with a frame counter: nothing else on the verify screen is magenta."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, FRAME_SIZE)
    if not writer.isOpened():
        raise SystemExit("cv2.VideoWriter cannot write MJPG here")
    for index in range(seconds * fps):
        frame = np.empty((FRAME_SIZE[1], FRAME_SIZE[0], 3), np.uint8)
        frame[:] = (255, 0, 255)
        cv2.putText(frame, str(index), (20, 60), cv2.FONT_HERSHEY_SIMPLEX, 2, (0, 0, 0), 3)
        writer.write(frame)
    writer.release()
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- finding the embedded service's port --------------------------------------------------------


def _family(pid: int) -> set[int]:
    """The pid and its descendants (a bootloader could run the app in a child process)."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
            except OSError:
                continue
            todo.extend(int(child) for child in children)
    return found


def listening_ports(pid: int) -> set[int]:
    inodes: set[str] = set()
    for member in _family(pid):
        try:
            for fd in os.listdir(f"/proc/{member}/fd"):
                target = os.readlink(f"/proc/{member}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def wait_for_healthz(pid: int, skip: set[int], started: float, result: dict[str, float]) -> None:
    """Find the service's port among the process's listening sockets, then poll /healthz."""
    deadline = started + TIMEOUT_S
    ports: set[int] = set()
    while time.perf_counter() < deadline:
        ports = ports or listening_ports(pid) - skip
        for port in ports:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        result["healthz"] = time.perf_counter() - started
                        return
            except OSError:
                continue
        time.sleep(0.01)


# -- a minimal RFB (VNC) client ------------------------------------------------------------------


def _recv(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the VNC server closed the connection")
        data += chunk
    return bytes(data)


def _connect(port: int, deadline: float) -> socket.socket:
    """The app's VNC socket, as soon as the app listens on it."""
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        except OSError:
            if time.perf_counter() > deadline:
                raise TimeoutError("the app never opened its VNC screen") from None
            time.sleep(0.005)


def _handshake(sock: socket.socket) -> tuple[int, int]:
    """RFB version and security (none), shared session; the framebuffer's width and height."""
    version = _recv(sock, 12)  # "RFB 003.00x\n"
    minor = min(int(version[8:11]), 8)
    sock.sendall(b"RFB 003.%03d\n" % minor)
    if minor < 7:
        if struct.unpack(">I", _recv(sock, 4))[0] != 1:
            raise ConnectionError("the VNC server wants a password")
    else:
        count = _recv(sock, 1)[0]
        if 1 not in _recv(sock, count):
            raise ConnectionError("the VNC server wants a password")
        sock.sendall(b"\x01")
        if minor >= 8 and struct.unpack(">I", _recv(sock, 4))[0] != 0:
            raise ConnectionError("VNC security handshake failed")
    sock.sendall(b"\x01")  # shared
    width, height = struct.unpack(">HH", _recv(sock, 4))
    _recv(sock, 16)
    _recv(sock, struct.unpack(">I", _recv(sock, 4))[0])
    return width, height


def _read_update(sock: socket.socket, screen: np.ndarray) -> None:
    """A FramebufferUpdate's rectangles (raw encoding only) into `screen`."""
    rects = struct.unpack(">xH", _recv(sock, 3))[0]
    for _ in range(rects):
        x, y, w, h, encoding = struct.unpack(">HHHHi", _recv(sock, 12))
        if encoding != 0:
            raise ConnectionError(f"unexpected VNC encoding {encoding}")
        pixels = np.frombuffer(_recv(sock, w * h * 4), np.uint8)
        screen[y : y + h, x : x + w] = pixels.reshape(h, w, 4)


def _shows_magenta(screen: np.ndarray) -> bool:
    blue, green, red = (screen[..., i] for i in range(3))
    magenta = (red > 200) & (blue > 200) & (green < 60)
    return int(magenta.sum()) >= MAGENTA_PIXELS


def _skip_message(sock: socket.socket, kind: int) -> None:
    """A server message other than an update: read past it (or refuse one we do not know)."""
    if kind == 1:  # SetColourMapEntries
        count = struct.unpack(">xHH", _recv(sock, 5))[1]
        _recv(sock, 6 * count)
    elif kind == 3:  # ServerCutText
        _recv(sock, struct.unpack(">3xI", _recv(sock, 7))[0])
    elif kind != 2:  # 2 is Bell
        raise ConnectionError(f"unexpected VNC message {kind}")


def wait_for_frame(port: int, started: float) -> float:
    """Seconds from `started` until the framebuffer holds the fake camera's magenta."""
    deadline = started + TIMEOUT_S
    with _connect(port, deadline) as sock:
        width, height = _handshake(sock)
        # 32 bpp true colour, little endian: bytes are B, G, R, X. Raw encoding only.
        sock.sendall(struct.pack(">B3xBBBBHHHBBB3x", 0, 32, 24, 0, 1, 255, 255, 255, 16, 8, 0))
        sock.sendall(struct.pack(">BxHi", 2, 1, 0))
        screen = np.zeros((height, width, 4), np.uint8)
        sock.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))
        while time.perf_counter() < deadline:
            kind = _recv(sock, 1)[0]
            if kind != 0:  # not a FramebufferUpdate
                _skip_message(sock, kind)
                continue
            _read_update(sock, screen)
            if _shows_magenta(screen):
                return time.perf_counter() - started
            sock.sendall(struct.pack(">BBHHHH", 3, 1, 0, 0, width, height))
    raise TimeoutError("no camera frame on screen")


# -- runs ----------------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    command: list[str]
    healthz: list[float] = field(default_factory=list)
    frame: list[float] = field(default_factory=list)


def run_once(target: Target, env: dict[str, str], record: bool) -> None:
    vnc_port = free_port()
    env = dict(env, QT_QPA_PLATFORM=f"vnc:size={SCREEN[0]}x{SCREEN[1]}:port={vnc_port}")
    result: dict[str, float] = {}
    started = time.perf_counter()
    proc = subprocess.Popen(
        target.command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    watcher = threading.Thread(
        target=wait_for_healthz, args=(proc.pid, {vnc_port}, started, result), daemon=True
    )
    watcher.start()
    try:
        frame = wait_for_frame(vnc_port, started)
        watcher.join(TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        proc.kill()
        _, err = proc.communicate()
        raise SystemExit(f"{target.name}: {exc}\n{err.decode(errors='replace')[-2000:]}") from None
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if "healthz" not in result:
        raise SystemExit(f"{target.name}: the embedded service never answered /healthz")
    if record:
        target.healthz.append(result["healthz"])
        target.frame.append(frame)


def bare_import(runs: int) -> list[float]:
    times = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import PySide6.QtWidgets"], check=True)
        times.append(time.perf_counter() - started)
    return times[1:]  # the first one only warms the disk cache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "payslip-verify")
    parser.add_argument("--no-source", action="store_true", help="time only the bundle")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("this bench reads /proc: Linux only")

    targets = []
    if not args.no_source:
        targets.append(Target("source", [sys.executable, "-m", "app", "--kiosk"]))
    bundled = args.bundle / "payslip-verify"
    if bundled.exists():
        targets.append(Target("bundle", [str(bundled), "--kiosk"]))
    else:
        print(f"(no bundle at {args.bundle}; build it with scripts/build-bundle)")
    if not targets:
        return 1

    with tempfile.TemporaryDirectory(prefix="payslip-startup-") as folder:
        base = Path(folder)
        camera = write_fake_camera(base / "camera.avi")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        envs = {}
        for target in targets:
            config = base / target.name / "config"
            config.mkdir(parents=True)
            settings = {"camera": str(camera), "demo_offered": True}
            (config / "settings.json").write_text(json.dumps(settings), "utf-8")
            envs[target.name] = dict(
                env,
                PAYSLIP_CONFIG_DIR=str(config),
                PAYSLIP_DATA_DIR=str(base / target.name / "data"),
                PAYSLIP_NO_KEYRING="1",
            )
            # Untimed: initialises the data directory and warms the disk cache.
            run_once(target, envs[target.name], record=False)
        for _ in range(args.runs):  # interleaved, so a busy moment hits every target alike
            for target in targets:
                run_once(target, envs[target.name], record=True)
        baseline = statistics.median(bare_import(args.runs))

    print(f"startup, median of {args.runs} runs (warm disk), screen {SCREEN[0]}x{SCREEN[1]}")
    print(f"{'':34} {'median s':>9} {'min s':>7} {'x bare import':>14}")
    print(f"{'bare import PySide6.QtWidgets':34} {baseline:9.3f} {'':>7} {1.0:14.2f}")
    worst = 0.0
    for target in targets:
        for label, values in (("healthz", target.healthz), ("camera frame", target.frame)):
            median = statistics.median(values)
            worst = max(worst, median)
            print(
                f"{target.name + ': ' + label:34} {median:9.3f} {min(values):7.3f} "
                f"{median / baseline:14.2f}"
            )
    verdict = "met" if worst < TARGET_S else "MISSED"
    print(f"target: camera frame under {TARGET_S:.1f} s -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
