"""Pay runs: importing and checking rows, registering in batches, resuming after a crash or a lost
network, the encrypted journal, stamped PDFs, and the CLI killed in the middle of a run."""

from __future__ import annotations

import csv
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from app.api import ApiClient, ServiceUnreachable
from app.inputs.reading import read_input
from app.issuer import IssuerKey, PayRun, RunInterrupted, RunSettings
from app.issuer.journal import JOURNAL_NAME, JournalError, RunJournal
from app.issuer.run.rows import PayrunFileError, PayrunRow, RowProblem
from app.issuer.run.source import read_payrun, read_text_rows
from service.protocol.barcode_text import parse_barcode
from service.protocol.schemas import BatchResultItem
from testbed.factories import blank_pdf
from tests.service.conftest import (  # noqa: F401 - the fixtures
    LiveService,
    live,
    tinydb_server,
)

ROOT = Path(__file__).resolve().parents[3]
RESOURCES = ROOT / "resources"
HEADER = (
    "schema,external_id,pii.employee_name,pii.account_number,pii.address,award,period_end,"
    "payment_date,currency,gross,paygw,net,earnings.0.type,earnings.0.amount"
)


def good_row(i: int, name: str | None = None, award: str = "") -> str:
    person = name or f"Person Number{i}"
    return (
        f"au.payslip.v2,EMP{i:05d},{person},{10_000_000 + i},{i} Sample St,{award},2026-11-12,"
        f"2026-11-13,AUD,{1000 + i}.00,100.00,{900 + i}.00,ordinary,{1000 + i}.00"
    )


def write_csv(path: Path, rows: Sequence[str]) -> Path:
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def results(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def issuer_client(service: LiveService) -> ApiClient:
    url = service.url
    return ApiClient(
        url, service.issuer["client_id"], service.issuer["client_secret"], issuer_url=url
    )


def verifier_client(service: LiveService) -> ApiClient:
    url = service.url
    return ApiClient(
        url, service.verifier["client_id"], service.verifier["client_secret"], verifier_url=url
    )


def record_count(service: LiveService) -> int:
    counts = service.store.counts()
    return counts.records_by_issuer.get(service.issuer["issuer_id"], 0)


def run(
    service: LiveService, source: Path, out: Path, client: ApiClient | None = None, **kw: Any
) -> Any:
    settings = RunSettings(source=source, out_dir=out, workers=1, **kw)
    own = issuer_client(service) if client is None else None  # closed here, after the run
    try:
        return PayRun(
            client or own,
            IssuerKey.from_info(service.issuer),
            service.config.scan_base,
            settings,
        ).run()
    finally:
        if own is not None:
            own.close()


# --- reading and checking --------------------------------------------------------------------


def test_sample_files_are_valid_and_agree() -> None:
    from_csv = list(read_payrun(RESOURCES / "sample_payrun.csv"))
    from_json = list(read_payrun(RESOURCES / "sample_payrun.json"))
    assert all(isinstance(r, PayrunRow) for r in from_csv + from_json)
    assert len(from_csv) == len(from_json) >= 6
    assert {r.schema for r in from_csv if isinstance(r, PayrunRow)} == {
        "au.payslip.v1",
        "au.payslip.v2",
        "nz.payslip.v1",
        "nz.payslip.v2",
    }
    for a, b in zip(from_csv, from_json, strict=True):
        assert isinstance(a, PayrunRow) and isinstance(b, PayrunRow)
        assert (a.payslip_non_pii, a.pii_text, a.external_id) == (
            b.payslip_non_pii,
            b.pii_text,
            b.external_id,
        )


def test_malformed_rows_are_reported_one_by_one() -> None:
    text = "\n".join(
        [
            HEADER,
            good_row(1),
            "au.payslip.v2,EMP00002,Short Row",  # missing columns
            good_row(3).replace("1003.00,100.00", "10x3.00,100.00"),  # bad number
            good_row(4).replace("2026-11-12", "2026-02-30"),  # bad date
            good_row(5, award="Zebedee Quxworth Retail Award", name="Zebedee Quxworth"),
            good_row(6, award="Contact 0412 345 678"),
            good_row(7).replace("EMP00007", "EMP00001"),  # repeated external id
            good_row(8).replace("au.payslip.v2", "au.payslip.v9"),
            good_row(9).replace("Person Number9", ""),
            good_row(10, award="General Retail Industry Award"),
        ]
    )
    rows = read_text_rows(text)
    ok = [r.number for r in rows if isinstance(r, PayrunRow)]
    assert ok == [1, 10]
    problems = {r.number: r.reasons for r in rows if isinstance(r, RowProblem)}
    assert "cells but the header has" in problems[2][0]
    assert problems[2] and next(r for r in rows if r.number == 2).external_id == "EMP00002"
    assert problems[3] == ("gross: expected a number such as 1234.50",)
    assert problems[4] == ("period_end: expected a real calendar date as YYYY-MM-DD",)
    assert problems[5] == (
        "award: seems to contain the employee's name; personal data belongs only in the "
        "employee's details, where it is encrypted",
    )
    assert "long number" in problems[6][0]
    assert problems[7] == ("external_id: repeats row 1",)
    assert problems[8][0].startswith("schema: not a known schema")
    assert problems[9] == ("pii.employee_name: required",)
    # Reasons never quote the values they are about.
    flat = " ".join(" ".join(r) for r in problems.values())
    for value in ("Zebedee", "Quxworth", "0412", "10x3", "2026-02-30", "Short Row"):
        assert value not in flat


def test_stray_pii_in_account_number_and_address() -> None:
    rows = read_text_rows(
        "\n".join(
            [
                HEADER,
                good_row(1, award="Pay to 10000001"),
                good_row(2, award="Award at 2 Sample St"),
                good_row(3).replace("EMP00003", "person-number3"),
            ]
        )
    )
    reasons = [r.reasons for r in rows if isinstance(r, RowProblem)]
    assert [len(r) for r in reasons] == [1, 1, 1]
    assert "bank account number" in reasons[0][0]
    assert "address" in reasons[1][0]
    assert reasons[2][0].startswith("external_id: seems to contain the employee's name")


def test_v1_columns_take_money_or_whole_cents() -> None:
    header = (
        "schema,pii.employee_name,period_start,period_end,payment_date,currency,gross,"
        "paygw_cents,net,ytd_gross_cents,ytd_paygw_cents,earnings.0.type,earnings.0.units,"
        "earnings.0.rate,earnings.0.amount"
    )
    row = (
        "au.payslip.v1,A Person,2026-10-30,2026-11-12,2026-11-13,AUD,3846.15,78200,3064.15,"
        "3461535,703800,ordinary,76,48.00,3648.00"
    )
    (parsed,) = read_text_rows(header + "\n" + row)
    assert isinstance(parsed, PayrunRow)
    assert parsed.payslip_non_pii["gross_cents"] == 384615
    assert parsed.payslip_non_pii["paygw_cents"] == 78200
    assert parsed.payslip_non_pii["earnings"] == [
        {"type": "ordinary", "units": 76, "rate_cents": 4800, "amount_cents": 364800}
    ]
    (bad,) = read_text_rows(header + "\n" + row.replace("78200", "782.5"))
    assert isinstance(bad, RowProblem)
    assert bad.reasons == ("paygw_cents: expected a whole number of cents such as 384615",)


def test_json_arrays_stream_and_bad_json_is_reported(tmp_path: Path) -> None:
    item = json.loads((RESOURCES / "sample_payrun.json").read_text())[0]
    big = tmp_path / "big.json"
    with open(big, "w", encoding="utf-8") as handle:
        handle.write("[")
        for i in range(50_000):
            handle.write(("," if i else "") + json.dumps({**item, "external_id": f"E{i}"}))
        handle.write("]")
    size = big.stat().st_size
    rows = read_payrun(big)
    first = [next(rows) for _ in range(5)]
    assert all(isinstance(r, PayrunRow) for r in first)
    rows.close()  # stopping early never needed the rest of a ~40 MB file in memory
    assert size > 20_000_000

    broken = tmp_path / "broken.json"
    broken.write_text("[" + json.dumps(item) + ', {"schema": ]')
    parsed = list(read_payrun(broken))
    assert isinstance(parsed[0], PayrunRow) and isinstance(parsed[1], RowProblem)
    lines = tmp_path / "run.jsonl"
    lines.write_text(json.dumps(item) + "\nnot json\n" + json.dumps({**item, "extra": 1}) + "\n")
    parsed = list(read_payrun(lines))
    assert isinstance(parsed[0], PayrunRow)
    assert parsed[1].reasons == ("row: not valid JSON",)  # type: ignore[union-attr]
    assert parsed[2].reasons == ("extra: unknown key",)  # type: ignore[union-attr]
    with pytest.raises(PayrunFileError):
        list(read_payrun(tmp_path / "missing.csv"))


# --- runs against a real service -------------------------------------------------------------


def test_good_rows_go_through_and_bad_rows_are_listed(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    source = write_csv(
        tmp_path / "run.csv",
        [
            good_row(1),
            "au.payslip.v2,EMP00002,Short Row",
            good_row(3).replace("2026-11-12", "2026-13-01"),
            good_row(4),
            good_row(5, award="Person Number5's award"),
            good_row(6),
            good_row(7).replace("1007.00,100.00", "1O07.00,100.00"),
        ],
    )
    out = tmp_path / "out"
    summary = run(live, source, out, batch_size=2)
    rows = {r["row"]: r for r in results(out)}
    assert [r["status"] for r in results(out)] == [
        "created",
        "rejected",
        "rejected",
        "created",
        "rejected",
        "created",
        "rejected",
    ]
    assert summary.progress.created == 3 and summary.progress.rejected == 4
    assert "cells but the header has" in rows["2"]["reason"]
    assert "period_end" in rows["3"]["reason"] and "Person" not in rows["5"]["reason"]
    assert rows["7"]["reason"] == "gross: expected a number such as 1234.50"
    assert record_count(live) == 3
    assert not (out / JOURNAL_NAME).exists()
    badges = sorted(p.name for p in (out / "badges").iterdir())
    assert badges == ["000001_EMP00001.png", "000004_EMP00004.png", "000006_EMP00006.png"]
    with verifier_client(live) as verifier:
        reading = read_input(str(out / rows["4"]["badge"]))
        result = verifier.verify_payload(reading.payloads[0])
        assert result.employee.employee_name == "Person Number4"
        assert result.service_reference == rows["4"]["service_reference"]
    # Running the finished run again into the same folder would issue every payslip twice.
    with pytest.raises(JournalError, match="already holds a finished pay run"):
        run(live, source, out, batch_size=2)
    assert record_count(live) == 3


class LosingClient:
    """Sends the second batch for real, then loses the answer (as a dropped network would)."""

    def __init__(self, real: ApiClient, lose: int) -> None:
        self.real = real
        self.lose = lose
        self.calls = 0

    def register_batch(self, records: Sequence[dict[str, Any]]) -> list[BatchResultItem]:
        self.calls += 1
        answer = self.real.register_batch(records)
        if self.calls == self.lose:
            raise ServiceUnreachable("SERVICE_UNREACHABLE", None, "connection lost")
        return answer


def interrupted_run(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
    rows: int,
    *,
    lose: int,
    batch_size: int,
) -> tuple[Path, Path, RunInterrupted]:
    """A pay run of `rows` good rows whose `lose`-th batch answer is lost, so it stops with
    RunInterrupted: (the source file, the output folder, the error)."""
    source = write_csv(tmp_path / "run.csv", [good_row(i) for i in range(1, rows + 1)])
    out = tmp_path / "out"
    with issuer_client(live) as real, pytest.raises(RunInterrupted) as caught:
        losing = LosingClient(real, lose)
        run(live, source, out, client=losing, batch_size=batch_size)  # type: ignore[arg-type]
    return source, out, caught.value


def test_a_lost_answer_is_resumed_without_duplicates(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    source, out, interrupted = interrupted_run(live, tmp_path, 20, lose=2, batch_size=8)
    assert "same output folder" in str(interrupted)
    assert record_count(live) == 16
    assert (out / JOURNAL_NAME).exists() and not (out / "results.csv").exists()

    # The journal is encrypted at rest, its key readable by the owner only.
    raw = (out / JOURNAL_NAME).read_bytes()
    assert b"Person Number" not in raw and b"EMP000" not in raw
    assert b"encryption_metadata" not in raw and b"service_reference" not in raw
    key_mode = stat.S_IMODE((out / (JOURNAL_NAME + ".key")).stat().st_mode)
    assert key_mode == 0o600

    # A killed run leaves temporary files behind; the resumed run clears them away.
    (out / ".results.csv.x1.tmp").write_text("partial")
    (out / "badges" / ".000001_EMP00001.png.x2.tmp").write_bytes(b"partial")
    summary = run(live, source, out, batch_size=8)
    assert summary.resumed
    assert not list(out.glob("**/.*.tmp"))
    statuses = [r["status"] for r in results(out)]
    assert statuses == ["created"] * 8 + ["duplicate"] * 8 + ["created"] * 4
    # Progress counts the rows the interrupted run finished as done in every phase.
    p = summary.progress
    assert (p.checked, p.accepted, p.answered, p.badges, p.total) == (20, 20, 20, 20, 20)
    assert not any(r["code"] for r in results(out))
    assert record_count(live) == 20
    assert not (out / JOURNAL_NAME).exists()
    assert len(list((out / "badges").iterdir())) == 20


def test_a_torn_journal_tail_is_dropped(tmp_path: Path) -> None:
    journal = RunJournal.open(tmp_path)
    journal.append({"t": "header", "n": 1})
    journal.append({"t": "batch", "n": 2})
    journal.close()
    with open(tmp_path / JOURNAL_NAME, "ab") as handle:
        handle.write(b"\x00\x00\x10\x00partial")  # a frame cut short by a crash
    again = RunJournal.open(tmp_path)
    assert [f["n"] for f in again.frames()] == [1, 2]
    again.append({"t": "ack", "n": 3})
    again.close()
    last = RunJournal.open(tmp_path)
    assert [f["n"] for f in last.frames()] == [1, 2, 3]
    last.close()


def test_one_run_at_a_time_per_output_folder(tmp_path: Path) -> None:
    first = RunJournal.open(tmp_path)
    with pytest.raises(JournalError, match="another pay run is using this output folder"):
        RunJournal.open(tmp_path)
    first.remove()
    assert list(tmp_path.iterdir()) == []
    RunJournal.open(tmp_path).close()


def test_a_changed_row_is_not_silently_replaced(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    source, out, _ = interrupted_run(live, tmp_path, 4, lose=1, batch_size=2)
    write_csv(
        source,
        [good_row(1).replace("1001.00,100.00", "1111.00,100.00")]
        + [good_row(i) for i in range(2, 5)],
    )
    run(live, source, out, batch_size=2)
    statuses = [(r["status"], r["reason"][:25]) for r in results(out)]
    assert statuses[0] == ("rejected", "this row changed after an")
    assert [s for s, _ in statuses[1:]] == ["duplicate", "created", "created"]
    assert record_count(live) == 4


def pdf_folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """The folder of payslip PDFs a run stamps (`--pdf-dir`), holding `files`."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder


def test_stamped_pdfs_per_employee_verify(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    pdfs = pdf_folder(tmp_path, {"EMP00001.pdf": blank_pdf(), "EMP00002.pdf": blank_pdf(2)})
    (pdfs / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    header = HEADER + ",pdf,pdf_page,pdf_corner"
    source = tmp_path / "run.csv"
    source.write_text(
        "\n".join(
            [
                header,
                good_row(1) + ",,,",
                good_row(2) + ",,2,top-left",
                good_row(3) + ",broken.pdf,,",
                good_row(4) + ",missing.pdf,,",
            ]
        )
        + "\n"
    )
    out = tmp_path / "out"
    run(live, source, out, pdf_dir=pdfs)
    rows = results(out)
    assert [r["status"] for r in rows] == ["created", "created", "created", "rejected"]
    assert rows[0]["pdf"] == "pdfs/000001_EMP00001.pdf"
    assert rows[2]["pdf"] == "" and "could not be stamped" in rows[2]["reason"]
    assert rows[2]["badge"]  # the badge stands even when the PDF cannot be stamped
    assert rows[3]["reason"] == "pdf: no such file in the PDF folder"
    with verifier_client(live) as verifier:
        for row in rows[:2]:
            reading = read_input(str(out / row["pdf"]))
            assert reading.payloads and not reading.disagreement
            for payload in reading.payloads:
                assert parse_barcode(payload).service_reference == row["service_reference"]
                assert verifier.verify_payload(payload).verified is True


def test_an_unusable_output_folder_is_a_clear_message(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    source = write_csv(tmp_path / "run.csv", [good_row(1)])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    env = _cli_env(live)
    done = subprocess.run(
        _cli(live, source, blocker / "out"), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.startswith("issue-run: ") and "Traceback" not in done.stderr
    assert record_count(live) == 0


# --- the CLI, killed in the middle -----------------------------------------------------------


def issue_run_command(url: str, client_id: str, source: Path, out: Path, *extra: str) -> list[str]:
    """`app issue-run` as an operator types it (secret and key come from the environment)."""
    return [
        sys.executable,
        *("-m", "app", "issue-run", str(source), "--out", str(out)),
        *("--service-url", url, "--client-id", client_id),
        *extra,
    ]


def _cli(service: LiveService, source: Path, out: Path, *extra: str) -> list[str]:
    issuer = service.issuer
    version = ("--key-version", issuer["key_version"])
    return issue_run_command(service.url, issuer["client_id"], source, out, *version, *extra)


def _cli_env(service: LiveService) -> dict[str, str]:
    env = dict(os.environ)
    env["PAYSLIP_CLIENT_SECRET"] = service.issuer["client_secret"]
    env["PAYSLIP_ENCRYPTION_KEY"] = service.issuer["encryption_key"]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [1, 2])
def test_cli_killed_mid_run_resumes_exactly_once(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
    kill_after: int,
) -> None:
    """Killed right after batch 1 is registered (its badges not started), or after batch 2
    (batch 1's badges being acknowledged, batch 2's in the workers): the waits are on the run's
    own "batch N registered" line and on record counts, never on a fixed sleep."""
    source = write_csv(tmp_path / "run.csv", [good_row(i) for i in range(1, 2501)])
    out = tmp_path / "out"
    env = _cli_env(live)
    process = subprocess.Popen(
        _cli(live, source, out),
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    killer = threading.Timer(120, process.kill)
    killer.start()
    try:
        for line in process.stderr:
            lines.append(line)
            if line.startswith(f"batch {kill_after} registered"):
                process.send_signal(signal.SIGKILL)
                break
    finally:
        killer.cancel()
    process.communicate(timeout=30)  # waits, and closes both pipes
    assert process.returncode == -signal.SIGKILL, lines
    assert (out / JOURNAL_NAME).exists()
    registered_before = record_count(live)
    assert registered_before >= 1000 * kill_after
    assert not list(out.glob("results.csv"))  # no finished results from a killed run

    started = time.monotonic()
    done = subprocess.run(
        _cli(live, source, out), env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "resumed an interrupted run" in done.stdout
    rows = results(out)
    assert len(rows) == 2500
    assert {r["status"] for r in rows} <= {"created", "duplicate"}
    assert not any(r["code"] for r in rows)  # no CONFLICT, no IV_REUSED
    assert sum(r["status"] == "created" for r in rows) == 2500 - registered_before
    references = [r["service_reference"] for r in rows]
    assert len(set(references)) == 2500
    assert record_count(live) == 2500  # every record exactly once
    for reference in references:
        assert live.store.get_record(reference) is not None
    assert not (out / JOURNAL_NAME).exists()
    assert len(list((out / "badges").iterdir())) == 2500
    with verifier_client(live) as verifier:
        for row in rows[::250]:  # a sample decoded from the badge images themselves
            reading = read_input(str(out / row["badge"]))
            result = verifier.verify_payload(reading.payloads[0])
            assert result.verified and result.service_reference == row["service_reference"]
            assert result.employee.employee_name == f"Person Number{int(row['row'])}"
    print(f"resumed run: {time.monotonic() - started:.1f} s")


# --- both cores, and progress for every phase (issue 12) -------------------------------------


def test_every_file_kind_is_counted_up_front_for_the_progress_bar(tmp_path: Path) -> None:
    from app.issuer.run.source import count_rows

    items = json.loads((RESOURCES / "sample_payrun.json").read_text())
    assert count_rows(RESOURCES / "sample_payrun.json") == len(items)
    assert count_rows(RESOURCES / "sample_payrun.csv") == len(items)
    lines = tmp_path / "run.jsonl"
    lines.write_text("".join(json.dumps(i) + "\n" for i in items))
    assert count_rows(lines) == len(items)
    broken = tmp_path / "broken.json"
    broken.write_text("[" + json.dumps(items[0]) + ', {"schema": ]')
    assert count_rows(broken) == 1  # the items before the damage; the run reports the rest
    (tmp_path / "object.json").write_text("{}")
    assert count_rows(tmp_path / "object.json") is None


def test_progress_is_determinate_in_every_phase_and_workers_draw_the_badges(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    import multiprocessing

    from app.issuer import render_badge_png
    from app.issuer.progress import PHASES, Progress

    pdfs = pdf_folder(tmp_path, {f"EMP{i:05d}.pdf": blank_pdf() for i in (3, 150, 260)})
    rows = [good_row(i) for i in range(1, 301)]
    rows[9] = good_row(10).replace("2026-11-12", "2026-02-30")  # one row fails its checks
    source = write_csv(tmp_path / "run.csv", rows)
    out = tmp_path / "out"
    snapshots: list[Progress] = []
    children: list[int] = []

    def seen(progress: Progress) -> None:
        snapshots.append(Progress(**vars(progress)))  # the copy a GUI makes must work
        children.append(len(multiprocessing.active_children()))

    settings = RunSettings(source=source, out_dir=out, pdf_dir=pdfs, batch_size=100, workers=2)
    with issuer_client(live) as client:
        summary = PayRun(
            client,
            IssuerKey.from_info(live.issuer),
            live.config.scan_base,
            settings,
            on_progress=seen,
        ).run()

    final = summary.progress
    assert (final.created, final.rejected, final.phase) == (299, 1, "done")
    assert (final.checked, final.accepted, final.answered) == (300, 299, 299)
    assert (final.badges, final.pdfs, final.with_pdf, final.total) == (299, 3, 3, 300)
    assert [(s.phase, s.done, s.total) for s in final.steps()] == [
        ("checking", 300, 300),
        ("registering", 299, 299),
        ("badges", 299, 299),
        ("pdfs", 3, 3),
    ]
    assert [s.label for s in final.steps()] == [label for _, label in PHASES]
    # Every phase was reported while it ran, with a known total, and counts never go back.
    phases = {s.phase for s in snapshots}
    assert {"checking", "registering", "done"} <= phases and phases & {"badges", "pdfs"}
    for index, name in enumerate(["checking", "registering", "badges", "pdfs"]):
        counts = [s.steps()[index] for s in snapshots]
        assert all(c.total is not None and 0 <= c.done <= c.total for c in counts), name
        done = [c.done for c in counts]
        assert done == sorted(done), f"{name} went backwards"
        assert any(0 < c.done < c.total for c in counts if c.total), f"{name} never in between"
    elapsed = [s.elapsed for s in snapshots]
    assert elapsed == sorted(elapsed) and elapsed[-1] > 0
    middle = snapshots[len(snapshots) // 2].steps()[0]
    assert middle.rate(snapshots[len(snapshots) // 2].elapsed) is not None
    # Two worker processes drew the badges, byte for byte what the library draws.
    assert max(children) == 2
    by_row = {r["row"]: r for r in results(out)}
    with verifier_client(live) as verifier:
        for row in ("1", "150", "300"):
            badge = (out / by_row[row]["badge"]).read_bytes()
            scan_url = read_input(str(out / by_row[row]["badge"])).payloads[0]
            assert badge == render_badge_png(scan_url, 720)
            assert verifier.verify_payload(scan_url).verified is True
    assert by_row["150"]["pdf"] == "pdfs/000150_EMP00150.pdf"
    assert record_count(live) == 299
