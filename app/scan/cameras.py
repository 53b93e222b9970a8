"""Cameras by name: what the settings list, and how a saved choice finds its device again.

A bare device index ("0") is meaningless to an operator and changes when cameras are plugged in
another order, so the settings offer cameras by the name their driver reports and save
``name:<that name>``; each time the camera is opened the name is looked up again. The setting
also still takes a device index, or a video file path (tests and demos).

On Linux the names come from ``/sys/class/video4linux`` (no device is opened to list them).
Elsewhere no name source is available without extra libraries, so the list offers the first few
device numbers instead.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

SYSFS = Path("/sys/class/video4linux")
NAME_PREFIX = "name:"
_FALLBACK_DEVICES = 4
_NODE = re.compile(r"^video(\d+)$")


@dataclass(frozen=True)
class CameraChoice:
    """One camera the operator can pick: what to show, and what to save in ``settings.camera``."""

    label: str
    setting: str


def _sysfs_devices(root: Path) -> list[tuple[int, str]]:
    """(index, name) of each capture device node, by index. Metadata nodes share a name with
    their camera; only the lowest index of each name is kept (the one that delivers frames)."""
    found: list[tuple[int, str]] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        match = _NODE.match(entry.name)
        if not match:
            continue
        try:
            name = (entry / "name").read_text("utf-8", "replace").strip()
        except OSError:
            continue
        found.append((int(match.group(1)), name or f"Camera {match.group(1)}"))
    found.sort()
    seen: set[str] = set()
    unique = []
    for index, name in found:
        if name not in seen:
            seen.add(name)
            unique.append((index, name))
    return unique


def list_cameras(root: Path = SYSFS) -> list[CameraChoice]:
    """The cameras this computer has, by name (empty: no camera found)."""
    if sys.platform.startswith("linux"):
        return [CameraChoice(name, NAME_PREFIX + name) for _, name in _sysfs_devices(root)]
    return [CameraChoice(f"Camera {i + 1}", str(i)) for i in range(_FALLBACK_DEVICES)]


def resolve_camera(setting: str, root: Path = SYSFS) -> int | str | None:
    """What OpenCV opens for ``settings.camera``: a device index, a video file path, or None
    when the named camera is not connected now."""
    text = setting.strip()
    if text.startswith(NAME_PREFIX):
        wanted = text[len(NAME_PREFIX) :]
        for index, name in _sysfs_devices(root):
            if name == wanted:
                return index
        return None
    return int(text) if text.isdigit() else text


def camera_label(setting: str) -> str:
    """How a saved camera setting reads in the settings and tooltips."""
    text = setting.strip()
    if text.startswith(NAME_PREFIX):
        return text[len(NAME_PREFIX) :]
    if text.isdigit():
        return f"Camera number {text}"
    return f"Video file {Path(text).name}"
