"""The privacy scan (issue 15's gate): marker PII pushed through every flow never lands at rest.

One run pushes an employee with unmistakable marker values through the issuer library (self- and
service-managed badges), the verify screen (a pasted code), `python -m app verify`, a pay run
(`python -m app issue-run`) and a PostgreSQL-backed server. Afterwards no file under the service's
data directory, no app or error log, no captured log record, no pay-run output other than the
journal's ciphertext, and no `pg_dump` of the database holds any marker. (The phone page is
scanned in tests/browser; what the operator is shown on screen or stdout is the point of
verifying and is not "at rest".)
"""

from __future__ import annotations

import csv
import io
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.issuer.ledger import ledger_dir
from app.issuer.records import IssuerKey, issue_self_managed, issue_service_managed
from app.shell.context import AppContext
from app.ui.verify.screen import VerifyScreen
from app.ui.widgets.tasks import TaskRunner
from service.hosting.server import start
from service.protocol.pii_text import build_pii_text
from testbed.factories import NZ_V2 as FACTORY_NZ_V2
from tests.app.issuer.test_payrun import issue_run_command
from tests.commands import run_module
from tests.service.conftest import make_instance
from tests.service.storage.test_store_postgres import database_url, schema_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
MARKERS = {
    "employee_name": "Quorra Vexillary-Privscan",
    "ird_number": "987-654-321",
    "position": "Marker Technician Zqx",
    "department": "Privscan Dept",
    "employer_name": "Demo Payroll Pty Ltd",
    "account_number": "02-0448-0912345-077",
    "account_name": "Q Vexillary-Privscan",
    "address": "77 Privscan Terrace, Markerville, Auckland 1010",
}
SECRET_VALUES = [v for k, v in MARKERS.items() if k != "employer_name"]
NZ_V2 = FACTORY_NZ_V2["payslip_non_pii"]


def _leaks(blob: bytes) -> list[str]:
    return [value for value in SECRET_VALUES if value.encode() in blob]


def _scan_tree(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            leaks = _leaks(path.read_bytes())
            if leaks:
                found[str(path)] = leaks
    return found


@pytest.fixture
def log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    monkeypatch.setenv("PAYSLIP_LOG_DIR", str(folder))
    return folder


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


def test_marker_pii_never_lands_at_rest(
    qtbot: Any,
    no_leaks: None,
    demo_context: AppContext,
    tmp_path: Path,
    log_dir: Path,
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    assert demo_context.issuer is not None and demo_context.service is not None
    key = IssuerKey.from_info(demo_context.issuer_info)
    pii = build_pii_text("NZ2", MARKERS)
    url = demo_context.service_url

    # 1. The issuer library over HTTP: self-managed and service-managed badges.
    own = issue_self_managed(demo_context.issuer, key, url, "nz.payslip.v2", NZ_V2, pii)
    built = issue_service_managed(demo_context.issuer, key, "nz.payslip.v2", NZ_V2, pii)

    # 2. The verify screen, with the code pasted.
    demo_context.settings.camera = str(tmp_path / "no-camera.avi")
    tasks = TaskRunner()
    screen = VerifyScreen(demo_context, tasks)
    qtbot.addWidget(screen)
    screen.show()
    for payload in (own.payload, built.payload):
        screen.code_field.setText(payload)
        with qtbot.waitSignal(screen.result_shown, timeout=20000) as shown:
            screen.submit_text()
        assert shown.args[0] == "verified"
        assert MARKERS["employee_name"] in screen.card.visible_texts()  # shown, as it should be
    screen.shutdown()
    assert tasks.wait(20000)
    screen.close()

    # 3. `python -m app verify`, with its log in the log folder.
    assert demo_context.demo is not None
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PAYSLIP_LOG_DIR": str(log_dir)}
    verified = run_module(
        "app",
        *("verify", own.payload, "--json", f"--service-url={url}"),
        f"--client-id={demo_context.demo.verifier.client_id}",
        f"--client-secret={demo_context.demo.verifier.client_secret}",
        env=env,
    )
    assert verified.returncode == 0, verified.stderr
    assert MARKERS["employee_name"] in verified.stdout and not _leaks(verified.stderr.encode())

    # 4. A pay run from a CSV holding the markers.
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["schema", "external_id", *[f"pii.{k}" for k in MARKERS], *NZ_V2])
    for n in range(3):
        writer.writerow(["nz.payslip.v2", f"NZ-{n}", *MARKERS.values(), *NZ_V2.values()])
    source = tmp_path / "payrun.csv"
    source.write_text(rows.getvalue())
    out = tmp_path / "payrun-out"
    run = subprocess.run(
        issue_run_command(url, demo_context.issuer_info.client_id, source, out),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={
            **env,
            "PAYSLIP_CLIENT_SECRET": demo_context.issuer_info.client_secret,
            "PAYSLIP_ENCRYPTION_KEY": demo_context.issuer_info.encryption_key,
        },
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert not _leaks((run.stdout + run.stderr).encode())
    outputs = {p: v for p, v in _scan_tree(out).items() if ".payrun-journal" not in p}
    assert outputs == {}, outputs  # results.csv, badges: no plaintext

    # What was left at rest.
    data_dir = Path(demo_context.service.store.data_dir)  # type: ignore[attr-defined]
    assert _scan_tree(data_dir.parent) == {}
    assert _scan_tree(log_dir) == {}
    ledger = ledger_dir()  # the issued-payslips ledger the pay run wrote (issue 35)
    assert any(ledger.glob("*.jsonl")) and _scan_tree(ledger) == {}
    assert not _leaks(everything_logged.text.encode())


@pytest.mark.postgres
def test_a_postgresql_dump_holds_no_marker_pii(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
    everything_logged: pytest.LogCaptureFixture,
) -> None:
    data_dir = tmp_path / "pg-instance"
    os.environ["PAYSLIP_DATABASE_URL"] = schema_url
    try:
        _, issuer, verifier = make_instance(data_dir)
        running = start(data_dir, store_kind="postgres", database_url=schema_url)
    finally:
        del os.environ["PAYSLIP_DATABASE_URL"]
    try:
        from app.api import ApiClient

        url = running.url
        issuer_client = ApiClient(url, issuer["client_id"], issuer["client_secret"], issuer_url=url)
        verifier_client = ApiClient(
            url, verifier["client_id"], verifier["client_secret"], verifier_url=url
        )
        key = IssuerKey.from_info(issuer)
        pii = build_pii_text("NZ2", MARKERS)
        own = issue_self_managed(issuer_client, key, url, "nz.payslip.v2", NZ_V2, pii)
        built = issue_service_managed(issuer_client, key, "nz.payslip.v2", NZ_V2, pii)
        for payload in (own.payload, built.payload):
            assert verifier_client.verify_payload(payload).verified is True
        issuer_client.close()
        verifier_client.close()
    finally:
        running.stop()
    dump = subprocess.run(
        ["pg_dump", "--data-only", schema_url.split(" options=")[0]],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    assert b"COPY" in dump and own.service_reference.encode() in dump  # the dump is real
    assert not _leaks(dump)
    assert not _leaks(everything_logged.text.encode())
    assert _scan_tree(data_dir) == {}
