"""No payslip issued twice by accident (issue 35, point 5): the same payroll export run into a
second output folder is refused before anything is registered, on the command line, unless the
rows are skipped or issued again on purpose; revoking the earlier ones makes issuing again clean.

Against the real in-process service and the real `python -m app issue-run` processes (each run a
fresh process: the ledger survives restarts). The ledger is checked for the export's personal
data: names, accounts, BSBs and addresses never reach it.
"""

from __future__ import annotations

import csv
import datetime
import os
import subprocess
import sys
from pathlib import Path

from app.api import ApiClient
from app.issuer.ledger import Ledger, day_words, revoke_issued
from tests.service.conftest import (  # noqa: F401 - the fixtures
    LiveService,
    live,
    tinydb_server,
)

ROOT = Path(__file__).resolve().parents[3]
EXPORT = ROOT / "resources/exports/au_payroll_export.csv"
MAPPING = ROOT / "resources/exports/au_payroll_export.mapping.json"


def personal_data() -> list[str]:
    """Every name, account, BSB, account name and address cell of the export."""
    with open(EXPORT, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = ("Employee", "BSB", "Account Number", "Account Name", "Address")
    return [row[column] for row in rows for column in columns if row[column]]


def run(
    service: LiveService, config: Path, out: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    issuer = service.issuer
    env = dict(os.environ)
    env["PAYSLIP_CONFIG_DIR"] = str(config)
    env["PAYSLIP_CLIENT_SECRET"] = issuer["client_secret"]
    env["PAYSLIP_ENCRYPTION_KEY"] = issuer["encryption_key"]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [
        sys.executable,
        *("-m", "app", "issue-run", str(EXPORT), "--mapping", str(MAPPING), "--out", str(out)),
        *("--service-url", service.url, "--client-id", issuer["client_id"]),
        *("--key-version", issuer["key_version"], "--quiet"),
        *extra,
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)


def results(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def records(service: LiveService) -> int:
    return service.store.counts().records_by_issuer.get(service.issuer["issuer_id"], 0)


def test_the_same_export_into_a_second_folder_is_refused_skipped_or_issued_again(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    config = tmp_path / "config"
    out1, out2, out3 = (tmp_path / name for name in ("out1", "out2", "out3"))
    first = run(live, config, out1)
    assert first.returncode == 0, first.stderr
    assert records(live) == 5

    second = run(live, config, out2)
    assert second.returncode == 2
    today = day_words(datetime.date.today().isoformat())
    # One line (after the usual one about badges carrying this computer's address).
    assert "Traceback" not in second.stderr
    line = second.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"issue-run: 5 of these payslips were issued on {today} into {out1.resolve()}; "
        "nothing was registered."
    )
    assert "--skip-issued" in line and "--issue-again" in line
    assert records(live) == 5  # nothing registered
    assert not (out2 / "results.csv").exists() and not (out2 / ".payrun-journal").exists()

    skipped = run(live, config, out2, "--skip-issued")
    assert skipped.returncode == 0, skipped.stderr
    assert "5 skipped (issued before)" in skipped.stdout
    assert records(live) == 5
    rows = results(out2)
    assert {r["status"] for r in rows} == {"skipped"}
    assert all(f"into {out1.resolve()}" in r["reason"] for r in rows)
    assert not list((out2 / "badges").glob("*.png"))  # no second badge

    # The ledger, read as a new process would (a restart): five payslips, no personal data.
    ledger = Ledger.for_issuer(live.issuer["client_id"], config / "issued")
    issued = ledger.entries()
    assert len(issued) == 5 and {i.out_dir for i in issued} == {str(out1.resolve())}
    text = ledger.path.read_text("utf-8")
    for value in personal_data():
        assert value not in text, "personal data in the ledger"
    assert "E1001" in text and "2026-11-12" in text

    # Issuing again on purpose: refused silently never, done only when asked.
    again = run(live, config, out3, "--issue-again")
    assert again.returncode == 0, again.stderr
    assert records(live) == 10


def test_after_revoking_the_earlier_ones_the_export_issues_cleanly(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    config = tmp_path / "config"
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    assert run(live, config, out1).returncode == 0
    assert run(live, config, out2).returncode == 2
    ledger = Ledger.for_issuer(live.issuer["client_id"], config / "issued")
    issuer = live.issuer
    client = ApiClient(live.url, issuer["client_id"], issuer["client_secret"], issuer_url=live.url)
    try:
        assert revoke_issued(client, ledger, ledger.entries()) == 5
    finally:
        client.close()
    assert all(item.revoked_on for item in ledger.entries())
    reissued = run(live, config, out2)  # no option needed: the earlier ones are revoked
    assert reissued.returncode == 0, reissued.stderr
    assert {r["status"] for r in results(out2)} == {"created"}
    assert records(live) == 10


def test_an_unreadable_ledger_stops_the_run_in_one_line(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A run that cannot tell what was issued before does not start (a folder stands in for
    the ledger file: unreadable even for root)."""
    config = tmp_path / "config"
    assert run(live, config, tmp_path / "out1").returncode == 0
    ledger = Ledger.for_issuer(live.issuer["client_id"], config / "issued")
    ledger.path.unlink()
    ledger.path.mkdir()
    done = run(live, config, tmp_path / "out2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("issue-run: the list of payslips issued before (")
        and "cannot be read" in last
    )
    assert records(live) == 5
