"""Applicant check benchmark: six payslip PDFs checked as one applicant vs one PDF checked alone.

Both in this one warm process against the same service (the embedded demo instance, served over
loopback HTTP as the app uses it), with the same API client: one token, one connection pool.
The single check is what ``app verify ONE.pdf`` does (read the PDF, verify its code); the set is
what ``app verify SIX PDFs --applicant-name`` does (every PDF read and verified concurrently,
then the §10 rules). Rounds alternate so both see the same machine load.

Target (issue 24): the set in <= 2.5x the single check.

Beside the ratio the bench prints the floor no scheduling can beat: the set does the single
check's work six times (read, decode, verify; the embedded service's side runs in this process
too), so it needs at least six times the single check's CPU over the cores this process can use:
floor = 6 x CPU(one) / cores, as a multiple of the single check's wall time. One check runs on
one core (read, then verify), so its wall time is about its CPU and the floor is about 6 / cores:
3x on 2 cores, whatever a document costs. Below it the set would have to do less per document
than one check does, i.e. skip something. In one process the floor is higher still: about two
thirds of a document's CPU is Python holding the GIL (pypdf, the HTTP client, the service's
request handling); only zxing-cpp's decode and pdfium run beside it, so six documents take at
least six times that Python, ~3.5-4x one check (docs/applicant.md, Benchmark, has the
figures). "six PDFs one by one" (the same six read and verified in turn, one thread) shows what
concurrency buys on the machine as it is: nothing when no core is free.

Usage: python bench/applicant_bench.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PAYSLIP_NO_KEYRING", "1")

from app.applicant.gather import check_input, check_inputs  # noqa: E402
from app.applicant.rules import check_set  # noqa: E402
from app.inputs.reading import InputReading, read_input  # noqa: E402
from app.settings.desk import SecretStore, Settings  # noqa: E402
from app.shell.context import start_demo_context  # noqa: E402
from app.verify.flow import verify_reading  # noqa: E402
from service.protocol.vocabulary import Verdict  # noqa: E402
from testbed.applicant_payslips import APPLICANT, register_fortnights, write_inputs  # noqa: E402

TARGET = 2.5


def reader(pdf: str) -> Callable[[], InputReading]:
    return lambda: read_input(pdf)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as folder:
        os.environ["PAYSLIP_CONFIG_DIR"] = str(Path(folder) / "config")
        context = start_demo_context(Settings(), SecretStore(Path(folder), use_keyring=False))
        try:
            assert context.issuer is not None and context.issuer_info is not None
            payslips = register_fortnights(context.issuer, context.issuer_info.encryption_key, 6)
            pdfs = write_inputs(Path(folder), payslips, ["pdf"] * 6)
            client = context.verifier

            def single() -> None:
                outcome = verify_reading(client, read_input(pdfs[0]))
                assert outcome.verdict == Verdict.VERIFIED, outcome.reason

            def applicant() -> None:
                docs = check_inputs(client, pdfs)
                check = check_set(docs, today=date.today(), applicant_name=APPLICANT)
                assert check.verdict == Verdict.VERIFIED, [p.check for p in check.problems]

            def one_by_one() -> None:
                docs = [
                    d
                    for i, pdf in enumerate(pdfs)
                    for d in check_input(client, i, pdf, reader(pdf))
                ]
                check = check_set(docs, today=date.today(), applicant_name=APPLICANT)
                assert check.verdict == Verdict.VERIFIED, [p.check for p in check.problems]

            runs = {"one": single, "six": applicant, "in turn": one_by_one}
            for run in runs.values():
                run()  # warm: token, connections, decoders
            wall: dict[str, list[float]] = {name: [] for name in runs}
            cpu: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    start, start_cpu = time.perf_counter(), time.process_time()
                    run()
                    wall[name].append(time.perf_counter() - start)
                    cpu[name].append(time.process_time() - start_cpu)
        finally:
            context.close()
    p_one, p_six, p_turn = (statistics.median(wall[name]) for name in runs)
    c_one, c_six, c_turn = (statistics.median(cpu[name]) for name in runs)
    ratio = p_six / p_one
    load = os.getloadavg()[0]
    cores = len(os.sched_getaffinity(0))
    print(f"cores: {cores}  load average: {load:.1f}  rounds: {rounds}")
    print(f"one PDF alone       median {p_one * 1000:7.1f} ms  (CPU {c_one * 1000:6.1f} ms)")
    print(f"six PDFs, one set   median {p_six * 1000:7.1f} ms  (CPU {c_six * 1000:6.1f} ms)")
    print(f"six PDFs one by one median {p_turn * 1000:7.1f} ms  (CPU {c_turn * 1000:6.1f} ms)")
    cpu_ratio = c_six / c_one
    floor = 6 * c_one / cores
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"ratio six/one       {ratio:.2f}x wall (target <= {TARGET}x: {verdict})")
    print(f"                    {cpu_ratio:.2f}x CPU of this process (service included)")
    print(
        f"floor on {cores} cores   6 x {c_one * 1000:.1f} ms CPU / {cores} = {floor * 1000:.1f} ms"
        f" = {floor / p_one:.2f}x the single check's wall"
    )
    if p_one > 1.2 * c_one:  # the single check waited for a core: its wall is not its work
        print(f"{'':20}({floor / c_one:.2f}x its CPU: the single check waited for a core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
