"""An applicant's payslips for tests and the bench: fortnightly AU payslips of one person,
sealed under the demo issuer's key and registered on a real service, as PDFs, badge images or
code text. Synthetic data only."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from app.api import ApiClient
from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.pii_text import build_pii_text
from testbed.factories import AU_V1, PII_FIELDS, Sealed, blank_pdf, sealed_payslip

APPLICANT = "Jane Smith"


@dataclass(frozen=True)
class Registered:
    sealed: Sealed
    gross_cents: int
    net_cents: int
    period_start: date
    period_end: date
    payment_date: date

    @property
    def reference(self) -> str:
        return self.sealed.reference

    def pdf_bytes(self) -> bytes:
        url = self.sealed.scan_url()
        return stamp_badge(blank_pdf(), render_badge_png(url), self.sealed.payload)

    def png_bytes(self) -> bytes:
        return bytes(render_badge_png(self.sealed.scan_url()))


def register_fortnights(
    issuer: ApiClient,
    key_b64: str,
    count: int,
    *,
    last_paid: date | None = None,
    name: str = APPLICANT,
    skip: frozenset[int] = frozenset(),
    gross_cents: int = 384_615,
) -> list[Registered]:
    """``count`` consecutive fortnights (the last paid ``last_paid``, default three days ago)
    with true YTD gross, minus the indexes in ``skip`` (registered all the same: a missing
    payslip is one the applicant did not bring)."""
    last = last_paid or date.today() - timedelta(days=3)
    out: list[Registered] = []
    ytd = 1_000_000
    for n in range(count):
        paid = last - timedelta(days=14 * (count - 1 - n))
        end = paid - timedelta(days=1)
        start = end - timedelta(days=13)
        gross = gross_cents + n
        ytd += gross
        template = copy.deepcopy(AU_V1)
        template["payslip_non_pii"].update(
            period_start=start.isoformat(),
            period_end=end.isoformat(),
            payment_date=paid.isoformat(),
            gross_cents=gross,
            net_cents=gross * 4 // 5,
            ytd_gross_cents=ytd,
            pay_frequency="fortnightly",
        )
        fields = {**PII_FIELDS["AU2"], "employee_name": name}
        sealed = sealed_payslip(key_b64, template, build_pii_text("AU2", fields))
        issuer.register_non_pii(sealed.body)
        if n not in skip:
            out.append(Registered(sealed, gross, gross * 4 // 5, start, end, paid))
    return out


def write_inputs(folder: Path, payslips: list[Registered], kinds: list[str]) -> list[str]:
    """Each payslip as a file or text of the given kind ("pdf", "png", "text")."""
    args: list[str] = []
    for n, (payslip, kind) in enumerate(zip(payslips, kinds, strict=True)):
        if kind == "text":
            args.append(payslip.sealed.payload)
            continue
        path = folder / f"payslip{n + 1}.{kind}"
        path.write_bytes(payslip.pdf_bytes() if kind == "pdf" else payslip.png_bytes())
        args.append(str(path))
    return args
