"""Issuer benchmarks: badge rendering, and a pay run end to end against batch registration alone.

Run: ``python bench/issue_bench.py [--rows 10000] [--badges 100]``. It starts a headless demo
service of its own (rate limits off) and prints, in one run:

* badge PNG time per badge at 720 px (`render_badge_png`: QR in the two-segment form of
  PROTOCOL §3, error correction chosen for the 720 px badge, the badge frame, PNG encoding) against
  segno's own PNG writer for the same scan URL at the nearest scale (`segno.make(...).save(png)`),
  and their ratio;
* a pay run of ``--rows`` payslips end to end (CSV read and checked, PII encrypted locally, batch
  registration with the fsynced journal, one badge PNG per record, results.csv) in records/s,
  against registering the same number of pre-sealed records with registerNonPIIBatch alone
  (batches of 1000, no badges), and their ratio.

The two pay-run numbers share the service, the machine and the run, so the ratio says what the
issuer's own work (mostly badges) costs on top of the registration it cannot avoid.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["PAYSLIP_RATE_LIMIT_IP"] = "off"
os.environ["PAYSLIP_RATE_LIMIT_CLIENT"] = "off"
os.environ["PAYSLIP_RATE_LIMIT_TOKEN_IP"] = "off"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import segno

from app.api_client import ApiClient
from app.issuer import (
    IssuerKey,
    PayRun,
    RunSettings,
    au2_text,
    new_reference,
    non_pii_record,
    render_badge_png,
    seal,
)
from service.server import start_demo

HEADER = (
    "schema,external_id,pii.employee_name,pii.position,pii.bsb,pii.account_number,"
    "pii.account_name,pii.address,period_end,payment_date,currency,gross,paygw,net,"
    "earnings.0.type,earnings.0.units,earnings.0.rate,earnings.0.amount"
)


def row(i: int) -> str:
    return (
        f"au.payslip.v2,EMP{i:06d},Bench Person {i},Analyst,062-000,{10_000_000 + i},"
        f'B Person {i},"{i} Bench Street, Benchville NSW 2000",2026-11-12,2026-11-13,AUD,'
        f"{1500 + i % 1000}.00,300.00,{1200 + i % 1000}.00,ordinary,38,{40 + i % 10}.00,"
        f"{1500 + i % 1000}.00"
    )


def pii(i: int) -> str:
    return au2_text(
        employee_name=f"Bench Person {i}",
        position="Analyst",
        bsb="062-000",
        account_number=str(10_000_000 + i),
        account_name=f"B Person {i}",
        address=f"{i} Bench Street, Benchville NSW 2000",
    )


def bench_badges(scan_base: str, key: IssuerKey, count: int) -> float:
    """Median ms per 720 px badge against segno's automatic-mask make of the same two-segment
    text (the symbol alone, no drawing): returns their ratio (target <= 0.1)."""
    urls = [
        seal(pii(i), key.encryption_key).scan_url(scan_base, new_reference()) for i in range(count)
    ]
    render_badge_png(urls[0], 720)  # warm up
    badge_times: list[float] = []
    segno_times: list[float] = []
    for url in urls:
        prefix, _, b32 = url.partition("#2.")
        segments: Any = [
            (prefix + "#2.", segno.consts.MODE_BYTE),
            (b32, segno.consts.MODE_ALPHANUMERIC),
        ]
        started = time.perf_counter()
        png = render_badge_png(url, 720)
        badge_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        segno.make(segments, error="m", boost_error=False, micro=False)
        segno_times.append(time.perf_counter() - started)
    badge = statistics.median(badge_times) * 1000
    plain = statistics.median(segno_times) * 1000
    ratio = badge / plain
    print(
        f"badge PNG at 720 px: {badge:.2f} ms per badge (median of {count}, {len(png)} bytes, "
        f"{len(urls[0])}-character scan URL)"
    )
    print(f"segno.make, same two segments, automatic mask: {plain:.1f} ms per symbol")
    print(f"ratio badge / segno automatic make: {ratio:.3f} (target <= 0.1)")
    return ratio


def bench_runs(url: str, scan_base: str, info: dict[str, str], rows: int) -> None:
    key = IssuerKey.from_info(info)
    with tempfile.TemporaryDirectory(prefix="issue-bench-") as folder:
        source = Path(folder) / "payrun.csv"
        source.write_text("\n".join([HEADER, *(row(i) for i in range(rows))]) + "\n")
        client = ApiClient(
            url, info["client_id"], info["client_secret"], issuer_url=url, deadline=120.0
        )
        with client:
            started = time.perf_counter()
            summary = PayRun(
                client, key, scan_base, RunSettings(source=source, out_dir=Path(folder) / "out")
            ).run()
            run_seconds = time.perf_counter() - started
            assert summary.progress.created == rows, summary.progress

            records = [
                non_pii_record(
                    "au.payslip.v2",
                    "2026-11-13T09:00:00Z",
                    {
                        "period_end": "2026-11-12",
                        "payment_date": "2026-11-13",
                        "currency": "AUD",
                        "gross": "1500.00",
                        "paygw": "300.00",
                        "net": "1200.00",
                    },
                    seal(pii(i), key.encryption_key),
                    reference=new_reference(),
                    key_version=key.key_version,
                    external_id=f"B{i}",
                )
                for i in range(rows)
            ]
            started = time.perf_counter()
            for start in range(0, rows, 1000):
                answers = client.register_batch(records[start : start + 1000])
                assert all(a["status"] == "created" for a in answers)
            batch_seconds = time.perf_counter() - started
    run_rate = rows / run_seconds
    batch_rate = rows / batch_seconds
    print(
        f"pay run end to end ({rows} payslips: read+check, encrypt, journal, batch register, "
        f"badges, results): {run_rate:.0f} records/s ({run_seconds:.1f} s, "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        f"batch registration alone ({rows} records): {batch_rate:.0f} records/s "
        f"({batch_seconds:.1f} s)"
    )
    print(f"ratio end to end / registration alone: {run_rate / batch_rate:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--badges", type=int, default=100)
    args = parser.parse_args()
    running = start_demo()
    try:
        assert running.demo is not None
        info = running.demo.issuer
        scan_base = running.config.scan_base
        bench_badges(scan_base, IssuerKey.from_info(info), args.badges)
        bench_runs(running.url, scan_base, info, args.rows)
    finally:
        running.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
