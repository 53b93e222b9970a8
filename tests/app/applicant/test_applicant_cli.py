"""`python -m app verify A.pdf B.png C ... --json`: one applicant's payslips checked as a set
(PROTOCOL §10) against the real embedded service, from real PDFs, badge images and code text."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from app.api import ApiClient
from app.shell.context import AppContext
from service.documents.pdf_metadata import write_payload_metadata
from testbed.applicant_payslips import APPLICANT, register_fortnights, write_inputs
from testbed.factories import MARKER_ACCOUNT
from tests.app.conftest import Verify
from tests.commands import run_module


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return run_module("app", *args, env=env, stdin=stdin)


def _remote(ctx: AppContext) -> list[str]:
    assert ctx.demo is not None
    return [
        f"--service-url={ctx.service_url}",
        f"--client-id={ctx.demo.verifier.client_id}",
        f"--client-secret={ctx.demo.verifier.client_secret}",
    ]


def _issuer(ctx: AppContext) -> tuple[ApiClient, str]:
    assert ctx.issuer is not None and ctx.issuer_info is not None
    return ctx.issuer, ctx.issuer_info.encryption_key


def test_three_consecutive_payslips_as_pdf_image_and_text(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    issuer, key = _issuer(demo_context)
    remote = _remote(demo_context)
    payslips = register_fortnights(issuer, key, 3)
    args = write_inputs(tmp_path, payslips, ["pdf", "png", "text"])
    out = verify([*args, "--applicant-name", "SMITH, Jane", "--json", *remote])
    assert out.returncode == 0, out.stdout + out.stderr
    body = json.loads(out.stdout)
    assert set(body) == {"verdict", "documents", "problems", "income"}
    assert body["verdict"] == "VERIFIED" and body["problems"] == []
    assert [d["input"] for d in body["documents"]] == args
    for doc, payslip, kind in zip(body["documents"], payslips, ["pdf", "png", "text"], strict=True):
        # PROTOCOL §13: a blank stamped page and a bare badge image are not compared; a code
        # given as text has no page at all.
        document = doc.pop("document", None)
        if kind == "text":
            assert document is None
        else:
            assert document is not None and document["status"] == "not_compared"
        assert doc == {
            "input": doc["input"],
            "verdict": "VERIFIED",
            "service_reference": payslip.reference,
            "payment_date": payslip.payment_date.isoformat(),
            "period_start": payslip.period_start.isoformat(),
            "period_end": payslip.period_end.isoformat(),
            "currency": "AUD",
            "gross_minor": payslip.gross_cents,
            "net_minor": payslip.net_cents,
            "employee_name": APPLICANT,
        }
    mean_gross = sum(p.gross_cents for p in payslips) / 3  # 384616 exactly
    assert body["income"] == {
        "currency": "AUD",
        "periods_per_year": 26,
        "gross_per_year_minor": round(mean_gross * 26),
        "net_per_year_minor": round(sum(p.net_cents for p in payslips) / 3 * 26),
        "net_per_month_minor": round(round(sum(p.net_cents for p in payslips) / 3 * 26) / 12),
    }
    # one real process: the summary as a shell shows it
    text = _run(["verify", *args, *remote])
    assert text.returncode == 0
    assert text.stdout.startswith("VERIFIED: ")
    assert "Per month" in text.stdout and MARKER_ACCOUNT not in text.stdout


def test_missing_revoked_other_person_and_not_a_payslip(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    issuer, key = _issuer(demo_context)
    remote = _remote(demo_context)
    payslips = register_fortnights(issuer, key, 4, skip=frozenset({1}))
    other = register_fortnights(issuer, key, 1, name="Jane Citizen")
    revoked = register_fortnights(issuer, key, 1)
    demo_context.issuer.revoke(revoked[0].reference)  # type: ignore[union-attr]
    note = tmp_path / "C.txt"
    note.write_text("see attached payslips\n")
    args = write_inputs(
        tmp_path, [*payslips, other[0], revoked[0]], ["pdf", "png", "pdf", "text", "png"]
    )
    out = verify(
        [
            *args,
            str(note),
            "--applicant-name",
            APPLICANT,
            "--json",
            *remote,
        ]
    )
    assert out.returncode == 1, out.stderr
    body = json.loads(out.stdout)
    assert body["verdict"] == "NOT VERIFIED"
    checks = [(p["check"], p["documents"]) for p in body["problems"]]
    assert ("not_verified", [4]) in checks
    assert ("not_a_payslip", [5]) in checks
    assert ("different_employee", [3]) in checks and ("name_mismatch", [3]) in checks
    assert ("gap", [0, 1]) in checks
    gap = next(p for p in body["problems"] if p["check"] == "gap")
    assert gap["message"].startswith("A payslip is missing")
    revoked_doc = body["documents"][4]
    assert revoked_doc["verdict"] == "NOT VERIFIED" and revoked_doc["code"] == "REVOKED"
    assert "employee_name" not in revoked_doc and revoked_doc["gross_minor"] is None
    assert body["documents"][5] == {
        "input": str(note),
        "verdict": None,
        "code": "INPUT_UNREADABLE",
        "payment_date": None,
        "period_start": None,
        "period_end": None,
        "currency": None,
        "gross_minor": None,
        "net_minor": None,
    }
    assert "Jane Citizen" not in json.dumps(body["documents"][4])
    assert body["income"] is None  # §10: two people's pay averaged is no one's income
    text = verify([*args, str(note), "--applicant-name", APPLICANT, *remote])
    assert "None proved: Income is shown only when the payslips are VERIFIED together" in (
        text.stdout
    )
    assert "Per year" not in text.stdout and "#5 " in text.stdout


def test_stale_and_unreachable(verify: Verify, demo_context: AppContext, tmp_path: Path) -> None:
    issuer, key = _issuer(demo_context)
    remote = _remote(demo_context)
    from datetime import date, timedelta

    old = register_fortnights(issuer, key, 2, last_paid=date.today() - timedelta(days=63))
    args = write_inputs(tmp_path, old, ["text", "text"])
    out = verify([*args, "--max-age-days", "45", "--json", *remote])
    assert out.returncode == 1
    problems = json.loads(out.stdout)["problems"]
    assert [p["check"] for p in problems] == ["stale"]
    assert problems[0]["message"].startswith("The latest payslip is 63 days old")
    assert json.loads(out.stdout)["income"] is None  # a stale set proves no income now
    dead = ["--service-url=http://127.0.0.1:9", "--client-id=x", "--client-secret=y"]
    out = verify([*args, "--json", *dead])
    assert out.returncode == 2
    body = json.loads(out.stdout)
    assert body["verdict"] == "CANNOT VERIFY" and body["income"] is None
    assert {p["check"] for p in body["problems"]} == {"cannot_verify"}


def test_badge_and_metadata_of_one_pdf_are_one_document_and_a_pdf_of_two(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    issuer, key = _issuer(demo_context)
    remote = _remote(demo_context)
    first, second = register_fortnights(issuer, key, 2)
    # one PDF, two pages: each page stamped with its own payslip's badge, the metadata the first's
    writer = PdfWriter()
    for payslip in (first, second):
        for page in PdfReader(io.BytesIO(payslip.pdf_bytes())).pages:
            writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    both = tmp_path / "both.pdf"
    both.write_bytes(write_payload_metadata(buffer.getvalue(), first.sealed.payload))
    out = verify([str(both), "--applicant-name", APPLICANT, "--json", *remote])
    assert out.returncode == 0, out.stdout
    docs = json.loads(out.stdout)["documents"]
    assert [d["service_reference"] for d in docs] == [first.reference, second.reference]
    single = tmp_path / "one.pdf"
    single.write_bytes(first.pdf_bytes())  # metadata and badge of one payslip
    out = verify([str(single), first.sealed.scan_url(), "--json", *remote])
    body = json.loads(out.stdout)
    assert len(body["documents"]) == 2  # two inputs of the same payslip: a duplicate
    assert [p["check"] for p in body["problems"]] == ["duplicate"]
    out = verify([str(single), "--applicant-name", APPLICANT, "--json", *remote])
    assert len(json.loads(out.stdout)["documents"]) == 1 and out.returncode == 0


def test_one_input_without_a_name_is_the_single_verify(
    verify: Verify, demo_context: AppContext
) -> None:
    issuer, key = _issuer(demo_context)
    remote = _remote(demo_context)
    (payslip,) = register_fortnights(issuer, key, 1)
    out = verify([payslip.sealed.payload, "--json", *remote])
    assert out.returncode == 0
    body = json.loads(out.stdout)
    assert body["verified"] is True and body["service_reference"] == payslip.reference
    bad = verify(["a", "b", "--max-age-days", "soon", *remote])
    assert bad.returncode == 2 and "whole number of days" in bad.stderr
    assert "Traceback" not in bad.stderr
