"""The files under the TinyDB store, and the only code that touches them.

Layout of a data directory:

- `store.json`: a snapshot in TinyDB's own JSON layout (`{table: {doc_id: doc}}`), so plain
  `tinydb.TinyDB("store.json")` can read it. Its `_meta` table holds the journal sequence number
  the snapshot contains. It is only ever replaced whole (temp file + fsync + rename + fsync of the
  directory: service/files/durable.py), never rewritten in place, so a crash leaves either the
  old or the new snapshot.
- `journal.jsonl`: one header line `{"journal": 1, "base": S}` then one line per commit
  `{"seq": N, "ops": [[table, doc_id, doc or null], ...]}`, appended with a single write and
  fsynced before the commit is acknowledged. It holds every commit after the snapshot `base`,
  preceded by a bounded history of commits the snapshot already contains (see HISTORY_LINES).
  It is never truncated in place except to cut a torn tail (bytes of a write that never
  completed, so never acknowledged); compaction replaces it whole with a new file that still
  holds every line the new snapshot does not contain.
- `store.lock`: the `fcntl.flock` target. Writers hold it exclusively around append + fsync;
  readers that see the journal changed hold it shared while they read the new lines, so they
  never read a line whose fsync has not completed (and might still be rolled back).

A crash mid-append can only leave an incomplete last line: every append is one `write()` of a
newline-terminated line, and the next writer cuts unparsable tail bytes (under the exclusive
lock) before appending, so garbage can never end up in the middle of the journal.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from service.files.durable import FILE_MODE, replace_file, write_all, write_file

JOURNAL_NAME = "journal.jsonl"
SNAPSHOT_NAME = "store.json"
LOCK_NAME = "store.lock"
META_TABLE = "_meta"
FORMAT = 1
HISTORY_LINES = 1000
HISTORY_BYTES = 4 * 1024 * 1024
"""A compaction copies up to this many of the last commits it folded in into the new journal
(with seq <= base, skipped by a fresh open). A process that was idle while others compacted
more than once can then catch up from the journal instead of re-reading the whole snapshot."""

Doc = dict[str, Any]
Tables = dict[str, dict[str, Doc]]
Op = tuple[str, str, Doc | None]


class JournalCorrupt(Exception):
    """The files are damaged in a way no crash of this code can cause (a bad line in the middle
    of the journal, an unreadable snapshot or header): the store refuses to guess, since
    skipping data could drop acknowledged commits."""


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    ops: list[Op]


def temp_name(path: Path) -> Path:
    """A temp file next to `path` (same filesystem, so os.replace is atomic), tagged with the pid
    so a later open can tell leftovers of dead processes from a live compaction's file."""
    return path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def remove_stale_temp_files(directory: Path) -> None:
    """Delete temp files left by processes that died mid-compaction (their pid is gone)."""
    for tmp in directory.glob("*.tmp"):
        parts = tmp.name.split(".")
        try:
            pid = int(parts[-3])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                tmp.unlink()
        except PermissionError:
            pass  # alive, owned by someone else


# --- snapshot ----------------------------------------------------------------------------


def encode_snapshot(tables: Tables, seq: int, chunk_docs: int = 200) -> Iterator[bytes]:
    """TinyDB-layout JSON in chunks. Each chunk is one short `json.dumps` call, so a background
    compaction gives the GIL back to request threads between chunks instead of holding it for
    the whole 100+ MB. ASCII-only output, so readers with any default encoding parse it."""
    meta = json.dumps({"1": {"seq": seq, "format": FORMAT}})
    yield ('{"' + META_TABLE + '":' + meta).encode()
    for name in sorted(tables):
        if name == META_TABLE:
            continue
        yield (", " + json.dumps(name) + ": {").encode()
        items = list(tables[name].items())
        for start in range(0, len(items), chunk_docs):
            body = json.dumps(dict(items[start : start + chunk_docs]))[1:-1]
            yield ((", " if start else "") + body).encode()
        yield b"}"
    yield b"}"


def read_snapshot(path: Path) -> tuple[Tables, int]:
    """The snapshot's tables (without `_meta`) and the journal sequence number it contains."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return {}, 0
    if not raw.strip():
        return {}, 0
    try:
        data = json.loads(raw)
        meta = data.pop(META_TABLE, {}).get("1", {})
        seq = int(meta.get("seq", 0))
    except (ValueError, AttributeError, TypeError) as exc:
        raise JournalCorrupt(f"{path}: unreadable snapshot") from exc
    return data, seq


# --- journal -----------------------------------------------------------------------------


def encode_entry(seq: int, ops: list[Op]) -> bytes:
    """orjson: serialising 1.5 MB was the largest cost of a 1000-record commit with the stdlib
    encoder. The output is plain compact JSON (UTF-8), which json.loads reads back."""
    return orjson.dumps({"seq": seq, "ops": ops}) + b"\n"


def encode_header(base: int) -> bytes:
    return (json.dumps({"journal": FORMAT, "base": base}) + "\n").encode()


class JournalFile:
    """One open journal file: where its valid content ends and how to append to it.

    The file descriptor stays open across a rotation by another process: an unlinked file stays
    readable through it, so this process can still drain the lines it had not seen yet."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            st = os.fstat(self.fd)
            self.ino = st.st_ino
            head = _read_line(self.fd, 0)
            if head is None:
                raise JournalCorrupt(f"{path}: missing journal header")
            try:
                header = json.loads(head)
                fmt, base = header.get("journal"), int(header["base"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise JournalCorrupt(f"{path}: unreadable journal header") from exc
            if fmt != FORMAT:
                raise JournalCorrupt(f"{path}: unknown journal format {header!r}")
            self.base: int = base
            self.offset = len(head)
            """Byte offset just past the last complete, valid line consumed."""
            self.lines = 0
            """Commit lines after `base` consumed from this file (what compaction folds in)."""
            self.recent: deque[tuple[int, int]] = deque(maxlen=HISTORY_LINES)
            """(start offset, seq) of the last lines, to carry as history into the next file."""
        except BaseException:
            os.close(self.fd)
            raise

    @staticmethod
    def create(path: Path, base: int, body: bytes = b"") -> None:
        """Create (or replace) the journal at `path` atomically: header + `body`, fsynced."""
        tmp = temp_name(path)
        write_file(tmp, [encode_header(base), body])
        replace_file(tmp, path)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def read_new(self, known_upto: int = 0) -> tuple[list[Entry], bool]:
        """The complete lines after `offset`, parsed, and whether unparsable bytes follow them.
        Lines numbered `known_upto` or lower (already applied: a new journal's history) are only
        stepped over, not parsed, so following a compaction elsewhere stays cheap.

        Call with the process lock held (shared or exclusive), so no append is in flight: then
        trailing garbage is a torn write. A bad line followed by a good one is corruption."""
        size = os.fstat(self.fd).st_size
        if size <= self.offset:
            return [], False
        data = os.pread(self.fd, size - self.offset, self.offset)
        entries: list[Entry] = []
        pos = 0
        while True:
            end = data.find(b"\n", pos)
            if end < 0:
                break
            seq = _peek_seq(data, pos, end)
            if seq is None or seq > known_upto:
                try:
                    obj = json.loads(data[pos:end])
                    entry = Entry(int(obj["seq"]), [(o[0], o[1], o[2]) for o in obj["ops"]])
                except (ValueError, KeyError, TypeError, IndexError):
                    if _has_valid_line(data, end + 1):
                        raise JournalCorrupt(
                            f"journal line at byte {self.offset + pos} is damaged"
                        ) from None
                    break
                entries.append(entry)
                seq = entry.seq
            self.recent.append((self.offset + pos, seq))
            if seq > self.base:
                self.lines += 1
            pos = end + 1
        self.offset += pos
        return entries, self.offset < size

    def cut_torn_tail(self) -> None:
        """Drop bytes after the last valid line: a write that never completed, never acknowledged.
        Only with the exclusive lock held, right before appending."""
        if os.fstat(self.fd).st_size > self.offset:
            os.ftruncate(self.fd, self.offset)
            os.fsync(self.fd)

    def append(self, line: bytes, seq: int) -> None:
        """Append one line and fsync it. On failure, roll the file back to its previous end so no
        other process can ever read a commit this one reports as failed."""
        try:
            write_all(self.fd, line)
            _datasync(self.fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.offset)
                _datasync(self.fd)
            raise
        self.recent.append((self.offset, seq))
        self.offset += len(line)
        self.lines += 1

    def history_start(self, end: int, max_bytes: int = HISTORY_BYTES) -> int:
        """Where the history to carry over begins: the start of the oldest recent line that
        lies before `end` and within `max_bytes` of it (`end` itself when there is none)."""
        for start, _seq in self.recent:
            if end - max_bytes <= start < end:
                return start
        return end

    def is_line_start(self, offset: int) -> bool:
        """Whether a commit line starts at `offset` (a cheap guard before copying history)."""
        head = os.pread(self.fd, 8, offset - 1)
        return head.startswith(b'\n{"seq":')

    def tail_bytes(self, start: int) -> bytes:
        """The valid bytes from `start` to the end of the consumed content (for rotation)."""
        return os.pread(self.fd, self.offset - start, start) if self.offset > start else b""

    def signature(self) -> tuple[int, int, int]:
        st = os.fstat(self.fd)
        return (st.st_ino, st.st_size, st.st_mtime_ns)


def _datasync(fd: int) -> None:
    """fdatasync where it exists: an append changes the size, which it flushes too, but it skips
    the mtime-only inode write that plain fsync adds to every commit."""
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def _read_line(fd: int, offset: int) -> bytes | None:
    buf = b""
    while True:
        chunk = os.pread(fd, 4096, offset + len(buf))
        if not chunk:
            return None
        buf += chunk
        end = buf.find(b"\n")
        if end >= 0:
            return buf[: end + 1]


def _peek_seq(data: bytes, pos: int, end: int) -> int | None:
    """The sequence number of a line `encode_entry` wrote (it starts `{"seq":N,`), without
    parsing the line; None when the line does not look like that."""
    if not data.startswith(b'{"seq":', pos):
        return None
    comma = data.find(b",", pos + 7, min(end, pos + 40))
    if comma < 0:
        return None
    try:
        return int(data[pos + 7 : comma])
    except ValueError:
        return None


def _has_valid_line(data: bytes, pos: int) -> bool:
    """Whether any complete line after `pos` parses as a commit."""
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return False
        try:
            obj = json.loads(data[pos:end])
            if isinstance(obj, dict) and "seq" in obj:
                return True
        except ValueError:
            pass
        pos = end + 1


class ProcessLock:
    """An `fcntl.flock` on the lock file, shared or exclusive, re-entrant within one holder.

    flock excludes other open file descriptions (other processes, or other store instances in
    this process), not other threads sharing this descriptor: callers must hold their own
    threading lock around every use, which also makes the depth bookkeeping here safe."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        self._depth = 0
        self._mode = 0

    @contextlib.contextmanager
    def hold(self, exclusive: bool) -> Iterator[None]:
        if self._depth:
            if exclusive and self._mode != fcntl.LOCK_EX:
                raise RuntimeError("cannot upgrade a shared store lock to exclusive")
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        fcntl.flock(self._fd, mode)
        self._depth, self._mode = 1, mode
        try:
            yield
        finally:
            self._depth, self._mode = 0, 0
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
