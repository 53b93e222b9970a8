"""What reading a payroll system's export through a mapping costs, against today's CSV layout.

Issue 25 / PROTOCOL §12: the mapping (sniffing, header resolution, day-first dates, `$1,234.56`
and `(12.50)` amounts, reasons reworded to the export's headers) may add at most 10% to the CPU
a payslip costs. Measured in one run, on the same N payslips written three ways:

* today's CSV layout (`pii.employee_name`, `period_end`, ISO dates, plain decimals): read and
  checked by `read_payrun` (the baseline);
* an AU-style export CSV (its own headers, `$3,846.15`, DD/MM/YYYY) through MAPPING.json;
* the same as an XLSX workbook (date and number cells), streamed by openpyxl.

"A payslip's CPU" is reading and checking plus the rest of its work on this machine: sealing
(AES-GCM, reference, body) and rendering its 720 px badge (stamping a PDF and the HTTP round
trip come on top, so the real share is smaller still). Prints CPU ms per row and the ratios.

    python bench/export_bench.py [--rows 2000]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.issuer import IssuerKey, new_reference, render_badge_png, seal
from app.issuer.export.mapping import ExportMapping
from app.issuer.run.source import read_payrun
from testbed.export_files import write_xlsx

OWN_HEADER = [
    "schema", "external_id", "pii.employee_name", "pii.position", "pii.bsb",
    "pii.account_number", "pii.address", "period_start", "period_end", "payment_date",
    "currency", "gross", "paygw", "net", "reimbursements",
]  # fmt: skip
EXPORT_HEADER = [
    "Employee ID", "Employee", "Job Title", "BSB", "Account Number", "Address",
    "Pay Period Start", "Pay Period End", "Payment Date", "Gross Earnings", "PAYG Withheld",
    "Net Pay", "Reimbursements",
]  # fmt: skip
MAPPING = ExportMapping.from_json(
    {
        "columns": dict(
            zip(
                EXPORT_HEADER,
                [h for h in OWN_HEADER if h not in ("schema", "currency")],
                strict=True,
            )
        ),
        "date_format": "DD/MM/YYYY",
        "schema": "au.payslip.v2",
        "defaults": {"currency": "AUD"},
    }
)


def person(i: int) -> list[str]:
    return [f"E{i:06d}", f"Person Number{i}", "Store Manager", "062-000", f"{10_000_000 + i}",
            f"{i} Sample Street, Exampleton NSW 2000"]  # fmt: skip


def write_files(folder: Path, rows: int) -> tuple[Path, Path, Path]:
    own, export, xlsx_rows = folder / "own.csv", folder / "export.csv", []
    with open(own, "w", newline="") as a, open(export, "w", newline="") as b:
        wa, wb = csv.writer(a), csv.writer(b)
        wa.writerow(OWN_HEADER)
        wb.writerow(EXPORT_HEADER)
        for i in range(rows):
            gross = f"{3000 + i % 1000}.15"
            wa.writerow(["au.payslip.v2", *person(i), "2026-10-30", "2026-11-12", "2026-11-13",
                         "AUD", gross, "782.00", f"{2218 + i % 1000}.15", "-12.50"])  # fmt: skip
            wb.writerow([*person(i), "30/10/2026", "12/11/2026", "13/11/2026",
                         f"${3 + (i % 1000) // 1000},{i % 1000:03d}.15", "$782.00",
                         f"${2218 + i % 1000}.15", "(12.50)"])  # fmt: skip
            xlsx_rows.append([*person(i), dt.date(2026, 10, 30), dt.date(2026, 11, 12),
                              dt.date(2026, 11, 13), 3000.15 + i % 1000, 782.0,
                              2218.15 + i % 1000, -12.5])  # fmt: skip
    xlsx = write_xlsx(folder / "export.xlsx", EXPORT_HEADER, xlsx_rows)
    return own, export, xlsx


def cpu_ms_per_row(call: Callable[[], int], repeat: int = 3) -> float:
    """The best of `repeat` runs, in CPU ms per row (process time: other engineers' load on the
    shared cores does not count)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        rows = call()
        best = min(best, (time.process_time() - start) * 1000 / rows)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    key = IssuerKey(b"k" * 32, None)
    with tempfile.TemporaryDirectory() as tmp:
        own, export, xlsx = write_files(Path(tmp), args.rows)

        def read(path: Path, mapping: ExportMapping | None) -> int:
            rows = list(read_payrun(path, mapping=mapping))
            bad = [r for r in rows if not hasattr(r, "pii_text")]
            assert not bad, bad[:1]
            return len(rows)

        today = cpu_ms_per_row(lambda: read(own, None))
        mapped = cpu_ms_per_row(lambda: read(export, MAPPING))
        from_xlsx = cpu_ms_per_row(lambda: read(xlsx, MAPPING))
        sample = 200

        def rest() -> int:
            for i in range(sample):
                url = seal(f"AU2|Person Number{i}|", key.encryption_key).scan_url(
                    "https://verify.example.test", new_reference()
                )
                render_badge_png(url, 720)
            return sample

        rest_ms = cpu_ms_per_row(rest, repeat=2)
    payslip = today + rest_ms
    print(f"rows: {args.rows}")
    print(f"today's CSV layout, read+check:  {today:.3f} ms CPU/row (baseline)")
    print(f"export CSV + mapping:            {mapped:.3f} ms CPU/row ({mapped / today:.2f}x)")
    print(f"export XLSX + mapping:           {from_xlsx:.3f} ms CPU/row ({from_xlsx / today:.2f}x)")
    print(f"seal + 720 px badge:             {rest_ms:.3f} ms CPU/row")
    print(
        f"a payslip's CPU, today {payslip:.3f} ms; mapping adds "
        f"{(mapped - today) / payslip:+.1%} (CSV), {(from_xlsx - today) / payslip:+.1%} (XLSX)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
