"""service/files/durable.py: atomic, durable file replacement as the TinyDB store, the pay-run
journal and the pay-run outputs use it. What matters to a user: whatever goes wrong while a new
version is written (the writer fails, the disk refuses more bytes, the process is killed), the
final name still holds the complete old file, and no half-written file ever appears under it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.files.durable import atomic_writer, fsync_dir, replace_file, write_file

ROOT = Path(__file__).resolve().parents[3]
OLD = b"old complete content\n" * 100


def leftovers(folder: Path, keep: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p != keep)


def test_write_then_replace_puts_the_new_file_in_place(tmp_path: Path) -> None:
    target = tmp_path / "store.json"
    target.write_bytes(OLD)
    tmp = tmp_path / "store.json.tmp"
    write_file(tmp, [b"new ", b"content"])
    replace_file(tmp, target)
    assert target.read_bytes() == b"new content"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert leftovers(tmp_path, target) == []


def test_a_failing_writer_removes_its_partial_file_and_leaves_the_old_one(tmp_path: Path) -> None:
    target = tmp_path / "store.json"
    target.write_bytes(OLD)
    tmp = tmp_path / "store.json.tmp"

    def chunks() -> Iterator[bytes]:
        yield b"half of the new "
        raise RuntimeError("serialisation failed")

    with pytest.raises(RuntimeError):
        write_file(tmp, chunks())
    assert not tmp.exists()
    assert target.read_bytes() == OLD


def test_exclusive_write_refuses_an_existing_file_and_keeps_it(tmp_path: Path) -> None:
    key = tmp_path / "journal.key"
    key.write_bytes(b"k" * 32)
    with pytest.raises(FileExistsError):
        write_file(key, [b"x" * 32], exclusive=True)
    assert key.read_bytes() == b"k" * 32


def test_atomic_writer_replaces_only_on_a_clean_exit(tmp_path: Path) -> None:
    target = tmp_path / "results.csv"
    target.write_bytes(OLD)
    with pytest.raises(ValueError), atomic_writer(target) as handle:
        handle.write(b"row 1\n")
        raise ValueError("the run stopped")
    assert target.read_bytes() == OLD
    assert leftovers(tmp_path, target) == []
    with atomic_writer(target) as handle:
        handle.write(b"row 1\nrow 2\n")
    assert target.read_bytes() == b"row 1\nrow 2\n"
    assert leftovers(tmp_path, target) == []


CHILD_DISK_LIMIT = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    from service.files.durable import atomic_writer, replace_file, write_file

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a refused write raises EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    target = Path(sys.argv[1])
    try:
        if sys.argv[2] == "writer":
            with atomic_writer(target) as handle:
                for _ in range(100):
                    handle.write(b"n" * 1000)
        else:
            tmp = target.with_name(target.name + ".tmp")
            write_file(tmp, (b"n" * 1000 for _ in range(100)))
            replace_file(tmp, target)
    except OSError as exc:
        print("refused", exc.errno)
    """
)


@pytest.mark.parametrize("how", ["writer", "write_file"])
def test_a_write_the_disk_refuses_leaves_the_old_file(tmp_path: Path, how: str) -> None:
    """A real OSError from the kernel (file size limit: what a full disk looks like to the
    writer) part way through the new content."""
    target = tmp_path / "badge.png"
    target.write_bytes(OLD)
    done = subprocess.run(
        [sys.executable, "-c", CHILD_DISK_LIMIT, str(target), how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("refused 27"), done.stdout + done.stderr  # EFBIG
    assert target.read_bytes() == OLD
    assert leftovers(tmp_path, target) == []


CHILD_KILLED = textwrap.dedent(
    """
    import signal, sys
    from pathlib import Path
    from service.files.durable import atomic_writer

    target = Path(sys.argv[1])
    with atomic_writer(target) as handle:
        handle.write(b"the first half of the new content")
        handle.flush()
        print("half written", flush=True)
        signal.pause()  # killed here: no signal but the SIGKILL ever comes
        handle.write(b"the rest")
    """
)


def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "results.csv"
    target.write_bytes(OLD)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_KILLED, str(target)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "half written\n"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:  # the test failed before its kill: the child would wait forever
            child.kill()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert target.read_bytes() == OLD
    # The killed writer's temporary file stays behind under a name a clean-up recognises.
    names = leftovers(tmp_path, target)
    assert len(names) == 1
    assert names[0].startswith(".results.csv.")
    assert names[0].endswith(".tmp")


def test_fsync_dir_strict_reports_a_missing_folder_best_effort_does_not(tmp_path: Path) -> None:
    fsync_dir(tmp_path)
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "gone")
    fsync_dir(tmp_path / "gone", strict=False)
