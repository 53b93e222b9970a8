"""`python -m app --self-test`: start the embedded service (demo instance), render a sample badge
image and stamp a sample PDF, read both back through the real pipeline and verify them; run one
document check (PROTOCOL §13) on a scanned page: an image-only PDF showing the verified sample's
figures, stamped with its badge, read by the document check's OCR (its model must be bundled:
nothing is downloaded) and found to match; then open Qt's own file dialog with the app's event
filters installed and cancel it (issue 35). The page is made in memory and a temporary folder."""

from __future__ import annotations

import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfWriter

from app.document import ocr
from app.document.check import registered_of
from app.document.money import format_minor
from app.inputs.reading import read_input
from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_demo_context
from app.verify.flow import verify_reading
from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.schemas import VerificationResult
from service.protocol.vocabulary import Verdict


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    buffer = BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


SCAN_DPI = 200
A4_PIXELS = (1654, 2339)
"""A4 at :data:`SCAN_DPI`: what a desk scanner gives."""


def scanned_page(result: VerificationResult) -> bytes:
    """An image-only PDF page (as a scanner makes it) printing ``result``'s registered figures
    as label/value lines; no text layer, so the document check has to OCR it."""
    registered = registered_of(result)
    lines = [("Employee", registered.name or "")]
    lines += [
        (label, format_minor(registered.money[field], registered.currency))
        for label, field in (("Gross Pay", "gross"), ("Net Pay", "net"))
        if field in registered.money
    ]
    if "payment_date" in registered.dates:
        lines.append(("Payment Date", registered.dates["payment_date"].strftime("%d/%m/%Y")))
    page = Image.new("L", A4_PIXELS, 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(40)
    draw.text((150, 200), "Payslip", fill=0, font=ImageFont.load_default(64))
    for row, (label, value) in enumerate(lines):
        draw.text((150, 400 + row * 90), f"{label}:", fill=0, font=font)
        draw.text((650, 400 + row * 90), value, fill=0, font=font)
    buffer = BytesIO()
    page.save(buffer, format="PDF", resolution=SCAN_DPI)
    return buffer.getvalue()


def document_check_works(
    context: AppContext,
    verified: VerificationResult | None,
    badge: bytes,
    payload: str,
    folder: Path,
) -> bool:
    """One document check on a scanned page of the verified sample (``verified``: the service's
    answer for it, already had): its figures match."""
    if not ocr.available() or verified is None:
        return False
    path = folder / "scanned.pdf"
    path.write_bytes(stamp_badge(scanned_page(verified), badge, payload))
    outcome = verify_reading(context.verifier, read_input(str(path)))
    return outcome.document is not None and outcome.document.status == "matches"


def run() -> int:
    started = time.perf_counter()
    checks: list[tuple[str, bool]] = []
    context = start_demo_context(Settings(), SecretStore(use_keyring=False))
    try:
        assert context.demo is not None
        sample = next(s for s in context.demo.samples if not s.revoked)
        with tempfile.TemporaryDirectory(prefix="payslip-selftest-") as folder:
            badge = render_badge_png(sample.scan_url)
            image = Path(folder) / "badge.png"
            image.write_bytes(badge)
            pdf = Path(folder) / "payslip.pdf"
            pdf.write_bytes(stamp_badge(blank_pdf(), badge, sample.payload))
            verified = None
            for name, path in (("badge image", image), ("stamped PDF", pdf)):
                outcome = verify_reading(context.verifier, read_input(str(path)))
                ok = outcome.state == Verdict.VERIFIED and not outcome.disagreement
                checks.append((name, ok))
                verified = outcome.result if ok else None
            checked = document_check_works(context, verified, badge, sample.payload, Path(folder))
            checks.append(("document check of a scanned page (OCR)", checked))
        checks.append(("service health", context.verifier.healthz(context.service_url)))
    finally:
        context.close()
    from app.ui.dialog_check import file_dialog_opens  # Qt only for this check

    checks.append(("file dialog opens and cancels", file_dialog_opens()))
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    passed = all(ok for _, ok in checks)
    print(
        f"self-test {'passed' if passed else 'FAILED'} in {time.perf_counter() - started:.1f} s",
        file=sys.stdout,
    )
    return 0 if passed else 1
