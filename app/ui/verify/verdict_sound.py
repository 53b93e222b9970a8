"""An optional short sound per verdict, as kiosk verifier apps offer (off by default).

Each verdict has its own shape, so the sound alone tells them apart: VERIFIED two rising tones,
NOT VERIFIED one long low tone, CANNOT VERIFY two equal middle tones. The sounds are synthesised
here (a frozen build cannot lose a sound file) and played without Qt Multimedia, which the
pinned PySide6 wheel does not ship: ``winsound`` on Windows, ``afplay`` on macOS, ``paplay`` or
``aplay`` on Linux, else the system beep. Playing never blocks the GUI thread and never fails
loudly: a desk without speakers simply stays silent.
"""

from __future__ import annotations

import atexit
import io
import logging
import math
import shutil
import struct
import subprocess
import sys
import tempfile
import wave
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QApplication

from service.protocol.vocabulary import Verdict

log = logging.getLogger("app.sound")

RATE = 22050
_TONES: dict[Verdict, list[tuple[float, float]]] = {
    # (frequency Hz, seconds); 0 Hz is a pause
    Verdict.VERIFIED: [(880.0, 0.12), (0.0, 0.04), (1320.0, 0.16)],
    Verdict.NOT_VERIFIED: [(220.0, 0.55)],
    Verdict.CANNOT_VERIFY: [(523.0, 0.14), (0.0, 0.08), (523.0, 0.14)],
}


def verdict_wav(verdict: Verdict) -> bytes:
    """The verdict's sound as a 16-bit mono WAV file, in memory."""
    samples: list[int] = []
    for frequency, seconds in _TONES[verdict]:
        count = round(RATE * seconds)
        fade = max(1, round(RATE * 0.01))  # 10 ms fades: no clicks
        for i in range(count):
            envelope = min(1.0, i / fade, (count - i) / fade)
            value = math.sin(2 * math.pi * frequency * i / RATE) if frequency else 0.0
            samples.append(round(0.45 * 32767 * envelope * value))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    return buffer.getvalue()


Player = Callable[[Verdict, bytes], None]


def _system_player() -> Player:
    """The best way this computer has to play a WAV without blocking."""
    if sys.platform == "win32":
        import winsound

        def play_windows(verdict: Verdict, data: bytes) -> None:
            # SND_ASYNC cannot be combined with SND_MEMORY; a short sound is played from a file.
            winsound.PlaySound(
                str(_cached_file(verdict, data)), winsound.SND_FILENAME | winsound.SND_ASYNC
            )

        return play_windows
    command = next(
        (found for name in ("afplay", "paplay", "aplay") if (found := shutil.which(name))), None
    )
    if command is None:
        return _beep
    quiet = ["-q"] if command.endswith("aplay") and not command.endswith("paplay") else []

    def play_file(verdict: Verdict, data: bytes) -> None:
        _reap_players()
        _PLAYING.append(
            subprocess.Popen(
                [command, *quiet, str(_cached_file(verdict, data))],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    return play_file


def _beep(verdict: Verdict, data: bytes) -> None:
    QApplication.beep()


_FILES: dict[Verdict, Path] = {}
_FOLDER: list[tempfile.TemporaryDirectory[str]] = []
_PLAYING: list[subprocess.Popen[bytes]] = []
"""External players started and not yet seen to end."""


def _reap_players() -> None:
    """Forget the players that have ended. A player dropped unwaited warns "subprocess is still
    running" and stays a zombie once done, so each is kept until seen to end: at the next verdict
    and at exit, by poll (never wait: the GUI thread calls this; a sound lasts under a second)."""
    _PLAYING[:] = [player for player in _PLAYING if player.poll() is None]


atexit.register(_reap_players)


def _cached_file(verdict: Verdict, data: bytes) -> Path:
    """The sound as a file for an external player (written once, deleted at exit)."""
    if verdict not in _FILES:
        if not _FOLDER:
            folder = tempfile.TemporaryDirectory(prefix="payslip-verify-sounds-")
            _FOLDER.append(folder)
            atexit.register(folder.cleanup)
        path = Path(_FOLDER[0].name) / f"{verdict}.wav"
        path.write_bytes(data)
        _FILES[verdict] = path
    return _FILES[verdict]


class VerdictSound:
    """Plays the verdict's sound when ``enabled()`` says so (read at each verdict, so a change
    in the settings applies at once). ``player`` is replaceable (tests, a desk with its own
    speaker setup)."""

    def __init__(self, enabled: Callable[[], bool], player: Player | None = None) -> None:
        self._enabled = enabled
        self.player = player
        self._sounds: dict[Verdict, bytes] = {}

    def play(self, verdict: Verdict) -> bool:
        """True when a sound was started."""
        if not self._enabled():
            return False
        if self.player is None:
            self.player = _system_player()
        if verdict not in self._sounds:
            self._sounds[verdict] = verdict_wav(verdict)
        try:
            self.player(verdict, self._sounds[verdict])
        except Exception as exc:  # no speakers, a broken player: stay silent, never fail
            log.info("verdict sound not played: %s", type(exc).__name__)
            return False
        return True
