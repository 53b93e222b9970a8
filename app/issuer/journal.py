"""The pay run's journal: what was sealed and sent, written durably BEFORE it is sent.

Spec idempotency rule 1: the caller stores the reference with the payslip before sending. For a
pay run that means the reference, IV, tag and ciphertext of every record of a batch are on disk
(fsynced) before the batch request leaves. If the process is killed or the network drops, a re-run
with the same output folder finds them here and resends exactly the same content: the service
answers `duplicate` for what it already stored, nothing is created twice and nothing is a CONFLICT.
After each answer an acknowledgement frame records the per-record results, so a re-run skips
batches that were fully handled.

The journal holds ciphertext and payslip data, so it is encrypted at rest: each frame is AES-256-GCM
under a random journal key kept beside it in a file readable only by its owner (0600), bound to its
position by associated data so frames cannot be reordered or spliced. The journal and its key are
deleted when the run completes.

Layout: `<out>/.payrun-journal` (frames: 4-byte big-endian length, then IV || ciphertext || tag)
and `<out>/.payrun-journal.key` (32 bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from app.output.files import OutputError, explain, fsync_dir
from service.files.durable import write_file
from service.protocol.crypto import AuthenticationFailed, decrypt, encrypt, new_key

__all__ = ["JOURNAL_NAME", "JournalError", "RunJournal"]

JOURNAL_NAME = ".payrun-journal"
KEY_SUFFIX = ".key"
_LENGTH = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_AAD_PREFIX = b"payslip-verify/payrun-journal/1/"


class JournalError(Exception):
    """The journal cannot be used (damaged, or its key is missing). Plain text for the user."""


class RunJournal:
    """An append-only, encrypted, fsynced log of one pay run in one output folder."""

    def __init__(self, folder: Path, key: bytes, count: int, size: int) -> None:
        self.folder = folder
        self.path = folder / JOURNAL_NAME
        self.key_path = folder / (JOURNAL_NAME + KEY_SUFFIX)
        self._key = key
        self._found = count
        self._count = count
        self._handle: BinaryIO | None = None
        self._size = size
        self._lock: BinaryIO | None = None

    def __repr__(self) -> str:
        return f"RunJournal({str(self.folder)!r}, frames={self._count})"

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, folder: Path) -> RunJournal:
        """Open the journal of an interrupted run in `folder`, or start a new one.

        A frame cut short by a crash (the last one) is cut off: it was never sent, because a
        batch is only sent after its frame is fully on disk.
        """
        path = folder / JOURNAL_NAME
        key_path = folder / (JOURNAL_NAME + KEY_SUFFIX)
        lock = _lock(folder)
        try:
            journal = cls._open(folder, path, key_path)
        except BaseException:
            _unlock(lock)
            raise
        journal._lock = lock
        return journal

    @classmethod
    def _open(cls, folder: Path, path: Path, key_path: Path) -> RunJournal:
        if path.exists():
            try:
                key = key_path.read_bytes()
            except FileNotFoundError:
                raise JournalError(
                    "the output folder holds an unfinished run whose journal key is missing; "
                    "choose a new output folder"
                ) from None
            except OSError as exc:
                raise explain(exc, folder) from None
            if len(key) != 32:
                raise JournalError("the run journal's key file is damaged")
            count, good = cls._scan(path)
            journal = cls(folder, key, count, good)
            if good != path.stat().st_size:
                journal._truncate(good)
            return journal
        key = new_key()
        try:
            with contextlib.suppress(FileNotFoundError):
                key_path.unlink()
            write_file(key_path, [key], exclusive=True)  # 0600, fsynced
        except OSError as exc:
            raise explain(exc, folder) from None
        fsync_dir(folder)
        return cls(folder, key, 0, 0)

    @staticmethod
    def _scan(path: Path) -> tuple[int, int]:
        """(complete frames, bytes they span), from the length prefixes alone."""
        count = good = 0
        size = path.stat().st_size
        with open(path, "rb") as handle:
            while True:
                head = handle.read(_LENGTH.size)
                if len(head) < _LENGTH.size:
                    break
                (length,) = _LENGTH.unpack(head)
                end = good + _LENGTH.size + length
                if length < 28 or length > _MAX_FRAME or end > size:
                    break
                handle.seek(end)
                count += 1
                good = end
        return count, good

    def _truncate(self, size: int) -> None:
        try:
            with open(self.path, "r+b") as handle:
                handle.truncate(size)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise explain(exc, self.folder) from None
        self._size = size

    # ------------------------------------------------------------------ use

    @property
    def resumed(self) -> bool:
        """True when an interrupted run's frames were found."""
        return self._found > 0

    def frames(self) -> Iterator[dict[str, Any]]:
        """The frames found at open, decrypted one at a time, in order."""
        if not self._found:
            return
        try:
            handle = open(self.path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise explain(exc, self.folder) from None
        with handle:
            for index in range(self._found):
                (length,) = _LENGTH.unpack(handle.read(_LENGTH.size))
                body = handle.read(length)
                aad = _AAD_PREFIX + str(index).encode("ascii")
                try:
                    plain = decrypt(body[12:-16], body[:12], body[-16:], self._key, aad)
                except AuthenticationFailed:
                    raise JournalError(
                        "the run journal is damaged; choose a new output folder"
                    ) from None
                frame = json.loads(plain.decode("utf-8"))
                if not isinstance(frame, dict):
                    raise JournalError("the run journal is damaged; choose a new output folder")
                yield frame

    def append(self, frame: dict[str, Any]) -> None:
        """Encrypt and append one frame, and return only once it is on disk (fsync)."""
        plain = json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        aad = _AAD_PREFIX + str(self._count).encode("ascii")
        sealed = encrypt(plain, self._key, aad)
        body = sealed.iv + sealed.ciphertext + sealed.tag
        try:
            if self._handle is None:
                self._handle = open(self.path, "ab")  # noqa: SIM115 - kept open for the run
                if self._size == 0:
                    fsync_dir(self.folder)
            self._handle.write(_LENGTH.pack(len(body)) + body)
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:
            raise explain(exc, self.folder) from None
        self._count += 1
        self._size += _LENGTH.size + len(body)

    def mac(self, data: bytes) -> str:
        """A keyed fingerprint, to tell whether a row changed between runs without storing it."""
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:32]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        _unlock(self._lock)
        self._lock = None

    def remove(self) -> None:
        """Delete the journal, its key and lock: the run is complete, every output written.
        The lock is released last, so no other run can open a half-deleted journal."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        try:
            self.path.unlink(missing_ok=True)
            self.key_path.unlink(missing_ok=True)
            (self.folder / (JOURNAL_NAME + ".lock")).unlink(missing_ok=True)
        except OSError as exc:
            raise explain(exc, self.folder) from None
        fsync_dir(self.folder)
        self.close()


def _lock(folder: Path) -> BinaryIO | None:
    """Hold an exclusive lock on the output folder's run, so two runs never append to one
    journal. Advisory (flock) where the platform has it; elsewhere nothing is locked."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a second run is the user's own doing
        return None
    try:
        handle = open(folder / (JOURNAL_NAME + ".lock"), "ab")  # noqa: SIM115 - held for the run
    except OSError as exc:
        raise explain(exc, folder) from None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise JournalError(
            "another pay run is using this output folder; wait for it to finish"
        ) from None
    return handle


def _unlock(handle: BinaryIO | None) -> None:
    if handle is not None:
        with contextlib.suppress(OSError):
            handle.close()  # closing the file releases the flock


def exists_in(folder: Path) -> bool:
    """An unfinished run's journal is in `folder`."""
    return (folder / JOURNAL_NAME).exists()


__all__ += ["OutputError", "exists_in"]
