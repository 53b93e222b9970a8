"""TinyDBStore against plain TinyDB, in one run on this machine.

Run: ``python bench/store_bench.py [--big] [--dir DIR]``. Prints, for a store holding 1k records
(and 100k with ``--big``): the time of one durable single-record insert, of one durable
1000-record batch, of a lookup by reference, of compaction and of reopening; and the same
operations on plain ``tinydb.TinyDB`` (JSONStorage) holding 1k records, so every figure also
appears as a ratio against stock TinyDB measured seconds before. Records are au.payslip.v1
records with earnings, superannuation and year-to-date parts (~1.2 KB of JSON each).

``--dir`` puts the files on another filesystem (fsync cost is a property of the disk: tmpfs
makes durability free and the numbers meaningless for a real deployment).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tinydb import Query, TinyDB

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.protocol.vocabulary import PayslipSchema
from service.storage.port import AddStatus, Record
from service.storage.tinydb_store import TinyDBStore

_counter = iter(range(10**9))


def make_record(issuer: str = "iss-bench") -> Record:
    """An au.payslip.v1 record with the optional parts a real pay run fills (spec.md)."""
    n = next(_counter)
    return Record(
        service_reference=f"{n:022d}",
        issuer_id=issuer,
        schema=PayslipSchema.AU_V1,
        issued_at="2026-01-31T09:00:00Z",
        payslip_non_pii={
            "period_start": "2026-01-01",
            "period_end": "2026-01-31",
            "payment_date": "2026-02-01",
            "currency": "AUD",
            "gross_cents": 812345 + n,
            "paygw_cents": 200000,
            "net_cents": 612345,
            "ytd_gross_cents": 5812345,
            "ytd_paygw_cents": 1200000,
            "pay_frequency": "monthly",
            "employment_basis": "full_time",
            "engagement_type": "permanent",
            "annual_rate_cents": 9800000,
            "earnings": [
                {"type": "ordinary", "units": 152.0, "rate_cents": 5012, "amount_cents": 761824},
                {"type": "overtime", "units": 4.5, "rate_cents": 7518, "amount_cents": 33831},
                {"type": "allowance", "allowance_type": "travel", "amount_cents": 16690},
            ],
            "superannuation": [
                {
                    "contribution_type": "superannuation_guarantee",
                    "amount_cents": 93420,
                    "fund_abn": "12345678901",
                }
            ],
            "ytd": {"taxable_cents": 5812345, "super_cents": 668420},
        },
        iv=f"{n:016d}",
        tag=f"{n:022d}",
        key_version="kv-7d1c2e0a-4b5f-4e3a-9d2c-1f0e9b8a7c6d",
        fingerprint=f"{n:064x}",
        registered_at="2026-02-01T10:00:00.123456Z",
    )


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds per call."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def per_call(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.2f} s "


def bench_plain_tinydb(base: Path, size: int) -> dict[str, float]:
    path = base / "plain.json"
    docs = [{"doc_type": "record", **_doc(make_record())} for _ in range(size)]
    with TinyDB(path) as db:
        db.insert_multiple(docs)
        refs = [d["service_reference"] for d in docs]
        insert = per_call(lambda: db.insert(_doc(make_record())), 20)
        batch = timed(lambda: db.insert_multiple([_doc(make_record()) for _ in range(1000)]), 3)
        q = Query()
        lookup_field = per_call(lambda: db.get(q.service_reference == random.choice(refs)), 20)
        lookup_id = per_call(lambda: db.get(doc_id=random.randint(1, size)), 20)
    return {"insert": insert, "batch": batch, "lookup": lookup_field, "lookup_id": lookup_id}


def bench_disk(base: Path) -> dict[str, float]:
    """What durability alone costs on this disk, and what serialising a batch alone costs: the
    floor under any store's commit."""
    path = base / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 1500 + b"\n"
    big = b"y" * 1_500_000 + b"\n"
    try:
        small_sync = per_call(lambda: (os.write(fd, line), os.fdatasync(fd)), 200)
        big_sync = timed(lambda: (os.write(fd, big), os.fdatasync(fd)), 7)
    finally:
        os.close(fd)
    docs = [_doc(make_record()) for _ in range(1000)]
    encode = timed(lambda: json.dumps(docs, separators=(",", ":")), 7)
    return {"small_sync": small_sync, "big_sync": big_sync, "encode": encode}


def _doc(record: Record) -> dict[str, object]:
    return {name: getattr(record, name) for name in Record.__slots__}


def batches(n: int, size: int = 1000) -> Iterator[list[Record]]:
    while n > 0:
        yield [make_record() for _ in range(min(size, n))]
        n -= size


def bench_store(base: Path, size: int) -> dict[str, float]:
    directory = base / f"store-{size}"
    rss_before = rss_mib()
    store = TinyDBStore(directory, compact_on_close=False)
    refs: list[str] = []
    t0 = time.perf_counter()
    for batch in batches(size):
        store.add_records(batch)
        refs += [r.service_reference for r in batch]
    fill = time.perf_counter() - t0
    store.storage.wait_for_compaction()
    gc.collect()

    def single() -> None:
        [outcome] = store.add_records([make_record()])
        assert outcome.status is AddStatus.CREATED

    insert = per_call(single, 300)
    prepared = [[make_record() for _ in range(1000)] for _ in range(7)]
    batch = timed(lambda: store.add_records(prepared.pop()), 7)
    sample = random.sample(refs, min(len(refs), 1000))
    lookups = itertools.cycle(sample)
    lookup = per_call(lambda: store.get_record(next(lookups)), 20000)
    duplicate = per_call(lambda: store.add_records([store.get_record(sample[0])]), 200)  # type: ignore[list-item]
    store.add_records([make_record()])  # something to compact
    compactor = threading.Thread(target=store.storage.compact)
    compactor.start()
    during: list[float] = []
    while compactor.is_alive():
        t0 = time.perf_counter()
        store.get_record(next(lookups))
        during.append(time.perf_counter() - t0)
    compactor.join()
    during.sort()
    store.add_records([make_record()])
    compact = timed(store.storage.compact, 1)
    rss = rss_mib() - rss_before
    final = sum(store.counts().records_by_issuer.values())
    store.close()
    t0 = time.perf_counter()
    reopened = TinyDBStore(directory, compact_on_close=False)
    reopen = time.perf_counter() - t0
    assert reopened.get_record(refs[-1]) is not None
    reopened.close()
    return {
        "fill": fill,
        "final": final,
        "insert": insert,
        "batch": batch,
        "lookup": lookup,
        "duplicate": duplicate,
        "compact": compact,
        "lookup_p99_compacting": during[int(len(during) * 0.99)] if during else 0.0,
        "lookup_max_compacting": during[-1] if during else 0.0,
        "reopen": reopen,
        "rss_mib": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also measure at 100k records")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the files")
    args = parser.parse_args()
    sizes = [1000, 100_000] if args.big else [1000]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        print(f"files in {base}; record JSON ~{len(str(_doc(make_record())))} bytes")
        disk = bench_disk(base)
        print("\nfloor on this machine:")
        print(f"  append 1.5 KB + fdatasync {fmt(disk['small_sync'])}")
        print(f"  append 1.5 MB + fdatasync {fmt(disk['big_sync'])}")
        print(f"  json.dumps 1000 records   {fmt(disk['encode'])}")
        plain = bench_plain_tinydb(base, 1000)
        print("\nplain tinydb.TinyDB (JSONStorage), 1k records in the file:")
        print(f"  single insert           {fmt(plain['insert'])}")
        print(f"  1000-record batch       {fmt(plain['batch'])}  (insert_multiple)")
        print(f"  lookup by field         {fmt(plain['lookup'])}")
        print(f"  lookup by doc_id        {fmt(plain['lookup_id'])}")
        for size in sizes:
            r = bench_store(base, size)
            print(f"\nTinyDBStore with {size:,} records (filled in {r['fill']:.1f} s):")
            print(
                f"  single durable insert   {fmt(r['insert'])}"
                f"  = {r['insert'] / plain['insert']:.4f} x plain insert"
            )
            print(
                f"  1000-record batch       {fmt(r['batch'])}"
                f"  = {r['batch'] / plain['batch']:.4f} x plain insert_multiple"
            )
            print(
                f"  lookup by reference     {fmt(r['lookup'])}"
                f"  = {r['lookup'] / plain['lookup']:.6f} x plain lookup by field"
                f" ({r['lookup'] / plain['lookup_id']:.6f} x by doc_id)"
            )
            print(f"  duplicate resubmission  {fmt(r['duplicate'])}  (no write)")
            print(f"  (the measurements above add records: {r['final']:,.0f} from here on)")
            print(f"  compaction              {fmt(r['compact'])}  (in the background)")
            print(
                f"  lookup during compaction p99 {fmt(r['lookup_p99_compacting'])},"
                f" max {fmt(r['lookup_max_compacting'])}"
            )
            print(f"  reopen (load + indexes) {fmt(r['reopen'])}")
            print(f"  peak RSS growth         {r['rss_mib']:8.0f} MiB")


if __name__ == "__main__":
    main()
