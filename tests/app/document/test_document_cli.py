"""`python -m app verify` compares the page with the registered payslip (PROTOCOL §13): real
PDFs made with reportlab, stamped with real badges registered on the real embedded service,
altered as a fraudster would (retyped, painted over, scanned), and genuine controls in several
layouts, which must never be called altered."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest

from app.shell.context import AppContext
from testbed.factories import MARKER_ACCOUNT
from testbed.payslip_pages import (
    FONTS,
    LAYOUTS,
    Shown,
    image_only_pdf,
    label_list,
    page_png,
    paint_over,
)
from testbed.stamped_pages import NAME, register_payslip, stamped
from tests.app.conftest import Verify


def _remote(ctx: AppContext) -> list[str]:
    assert ctx.demo is not None
    return [
        f"--service-url={ctx.service_url}",
        f"--client-id={ctx.demo.verifier.client_id}",
        f"--client-secret={ctx.demo.verifier.client_secret}",
    ]


def _write(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _fields(body: dict[str, object]) -> dict[str, tuple[str, str | None]]:
    document = body["document"]
    assert isinstance(document, dict)
    return {f["field"]: (f["status"], f["shown"]) for f in document["fields"]}


def test_genuine_pages_in_every_layout_are_never_altered(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    sealed = register_payslip(demo_context)
    other_formats = Shown(
        name="SMITH, Jane (ID 0042)", gross="AUD 3 846.15", tax="-782.00", net="$3,064.15",
        paid="13 November 2026", start="30 Oct 2026", end="Nov 12, 2026",
    )  # fmt: skip
    pages = [(layout, make, Shown(font=FONTS[n % len(FONTS)])) for n, (layout, make)
             in enumerate(LAYOUTS.items())]  # fmt: skip
    pages += [(f"{layout}-2", make, other_formats) for layout, make in LAYOUTS.items()]
    for layout, make, shown in pages:
        pdf, _ = make(shown)
        path = _write(tmp_path, f"{layout}.pdf", stamped(pdf, sealed))
        out = verify([path, "--json", *_remote(demo_context)])
        assert out.returncode == 0, (layout, out.stdout, out.stderr)
        body = json.loads(out.stdout)
        assert body["verdict"] == "VERIFIED"
        expected = "not_compared" if layout.startswith("unknown_labels") else "matches"
        assert body["document"]["status"] == expected, (layout, body["document"])
        assert {status for status, _ in _fields(body).values()} <= {"matches", "not_shown"}
    text = verify([path, *_remote(demo_context)])
    assert text.stdout.startswith("VERIFIED: ")
    assert (
        "Compare the printed figures with these: the page could not be compared (none of the "
        "compared fields is shown)." in text.stdout
    )
    pdf, _ = label_list(Shown())
    matching = verify([_write(tmp_path, "ok.pdf", stamped(pdf, sealed)), *_remote(demo_context)])
    assert "The printed figures match the registered payslip." in matching.stdout


def test_a_retyped_page_is_not_verified_with_one_sentence_per_field(
    verify: Verify,
    demo_context: AppContext,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sealed = register_payslip(demo_context)
    pdf, _ = label_list(Shown().altered(net="6,155.90 AUD", paid="27/11/2026"))
    path = _write(tmp_path, "retyped.pdf", stamped(pdf, sealed))
    caplog.set_level(logging.DEBUG)
    out = verify([path, *_remote(demo_context)])
    assert out.returncode == 1, out.stdout + out.stderr
    first = out.stdout.splitlines()[0]
    assert first == (
        "NOT VERIFIED: The page shows net pay 6,155.90 AUD; the registered payslip says "
        "3,064.15 AUD. The page shows payment date 27 Nov 2026; the registered payslip says "
        "13 Nov 2026. This copy was altered: do not accept it."
    )
    assert out.stderr.startswith("DOCUMENT_ALTERED: ")
    # the compared fields, and nothing else of the employee
    assert "Net pay" in out.stdout and MARKER_ACCOUNT not in out.stdout
    assert "Analyst" not in out.stdout
    body = json.loads(verify([path, "--json", *_remote(demo_context)]).stdout)
    assert body["verdict"] == "NOT VERIFIED" and body["code"] == "DOCUMENT_ALTERED"
    assert body["reason"] == "DOCUMENT_ALTERED" and "employee" not in body
    assert body["document"]["status"] == "altered" and body["document"]["reason"] is None
    assert _fields(body) == {
        "gross": ("matches", "3846.15"),
        "tax": ("matches", "782.00"),
        "net": ("differs", "6155.90"),
        "payment_date": ("differs", "2026-11-27"),
        "period_start": ("matches", "2026-10-30"),
        "period_end": ("matches", "2026-11-12"),
        "employee_name": ("matches", NAME),
    }
    # privacy: nothing of the page in the log, and nothing written beside the input
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "6,155.90" not in logged and NAME not in logged and "27/11/2026" not in logged
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "config") == ["retyped.pdf"]


def test_a_white_box_over_the_net_and_another_name_typed_in(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    sealed = register_payslip(demo_context)
    pdf, spots = LAYOUTS["headings"](Shown())
    painted = paint_over(pdf, spots["net"], "6,155.90")
    out = verify([_write(tmp_path, "painted.pdf", stamped(painted, sealed)), "--json",
                  *_remote(demo_context)])  # fmt: skip
    assert out.returncode == 1
    body = json.loads(out.stdout)
    assert body["code"] == "DOCUMENT_ALTERED"
    assert _fields(body)["net"] == ("differs", "6155.90")  # the old figure is still in the text
    renamed, _ = LAYOUTS["inline"](Shown(name="John Citizen"))
    out = verify([_write(tmp_path, "renamed.pdf", stamped(renamed, sealed)), "--json",
                  *_remote(demo_context)])  # fmt: skip
    assert out.returncode == 1
    assert _fields(json.loads(out.stdout))["employee_name"] == ("differs", "John Citizen")


def test_a_scanned_altered_copy_and_a_genuine_page_image_are_read_by_ocr(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    sealed = register_payslip(demo_context)
    pdf, spots = label_list(Shown())
    scan = stamped(image_only_pdf(paint_over(pdf, spots["net"], "6,155.90")), sealed)
    out = verify([_write(tmp_path, "scan.pdf", scan), "--json", *_remote(demo_context)])
    assert out.returncode == 1, out.stdout + out.stderr
    assert _fields(json.loads(out.stdout))["net"] == ("differs", "6155.90")
    image = page_png(stamped(pdf, sealed))
    out = verify([_write(tmp_path, "page.png", image), "--json", *_remote(demo_context)])
    assert out.returncode == 0, out.stdout + out.stderr
    body = json.loads(out.stdout)
    assert body["document"]["status"] == "matches"
    assert _fields(body)["net"] == ("matches", "3064.15")


def test_a_page_whose_glyphs_are_outlines_is_read_by_ocr(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    """Ghostscript draws every glyph as a path (no text object left): what a person sees is
    read by OCR, so a retyped figure is still caught."""
    sealed = register_payslip(demo_context)
    pdf, _ = LAYOUTS["inline"](Shown().altered(net="4,064.15 AUD"))
    source, outlined = tmp_path / "typed.pdf", tmp_path / "outlined.pdf"
    source.write_bytes(pdf)
    subprocess.run(
        ["gs", "-q", "-dBATCH", "-dNOPAUSE", "-dSAFER", "-dNoOutputFonts", "-sDEVICE=pdfwrite",
         f"-sOutputFile={outlined}", str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    path = _write(tmp_path, "stamped.pdf", stamped(outlined.read_bytes(), sealed))
    out = verify([path, "--json", *_remote(demo_context)])
    assert out.returncode == 1, out.stdout + out.stderr
    assert _fields(json.loads(out.stdout))["net"] == ("differs", "4064.15")


def test_a_code_given_as_text_is_not_compared_and_says_so(
    verify: Verify, demo_context: AppContext
) -> None:
    sealed = register_payslip(demo_context)
    out = verify([sealed.payload, *_remote(demo_context)])
    assert out.returncode == 0
    assert "only the code was read" in out.stdout
    body = json.loads(verify([sealed.payload, "--json", *_remote(demo_context)]).stdout)
    assert "document" not in body


def test_an_applicant_set_with_an_altered_copy(
    verify: Verify, demo_context: AppContext, tmp_path: Path
) -> None:
    genuine, altered = register_payslip(demo_context), register_payslip(demo_context)
    pdf, _ = LAYOUTS["this_pay_ytd"](Shown())
    raised, _ = LAYOUTS["two_pages"](Shown().altered(gross="$5,846.15"))
    args = [
        _write(tmp_path, "one.pdf", stamped(pdf, genuine)),
        _write(tmp_path, "two.pdf", stamped(raised, altered)),
    ]
    out = verify([*args, "--applicant-name", NAME, "--json", *_remote(demo_context)])
    assert out.returncode == 1, out.stdout + out.stderr
    body = json.loads(out.stdout)
    assert body["verdict"] == "NOT VERIFIED"
    # PROTOCOL §10: a set that is NOT VERIFIED proves no income (the altered copy's figures
    # take no part in any check either)
    assert body["income"] is None
    first, second = body["documents"]
    assert first["verdict"] == "VERIFIED" and first["document"]["status"] == "matches"
    assert second["verdict"] == "NOT VERIFIED" and second["code"] == "DOCUMENT_ALTERED"
    assert second["gross_minor"] is None and "employee_name" not in second
    assert second["document"]["status"] == "altered"
    assert [p["check"] for p in body["problems"]] == ["document_altered"]
    problem = body["problems"][0]
    assert problem["documents"] == [1]
    assert problem["message"] == (
        "#2 two.pdf is NOT VERIFIED: The page shows gross pay 5,846.15 AUD; the registered "
        "payslip says 3,846.15 AUD. This copy was altered: do not accept it."
    )
