"""TinyDBStore: the store contract, plus what only a file-backed store can get wrong: reopening,
TinyDB compatibility of the snapshot, torn journal writes, a second process on the same data
directory, compaction, and acknowledged writes surviving kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest
from tinydb import Query, TinyDB

from service.protocol.vocabulary import KeyState, RecordStatus
from service.storage import tinydb_compaction
from service.storage.journal import JOURNAL_NAME, SNAPSHOT_NAME
from service.storage.port import AddStatus, Issuer, Store, StoreUnavailable
from service.storage.tinydb_engine import JournaledStorage
from service.storage.tinydb_store import TinyDBStore
from tests.service.storage.store_contract import (
    ISSUER_A,
    ISSUER_B,
    StoreContract,
    make_client,
    make_key,
    make_record,
)

ROOT = Path(__file__).resolve().parents[3]


class TestTinyDBContract(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = TinyDBStore(tmp_path / "store")
        yield s
        s.close()


class TestTinyDBContractWithConstantCompaction(StoreContract):
    """The contract again with a compaction every few commits, racing the writers."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        s = TinyDBStore(tmp_path / "store", compact_lines=3)
        yield s
        s.close()


def fill(store: TinyDBStore) -> None:
    store.add_records([make_record(f"r{i}") for i in range(50)])
    store.add_records([make_record("b1", issuer=ISSUER_B, key_version=None)])
    store.revoke_record("r1", ISSUER_A, "mistake", "2026-03-01T00:00:00Z")
    store.pin_key("b1", "kv-b1")
    store.add_issuer(Issuer(ISSUER_A, "Acme", "2026-01-01T00:00:00Z"))
    store.add_client(make_client("cl-1"))
    store.set_client_disabled("cl-1", True)
    store.add_key(make_key("kv-a1"), demote_active=True)
    store.add_key(make_key("kv-a2", number=2), demote_active=True)
    store.set_setting("signing_key", "wrapped-signing")


def assert_filled(store: TinyDBStore) -> None:
    assert store.get_record("r49") == make_record("r49")
    revoked = store.get_record("r1")
    assert revoked is not None
    # Read back from the files as the enum, not the bare word the JSON holds.
    assert (type(revoked.status), revoked.status, revoked.revoke_reason) == (
        RecordStatus,
        RecordStatus.REVOKED,
        "mistake",
    )
    pinned = store.get_record("b1")
    assert pinned is not None
    assert pinned.key_version == "kv-b1"
    assert store.counts().records_by_issuer == {ISSUER_A: 50, ISSUER_B: 1}
    assert store.counts().revoked_by_issuer == {ISSUER_A: 1}
    assert store.list_issuers() == [Issuer(ISSUER_A, "Acme", "2026-01-01T00:00:00Z")]
    assert store.get_client("cl-1") == replace(make_client("cl-1"), disabled=True)
    demoted = store.get_key("kv-a1")
    assert demoted == replace(make_key("kv-a1"), state=KeyState.LIVE)
    assert demoted is not None and type(demoted.state) is KeyState
    assert store.get_setting("signing_key") == "wrapped-signing"
    # The indexes were rebuilt: the rules still apply after a reopen.
    assert store.add_records([make_record("x", iv="iv-r3")])[0].status is AddStatus.IV_REUSED
    assert store.add_records([make_record("r3", fingerprint="f")])[0].status is AddStatus.CONFLICT


@pytest.mark.parametrize("compact_on_close", [True, False])
def test_reopen_keeps_everything(tmp_path: Path, compact_on_close: bool) -> None:
    store = TinyDBStore(tmp_path, compact_on_close=compact_on_close)
    fill(store)
    store.close()
    with TinyDBStore(tmp_path) as again:
        assert_filled(again)


def test_reopen_without_close_replays_the_journal(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path)
    fill(store)
    # No close(): as after a crash. A second instance must see everything from the journal.
    with TinyDBStore(tmp_path) as again:
        assert_filled(again)
    store.close()


def test_snapshot_is_plain_tinydb(tmp_path: Path) -> None:
    with TinyDBStore(tmp_path) as store:
        fill(store)
    with TinyDB(tmp_path / SNAPSHOT_NAME, access_mode="r") as plain:
        assert {"records", "issuers", "clients", "keys", "settings"} <= plain.tables()
        records = plain.table("records")
        assert len(records) == 51
        doc = records.get(Query().service_reference == "r1")
        assert doc is not None
        assert doc["status"] == "revoked"
        assert plain.table("settings").get(Query().name == "signing_key") == {
            "name": "signing_key",
            "value": "wrapped-signing",
        }


def test_stock_tinydb_on_the_journaled_storage_writes_through_the_journal(tmp_path: Path) -> None:
    """Stock TinyDB over `JournaledStorage` (TinyDB's storage extension point), beside a running
    store: its writes are durable commits that the store's port methods see and a reopen keeps."""
    with TinyDBStore(tmp_path) as store:
        store.set_setting("a", "1")
        with TinyDB(tmp_path, storage=JournaledStorage) as db:
            settings = db.table("settings")
            settings.insert({"name": "b", "value": "2"})
            settings.update({"value": "1b"}, Query().name == "a")
            assert settings.count(Query().value.exists()) == 2
        assert store.get_setting("a") == "1b"
        assert store.get_setting("b") == "2"
    with TinyDBStore(tmp_path, compact_on_close=False) as again:
        assert again.get_setting("a") == "1b"
        assert again.get_setting("b") == "2"
    with TinyDB(tmp_path, storage=JournaledStorage, compact_on_close=False) as db:
        assert db.table("settings").get(Query().name == "b") == {"name": "b", "value": "2"}


def test_torn_journal_line_is_ignored_and_cut(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path, compact_on_close=False)
    store.add_records([make_record("ok")])
    store.close()
    journal = tmp_path / JOURNAL_NAME
    with open(journal, "ab") as fh:
        fh.write(b'{"seq":99,"ops":[["records","7",{"service_refer')  # crash mid-append
    with TinyDBStore(tmp_path, compact_on_close=False) as again:
        assert again.get_record("ok") == make_record("ok")
        # The next commit cuts the torn bytes first, so they never end up mid-journal.
        again.add_records([make_record("after")])
    with TinyDBStore(tmp_path) as third:
        assert third.get_record("after") == make_record("after")
    lines = journal.read_bytes().splitlines()
    assert all(json.loads(line) for line in lines)


def test_zero_filled_tail_is_ignored(tmp_path: Path) -> None:
    """A crash can leave the file longer than its data (a zero-filled block)."""
    store = TinyDBStore(tmp_path, compact_on_close=False)
    store.add_records([make_record("ok")])
    store.close()
    with open(tmp_path / JOURNAL_NAME, "ab") as fh:
        fh.write(b"\0" * 4096)
    with TinyDBStore(tmp_path) as again:
        assert again.get_record("ok") == make_record("ok")
        again.add_records([make_record("after")])
        assert again.get_record("after") is not None


def test_damaged_line_in_the_middle_refuses_to_open(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path, compact_on_close=False)
    store.add_records([make_record("a")])
    store.add_records([make_record("b")])
    store.close()
    journal = tmp_path / JOURNAL_NAME
    lines = journal.read_bytes().splitlines(keepends=True)
    lines[1] = b"garbage that is not json\n"
    journal.write_bytes(b"".join(lines))
    with pytest.raises(StoreUnavailable):
        TinyDBStore(tmp_path)


def test_second_instance_sees_changes_without_restart(tmp_path: Path) -> None:
    """The admin CLI is another process with its own instance: the server must see its writes,
    and the uniqueness rules must hold across both."""
    server = TinyDBStore(tmp_path)
    try:
        server.add_records([make_record("r1", iv="iv-1")])
        with TinyDBStore(tmp_path) as cli:
            assert cli.get_record("r1") == make_record("r1", iv="iv-1")
            cli.add_client(make_client("cl-new"))
            cli.set_setting("k", "v")
            assert cli.add_records([make_record("r2", iv="iv-1")])[0].status is (
                AddStatus.IV_REUSED
            )
            cli.add_records([make_record("r3")])
        assert server.get_client("cl-new") == make_client("cl-new")
        assert server.get_setting("k") == "v"
        assert server.get_record("r3") == make_record("r3")
        assert server.add_records([make_record("r3", fingerprint="z")])[0].status is (
            AddStatus.CONFLICT
        )
        # And the other way round, after the CLI's close() compacted and replaced the journal.
        server.set_client_disabled("cl-new", True)
        with TinyDBStore(tmp_path) as cli:
            client = cli.get_client("cl-new")
            assert client is not None
            assert client.disabled is True
    finally:
        server.close()


def run_other_process(data_dir: Path, code: str) -> str:
    """Run `code` with `store` open on `data_dir` in a separate Python process (like the CLI)."""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from service.storage.tinydb_store import TinyDBStore\n"
        "from tests.service.storage.store_contract import make_client, make_record\n"
        "store = TinyDBStore(Path(sys.argv[1]))\n" + textwrap.dedent(code) + "\nstore.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(data_dir)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_another_process_writes_are_seen(tmp_path: Path) -> None:
    server = TinyDBStore(tmp_path)
    try:
        server.add_records([make_record("r1", iv="iv-1")])
        out = run_other_process(
            tmp_path,
            """
            print(store.get_record("r1").iv)
            store.add_client(make_client("cl-cli"))
            print(store.add_records([make_record("r2", iv="iv-1")])[0].status.name)
            """,
        )
        assert out.split() == ["iv-1", "IV_REUSED"]
        assert server.get_client("cl-cli") == make_client("cl-cli")
        server.set_client_disabled("cl-cli", True)
        out = run_other_process(tmp_path, 'print(store.get_client("cl-cli").disabled)')
        assert out.strip() == "True"
    finally:
        server.close()


def test_follows_repeated_compactions_by_another_instance(tmp_path: Path) -> None:
    a = TinyDBStore(tmp_path, compact_lines=2)
    b = TinyDBStore(tmp_path, compact_lines=2)
    try:
        for i in range(30):
            writer, reader = (a, b) if i % 3 else (b, a)
            writer.add_records([make_record(f"r{i}")])
            if i % 7 == 0:
                writer.storage.compact()
            assert reader.get_record(f"r{i}") == make_record(f"r{i}")
        a.storage.wait_for_compaction()
        b.storage.wait_for_compaction()
        assert a.counts().records_by_issuer == {ISSUER_A: 30}
        assert b.counts().records_by_issuer == {ISSUER_A: 30}
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("keep_history", [True, False])
def test_instance_that_missed_compactions_catches_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_history: bool
) -> None:
    """An instance idle while another compacted twice cannot drain the journal it never saw.
    The history carried into each new journal lets it catch up without re-reading the snapshot;
    without history it notices the gap and reloads."""
    idle = TinyDBStore(tmp_path, compact_on_close=False)
    busy = TinyDBStore(tmp_path)
    reloads = []
    original = idle.storage._reload_locked
    monkeypatch.setattr(idle.storage, "_reload_locked", lambda: (reloads.append(1), original()))
    try:
        busy.add_records([make_record("a")])
        assert busy.storage.compact(keep_history=keep_history)
        busy.add_records([make_record("b")])
        assert busy.storage.compact(keep_history=keep_history)
        busy.add_records([make_record("c")])
        assert idle.get_record("a") == make_record("a")
        assert idle.get_record("c") == make_record("c")
        assert idle.counts().records_by_issuer == {ISSUER_A: 3}
        assert len(reloads) == (0 if keep_history else 1)
        idle.add_records([make_record("d")])
        assert busy.get_record("d") == make_record("d")
    finally:
        busy.close()
        idle.close()


def test_compaction_overtaken_by_another_process_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While A serialises its snapshot, B compacts twice and A follows B (closing the journal A
    captured, whose inode number the filesystem may hand to B's next journal). A must notice
    and drop its stale snapshot instead of copying history from the wrong file."""
    a = TinyDBStore(tmp_path, compact_on_close=False)
    b = TinyDBStore(tmp_path, compact_on_close=False)
    for i in range(20):
        a.add_records([make_record(f"a{i}")])
    real_write = tinydb_compaction.write_file
    calls = []

    def interfere(path: Path, chunks: Iterable[bytes]) -> None:
        if not calls:
            calls.append(path)
            for round_ in range(3):
                b.add_records([make_record(f"b{round_}")])
                assert b.storage.compact()
                assert a.get_record(f"b{round_}") is not None  # A follows, closing old files
        real_write(path, chunks)

    monkeypatch.setattr(tinydb_compaction, "write_file", interfere)
    assert a.storage.compact() is False
    monkeypatch.undo()
    a.add_records([make_record("after")])
    assert b.get_record("after") == make_record("after")
    a.close()
    b.close()
    with TinyDBStore(tmp_path) as fresh:
        assert fresh.counts().records_by_issuer == {ISSUER_A: 24}
    for line in (tmp_path / JOURNAL_NAME).read_bytes().splitlines():
        json.loads(line)


def test_compaction_preserves_data_and_shrinks_the_journal(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path, compact_on_close=False)
    fill(store)
    journal = tmp_path / JOURNAL_NAME
    assert store.storage.compact() is True
    assert store.storage.compact() is False  # nothing new
    assert store.storage.journal_lines == 0
    assert store.storage.compact(keep_history=False) is True
    assert len(journal.read_bytes().splitlines()) == 1  # just the header
    assert_filled(store)
    store.close()
    with TinyDBStore(tmp_path) as again:
        assert_filled(again)


def test_background_compaction_while_writing(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path, compact_lines=25, compact_on_close=False)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(100):
                store.add_records([make_record(f"t{t}-{i}")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    store.storage.wait_for_compaction()
    assert not errors
    assert store.storage.compacted_seq > 0
    assert store.counts().records_by_issuer == {ISSUER_A: 400}
    store.close()
    with TinyDBStore(tmp_path) as again:
        assert again.counts().records_by_issuer == {ISSUER_A: 400}
        assert again.get_record("t3-99") == make_record("t3-99")


def test_retire_key_removes_material_from_the_files(tmp_path: Path) -> None:
    with TinyDBStore(tmp_path, compact_on_close=False) as store:
        store.add_key(make_key("kv-a1"), demote_active=True)
        store.add_key(make_key("kv-a2", number=2), demote_active=True)
        store.retire_key("kv-a1", "2026-05-01T00:00:00Z")
        for name in (SNAPSHOT_NAME, JOURNAL_NAME):
            text = (tmp_path / name).read_text()
            assert "wrapped-kv-a1" not in text
            assert "wrapped-kv-a2" in text or name == JOURNAL_NAME


def test_write_failure_leaves_memory_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TinyDBStore(tmp_path, compact_on_close=False)
    store.add_records([make_record("before", iv="iv-shared")])

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", disk_full)
        patch.setattr(os, "fdatasync", disk_full)
        with pytest.raises(StoreUnavailable):
            store.add_records([make_record("lost", iv="iv-lost"), make_record("lost2")])
        with pytest.raises(StoreUnavailable):
            store.revoke_record("before", ISSUER_A, None, "2026-03-01T00:00:00Z")
    assert store.get_record("lost") is None
    before = store.get_record("before")
    assert before is not None
    assert before.status == "active"
    # The failed batch reserved nothing: its reference and IV are still free.
    outcome = store.add_records([make_record("lost", iv="iv-lost")])
    assert outcome[0].status is AddStatus.CREATED
    store.close()
    with TinyDBStore(tmp_path) as again:
        assert again.get_record("lost") == make_record("lost", iv="iv-lost")
        assert again.get_record("lost2") is None
        assert again.counts().records_by_issuer == {ISSUER_A: 2}


def test_ping(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "d")
    assert store.ping() is True
    store.close()
    assert store.ping() is False
    with pytest.raises(StoreUnavailable):
        store.get_record("x")


def test_unopenable_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreUnavailable):
        TinyDBStore(blocker / "store")


def test_files_are_private(tmp_path: Path) -> None:
    with TinyDBStore(tmp_path / "d") as store:
        store.set_setting("hmac_key", "secret")
    for name in (SNAPSHOT_NAME, JOURNAL_NAME):
        assert (tmp_path / "d" / name).stat().st_mode & 0o077 == 0


# --- crash safety ---------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from service.storage.tinydb_store import TinyDBStore
    from tests.service.storage.store_contract import make_record

    store = TinyDBStore(Path(sys.argv[1]), compact_lines=int(sys.argv[2]))
    round_ = sys.argv[3]
    n = 0
    while True:
        size = 1 + n % 40
        batch = [make_record(f"{round_}-{n}-{i}") for i in range(size)]
        store.add_records(batch)
        print(" ".join(r.service_reference for r in batch), flush=True)
        if n % 5 == 0:
            store.set_setting("last", f"{round_}-{n}")
        n += 1
    """
)


class Acknowledgements:
    """The writer's stdout, drained on a thread (so the writer never blocks on a full pipe): the
    lines it printed in full, each one an acknowledged batch, and an event set once `target` of
    them have arrived or the writer's output ended."""

    def __init__(self, stream: IO[bytes], target: int) -> None:
        self.lines: list[bytes] = []
        self.ready = threading.Event()
        self._target = target
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                break  # the last line, cut off by the kill: not acknowledged
            self.lines.append(line)
            if len(self.lines) >= self._target:
                self.ready.set()
        self.ready.set()

    def references(self) -> list[str]:
        self._thread.join(timeout=30)
        return [ref for line in self.lines for ref in line.decode().split()]


@pytest.mark.slow
def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    """A writer process is killed without warning once it has acknowledged a number of batches
    that differs per round, as does its compaction threshold, so the kill lands mid-append,
    mid-compaction or mid-rename; every batch it printed (acknowledged) must be there after
    reopening. The kill waits on the count, never on the clock, so a loaded machine only slows
    the test down."""
    acknowledged: list[str] = []
    for round_ in range(6):
        target = 10 + 25 * round_  # batches; compaction every 5 + 7 * round_ journal lines
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(5 + round_ * 7), f"k{round_}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None and proc.stderr is not None
        acks = Acknowledgements(proc.stdout, target)
        acks.ready.wait(timeout=120)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        references = acks.references()
        err = proc.stderr.read()
        proc.stderr.close()
        proc.stdout.close()
        if len(acks.lines) < target:
            pytest.fail(f"round {round_}: {len(acks.lines)} of {target} batches: {err.decode()}")
        assert proc.returncode == -signal.SIGKILL
        acknowledged.extend(references)

        with TinyDBStore(tmp_path, compact_on_close=round_ % 2 == 0) as store:
            missing = [ref for ref in acknowledged if store.get_record(ref) is None]
            assert not missing, f"round {round_}: {len(missing)} acknowledged records lost"
            assert sum(store.counts().records_by_issuer.values()) >= len(acknowledged)
            assert store.ping()
