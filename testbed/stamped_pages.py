"""Payslip pages stamped with real badges registered on a real (embedded) service, for the
document check's tests on every front end (PROTOCOL §13): the CLI, the verify screen, the
applicant check and the verification record. The pages come from :mod:`testbed.payslip_pages`;
the record is registered with the instance's issuer, so the service verifies its code."""

from __future__ import annotations

from typing import Any

from service.documents.badge import render_badge_png
from service.documents.pdf_stamp import stamp_badge
from service.protocol.pii_text import build_pii_text
from testbed.factories import AU_V1, PII_FIELDS, Sealed, sealed_payslip

NAME = "Jane Smith"


def register_payslip(context: Any, name: str = NAME) -> Sealed:
    """Register AU_V1's figures (gross 3,846.15, tax 782.00, net 3,064.15, paid 13/11/2026,
    period 30/10/2026 - 12/11/2026: what :class:`testbed.payslip_pages.Shown` prints by default)
    for ``name`` with the issuer of ``context`` (an app context with the embedded demo)."""
    assert context.issuer is not None and context.issuer_info is not None
    pii = build_pii_text("AU2", {**PII_FIELDS["AU2"], "employee_name": name})
    sealed = sealed_payslip(context.issuer_info.encryption_key, AU_V1, pii)
    context.issuer.register_non_pii(sealed.body)
    return sealed


def stamped(pdf: bytes, sealed: Sealed) -> bytes:
    """``pdf`` with ``sealed``'s badge printed on it and its code in the metadata."""
    return stamp_badge(pdf, render_badge_png(sealed.scan_url()), sealed.payload)
