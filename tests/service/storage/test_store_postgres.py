"""PostgresStore against a real PostgreSQL server.

One throwaway database per test module, one fresh schema (selected through `search_path`) per
test, so tests never see each other's rows and nothing is left behind. The server comes from
PAYSLIP_TEST_DATABASE_URL (default: the local trust-auth server). Without a server the tests skip,
except in CI (CI=true) where a missing server must fail loudly instead of silently testing nothing.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from service.storage.pg_database import Retry, transaction
from service.storage.pg_rows import RECORD_INSERT, record_params
from service.storage.port import (
    AddOutcome,
    AddStatus,
    Issuer,
    KeyVersion,
    Record,
    Store,
    StoreUnavailable,
)
from service.storage.postgres_store import SCHEMA_VERSION, PostgresStore
from testbed.cluster import throwaway_database
from testbed.waiting import wait_until
from tests.service.storage.store_contract import StoreContract, run_threads

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """A fresh database for this module, dropped at the end."""
    with throwaway_database(prefix="pv_test") as url:
        yield url


@pytest.fixture
def schema_url(database_url: str) -> str:
    """A URL whose connections see only a brand-new, empty schema."""
    schema = f"s_{secrets.token_hex(6)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return make_conninfo(database_url, options=f"-csearch_path={schema}")


@pytest.fixture
def store(schema_url: str) -> Iterator[PostgresStore]:
    with contextlib.closing(PostgresStore(schema_url)) as s:
        yield s


@pytest.fixture
def second_store(schema_url: str) -> Iterator[PostgresStore]:
    """Another instance on the same schema: what a second server worker process would open."""
    with contextlib.closing(PostgresStore(schema_url)) as s:
        yield s


def make_record(n: int, *, issuer: str = "iss-1", iv: str | None = None, **kw: Any) -> Record:
    fields: dict[str, Any] = {
        "service_reference": f"REF-{n:06d}",
        "issuer_id": issuer,
        "schema": "payslip/v1",
        "issued_at": "2025-01-31",
        "payslip_non_pii": {"period": "2025-01", "gross": 4321.5, "lines": [1, 2, {"x": None}]},
        "iv": iv if iv is not None else f"iv-{n:06d}",
        "tag": f"tag-{n}",
        "key_version": "k1",
        "fingerprint": f"fp-{n}",
        "registered_at": "2025-02-01T10:00:00Z",
    }
    fields.update(kw)
    return Record(**fields)


def statuses(outcomes: list[AddOutcome]) -> list[AddStatus]:
    return [o.status for o in outcomes]


def _closed_port() -> int:
    """A local TCP port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _terminate_backends(schema_url: str) -> int:
    """Kill every other connection to this database, as a server restart would."""
    with psycopg.connect(schema_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


# --- the shared contract -----------------------------------------------------------------------


class TestPostgresStoreContract(StoreContract):
    """Every port rule, run against PostgreSQL with a fresh schema per test."""

    @pytest.fixture
    def store(self, schema_url: str) -> Iterator[Store]:
        with contextlib.closing(PostgresStore(schema_url)) as s:
            yield s


# --- the Postgres-specific behaviour ---------------------------------------------------------


class TestConcurrencyAcrossInstances:
    """Two PostgresStore instances stand in for two worker processes (separate pools, separate
    connections): only the database can arbitrate between them."""

    def test_same_reference_from_many_threads_has_exactly_one_winner(
        self, store: PostgresStore, second_store: PostgresStore
    ) -> None:
        threads_per_store = 6
        barrier = threading.Barrier(threads_per_store * 2)
        results: list[AddOutcome] = []
        lock = threading.Lock()

        def register(s: PostgresStore, i: int) -> None:
            # Same reference, different content and IV each time: all but one must CONFLICT.
            record = make_record(1, iv=f"iv-t{i}", fingerprint=f"fp-t{i}")
            barrier.wait()
            out = s.add_records([record])
            with lock:
                results.extend(out)

        run_threads(threads_per_store * 2, lambda i: register((store, second_store)[i % 2], i))
        counts = Counter(statuses(results))
        assert counts == {AddStatus.CREATED: 1, AddStatus.CONFLICT: threads_per_store * 2 - 1}
        winner = next(o.record for o in results if o.status is AddStatus.CREATED)
        assert store.get_record("REF-000001") == winner
        assert second_store.get_record("REF-000001") == winner

    def test_same_iv_from_many_threads_has_exactly_one_winner(
        self, store: PostgresStore, second_store: PostgresStore
    ) -> None:
        n_threads = 10
        barrier = threading.Barrier(n_threads)
        results: dict[int, AddOutcome] = {}

        def register(s: PostgresStore, i: int) -> None:
            record = make_record(100 + i, iv="shared-iv")
            barrier.wait()
            (results[i],) = s.add_records([record])

        run_threads(n_threads, lambda i: register((store, second_store)[i % 2], i))
        counts = Counter(o.status for o in results.values())
        assert counts == {AddStatus.CREATED: 1, AddStatus.IV_REUSED: n_threads - 1}
        assert store.counts().records_by_issuer == {"iss-1": 1}

    def test_overlapping_batches_store_each_reference_once(
        self, store: PostgresStore, second_store: PostgresStore
    ) -> None:
        """Batches that overlap partially: every record is created by exactly one batch, the
        others see DUPLICATE (same content), and each batch stays all-or-nothing per record."""
        n_threads, batch_size = 8, 200
        barrier = threading.Barrier(n_threads)
        results: dict[int, list[AddOutcome]] = {}

        def register(s: PostgresStore, i: int) -> None:
            start = i * batch_size // 2  # each batch overlaps half of the next one
            batch = [make_record(n) for n in range(start, start + batch_size)]
            barrier.wait()
            results[i] = s.add_records(batch)

        run_threads(n_threads, lambda i: register((store, second_store)[i % 2], i))
        created: Counter[str] = Counter()
        for outcomes in results.values():
            assert len(outcomes) == batch_size
            for o in outcomes:
                assert o.status in (AddStatus.CREATED, AddStatus.DUPLICATE)
                assert o.record is not None
                if o.status is AddStatus.CREATED:
                    created[o.record.service_reference] += 1
        distinct = (n_threads + 1) * batch_size // 2
        assert len(created) == distinct
        assert set(created.values()) == {1}
        assert store.counts().records_by_issuer == {"iss-1": distinct}

    def test_uncommitted_collision_is_resolved_after_the_other_writer_commits(
        self, store: PostgresStore, schema_url: str
    ) -> None:
        """Forces the retry path: our pre-check cannot see another writer's uncommitted row, our
        insert then waits for it and fails when it commits; the store must retry and report the
        outcome against the committed row instead of failing or double-creating."""
        other = make_record(7, fingerprint="fp-other")
        mine = [make_record(7), make_record(8)]
        result: list[list[AddOutcome]] = []
        with psycopg.connect(schema_url) as writer:
            writer.execute(
                'INSERT INTO records (service_reference, issuer_id, "schema", issued_at, '
                "payslip_non_pii, iv, tag, key_version, fingerprint, registered_at) "
                "VALUES (%s, %s, %s, %s, '{}'::jsonb, %s, %s, %s, %s, %s)",
                (
                    other.service_reference,
                    other.issuer_id,
                    other.schema,
                    other.issued_at,
                    other.iv,
                    other.tag,
                    other.key_version,
                    other.fingerprint,
                    other.registered_at,
                ),
            )
            worker = threading.Thread(target=lambda: result.append(store.add_records(mine)))
            worker.start()
            with psycopg.connect(schema_url, autocommit=True) as observer:

                def waiting_on_a_lock() -> bool:
                    row = observer.execute(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                    ).fetchone()
                    return bool(row and row[0] > 0)

                wait_until(waiting_on_a_lock, "add_records waiting on the uncommitted row", 20)
            writer.commit()
        worker.join(timeout=30)
        assert statuses(result[0]) == [AddStatus.CONFLICT, AddStatus.CREATED]
        stored = store.get_record("REF-000007")
        assert stored is not None and stored.fingerprint == "fp-other"
        assert store.get_record("REF-000008") == mine[1]


class TestUnavailable:
    def test_open_on_a_closed_port_raises_store_unavailable(self) -> None:
        url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres"
        with pytest.raises(StoreUnavailable) as info:
            PostgresStore(url, connect_timeout=2)
        # Raised on the refusal itself, not after waiting out a pool's or a connect timeout.
        assert "Connection refused" in str(info.value.__cause__)

    def test_invalid_url_raises_store_unavailable_without_echoing_it(self) -> None:
        with pytest.raises(StoreUnavailable) as info:
            PostgresStore("postgresql://postgres:s3cret@127.0.0.1:5432/db?bogus_option=1")
        assert "s3cret" not in str(info.value)

    def test_unknown_database_raises_store_unavailable(self, database_url: str) -> None:
        with pytest.raises(StoreUnavailable):
            PostgresStore(make_conninfo(database_url, dbname="pv_no_such_database"))

    def test_connections_killed_by_a_restart_cost_no_failed_call(
        self, store: PostgresStore, schema_url: str
    ) -> None:
        """A restart kills every pooled connection; the next calls (reads and writes) must not
        fail: dead connections are found at checkout, or the work is tried once more."""
        store.add_records([make_record(1)])
        for n in range(2, 5):
            assert _terminate_backends(schema_url) >= 1
            assert store.get_record("REF-000001") == make_record(1)
            assert _terminate_backends(schema_url) >= 1
            assert statuses(store.add_records([make_record(n)])) == [AddStatus.CREATED]
        assert store.counts().records_by_issuer == {"iss-1": 4}

    def test_ping_survives_a_server_side_disconnect(
        self, store: PostgresStore, schema_url: str
    ) -> None:
        assert store.ping()
        _terminate_backends(schema_url)
        assert store.ping()

    def test_closed_store_is_unavailable(self, schema_url: str) -> None:
        s = PostgresStore(schema_url)
        s.close()
        assert s.ping() is False
        with pytest.raises(StoreUnavailable):
            s.get_record("REF-000001")
        with pytest.raises(StoreUnavailable):
            s.add_records([make_record(1)])
        s.close()  # idempotent

    def test_database_errors_never_escape_as_psycopg_errors(self, store: PostgresStore) -> None:
        # PostgreSQL text cannot hold NUL: the server rejects it. The domain validates input
        # long before this, but if anything slips through the caller sees only the port's error.
        with pytest.raises(StoreUnavailable) as info:
            store.add_records([make_record(1, tag="a\x00b")])
        assert not isinstance(info.value, psycopg.Error)
        assert store.get_record("REF-000001") is None
        assert store.add_records([make_record(1)])[0].status is AddStatus.CREATED


class TestRetryOnLostConnection:
    """`PgDatabase.run` repeats work whose connection broke under it only when that is certainly
    safe. The work kills its own backend, as a restart between checkout and use would."""

    @staticmethod
    def _kill_own_backend(conn: psycopg.Connection[Any]) -> None:
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    def _count(self, store: PostgresStore) -> int:
        return sum(store.counts().records_by_issuer.values())

    def test_a_read_is_tried_once_more(self, store: PostgresStore) -> None:
        store.add_records([make_record(1)])
        attempts: list[int] = []

        def work(conn: psycopg.Connection[Any]) -> object:
            attempts.append(1)
            if len(attempts) == 1:
                self._kill_own_backend(conn)
            return conn.execute("SELECT count(*) AS n FROM records").fetchone()

        assert store._db.run(work, Retry.SAFE) == {"n": 1}
        assert len(attempts) == 2

    def test_a_transaction_lost_before_commit_is_tried_once_more(
        self, store: PostgresStore
    ) -> None:
        attempts: list[int] = []

        def work(conn: psycopg.Connection[Any]) -> None:
            attempts.append(1)
            with transaction(conn):
                conn.execute(RECORD_INSERT, record_params(make_record(len(attempts))))
                if len(attempts) == 1:
                    self._kill_own_backend(conn)  # the server rolls the insert back

        store._db.run(work, Retry.BEFORE_COMMIT)
        assert len(attempts) == 2
        assert store.get_record("REF-000001") is None
        assert store.get_record("REF-000002") is not None

    def test_a_transaction_lost_after_commit_is_not_repeated(self, store: PostgresStore) -> None:
        attempts: list[int] = []

        def work(conn: psycopg.Connection[Any]) -> None:
            attempts.append(1)
            with transaction(conn):
                conn.execute(RECORD_INSERT, record_params(make_record(len(attempts))))
            self._kill_own_backend(conn)  # committed: a repeat would insert a second record

        with pytest.raises(StoreUnavailable):
            store._db.run(work, Retry.BEFORE_COMMIT)
        assert len(attempts) == 1
        assert self._count(store) == 1

    def test_a_plain_insert_is_never_repeated(self, store: PostgresStore) -> None:
        attempts: list[int] = []

        def work(conn: psycopg.Connection[Any]) -> None:
            attempts.append(1)
            self._kill_own_backend(conn)

        with pytest.raises(StoreUnavailable):
            store._db.run(work, Retry.NEVER)
        assert len(attempts) == 1
        assert store.ping()  # and the pool has replaced the dead connection


class TestDuplicateAdds:
    """The port leaves adding an existing id open; this adapter refuses rather than replaces, so a
    race between two workers can never overwrite a key or credential already handed out."""

    def test_duplicate_key_version_is_refused_and_demotion_rolled_back(
        self, store: PostgresStore
    ) -> None:
        k1 = KeyVersion("iss-1.1", "iss-1", 1, "active", "w1", "2026-01-01T00:00:00Z")
        k2 = KeyVersion("iss-1.2", "iss-1", 2, "active", "w2", "2026-01-02T00:00:00Z")
        store.add_key(k1, demote_active=True)
        store.add_key(k2, demote_active=True)
        with pytest.raises(StoreUnavailable):
            store.add_key(replace(k2, wrapped="other"), demote_active=True)
        assert store.get_key("iss-1.2") == k2
        assert store.get_key("iss-1.1") == replace(k1, state="live")

    def test_duplicate_issuer_is_refused(self, store: PostgresStore) -> None:
        issuer = Issuer("iss-1", "Acme", "2026-01-01T00:00:00Z")
        store.add_issuer(issuer)
        with pytest.raises(StoreUnavailable):
            store.add_issuer(replace(issuer, name="Evil"))
        assert store.get_issuer("iss-1") == issuer


class TestSchemaAndPool:
    def test_schema_creation_is_idempotent_and_versioned(self, schema_url: str) -> None:
        for _ in range(2):
            PostgresStore(schema_url).close()
        with psycopg.connect(schema_url) as conn:
            rows = conn.execute("SELECT version FROM schema_version").fetchall()
        assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]  # every migration, once

    def test_concurrent_first_open_by_several_workers(self, schema_url: str) -> None:
        n = 6
        barrier = threading.Barrier(n)
        stores: list[PostgresStore] = []

        def open_store(_: int) -> None:
            barrier.wait()
            stores.append(PostgresStore(schema_url, pool_size=1))

        try:
            run_threads(n, open_store, timeout=60)
        finally:
            for s in stores:
                s.close()
        assert len(stores) == n

    def test_newer_schema_version_is_refused(self, schema_url: str) -> None:
        PostgresStore(schema_url).close()
        with psycopg.connect(schema_url) as conn:
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
        with pytest.raises(StoreUnavailable, match="newer"):
            PostgresStore(schema_url)

    def test_data_survives_reopening(self, schema_url: str) -> None:
        s = PostgresStore(schema_url)
        s.add_records([make_record(1)])
        s.set_setting("hmac_key", "abc")
        s.close()
        s = PostgresStore(schema_url)
        try:
            assert s.get_record("REF-000001") == make_record(1)
            assert s.get_setting("hmac_key") == "abc"
        finally:
            s.close()

    def test_pool_never_opens_more_than_pool_size_connections(self, schema_url: str) -> None:
        app = f"pv_pool_{secrets.token_hex(4)}"
        s = PostgresStore(make_conninfo(schema_url, application_name=app), pool_size=2)
        peak = 0
        stop = threading.Event()

        def watch() -> None:
            nonlocal peak
            with psycopg.connect(schema_url, autocommit=True) as conn:
                while not stop.is_set():
                    row = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                        (app,),
                    ).fetchone()
                    peak = max(peak, row[0] if row else 0)  # looked at again at once

        def hammer(i: int) -> None:
            for j in range(20):
                s.add_records([make_record(i * 100 + j)])
                s.get_record(f"REF-{i * 100 + j:06d}")

        watcher = threading.Thread(target=watch)
        watcher.start()
        workers = [threading.Thread(target=hammer, args=(i,)) for i in range(8)]
        try:
            for t in workers:
                t.start()
            for t in workers:
                t.join(timeout=60)
        finally:
            stop.set()
            watcher.join(timeout=10)
            s.close()
        assert 1 <= peak <= 2

    def test_thousand_record_batch_is_created_in_one_call(self, store: PostgresStore) -> None:
        """How fast: bench/scale_bench.py times a 1000-record batch against a COPY of the same
        rows in the same run (target <= 4), which a row-by-row loop would miss by far."""
        batch = [make_record(n, payslip_non_pii={"n": n, "pad": "x" * 1400}) for n in range(1000)]
        outcomes = store.add_records(batch)
        assert statuses(outcomes) == [AddStatus.CREATED] * 1000
        assert store.get_record(batch[-1].service_reference) == batch[-1]

    def test_json_round_trip_keeps_values(self, store: PostgresStore) -> None:
        payload = {"b": 1, "a": [1.25, "é", None, True], "nested": {"z": {"y": []}}, "big": 2**53}
        record = make_record(1, payslip_non_pii=payload, key_version=None)
        store.add_records([record])
        assert store.get_record("REF-000001") == record
        assert replace(record, payslip_non_pii={}) != record  # sanity: the payload is compared
