"""`python -m app --self-test`: start the embedded service (demo instance), render a sample badge
image and stamp a sample PDF, read both back through the real pipeline and verify them; read
a drawn figure with the document check's OCR (its model must be bundled: nothing is downloaded);
then open Qt's own file dialog with the app's event filters installed and cancel it (issue 35)."""

from __future__ import annotations

import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from pypdf import PdfWriter

from app.document import ocr
from app.inputs.reading import read_input
from app.settings.desk import SecretStore, Settings
from app.shell.context import start_demo_context
from app.verify.flow import verify_reading
from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.vocabulary import Verdict


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(595, 842)
    buffer = BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def ocr_works() -> bool:
    """The document check's OCR reads a drawn figure (its model is bundled and loads offline)."""
    page = Image.new("L", (1400, 400), 255)
    ImageDraw.Draw(page).text(
        (80, 150), "Net Pay 4,280.90", fill=0, font=ImageFont.load_default(64)
    )
    words = ocr.read_words(np.asarray(page))
    return words is not None and "4,280.90" in [w.text for w in words]


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
            for name, path in (("badge image", image), ("stamped PDF", pdf)):
                outcome = verify_reading(context.verifier, read_input(str(path)))
                ok = outcome.state == Verdict.VERIFIED and not outcome.disagreement
                checks.append((name, ok))
        checks.append(("OCR engine (document check)", ocr_works()))
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
