"""Demo mode: a demo issuer and verifier with sample payslips, so a new user can verify something
in the first minute. Every name, account and number here is invented."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.domain.context import Domain
from service.domain.tokens import Principal
from service.protocol.encoding import new_reference
from service.protocol.pii_text import au_address, build_pii_text, nz_address
from service.protocol.schemas import IssuerCreated, VerifierCreated, validate_register_non_pii
from service.protocol.sealing import non_pii_record, seal
from service.protocol.vocabulary import PayslipSchema

DEMO_ISSUER = "Demo Payroll Pty Ltd"
DEMO_VERIFIER = "Demo Front Desk"


@dataclass(frozen=True, slots=True)
class DemoSample:
    label: str
    service_reference: str
    payload: str
    scan_url: str
    revoked: bool = False


@dataclass(slots=True)
class DemoInstance:
    issuer: IssuerCreated
    verifier: VerifierCreated
    samples: list[DemoSample] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer.wire(),
            "verifier": self.verifier.wire(),
            "samples": [
                {
                    "label": s.label,
                    "service_reference": s.service_reference,
                    "payload": s.payload,
                    "scan_url": s.scan_url,
                    "revoked": s.revoked,
                }
                for s in self.samples
            ],
        }


def sample_records() -> list[tuple[str, dict[str, Any], str]]:
    """(label, registration fields without encryption metadata, PII text)."""
    au_v1 = {
        "schema": PayslipSchema.AU_V1,
        "issued_at": "2026-11-13T09:00:00Z",
        "payslip_non_pii": {
            "period_start": "2026-10-30",
            "period_end": "2026-11-12",
            "payment_date": "2026-11-13",
            "currency": "AUD",
            "pay_frequency": "fortnightly",
            "employment_basis": "full_time",
            "gross_cents": 384615,
            "paygw_cents": 78200,
            "net_cents": 306415,
            "ytd_gross_cents": 3461535,
            "ytd_paygw_cents": 703800,
            "earnings": [
                {"type": "ordinary", "units": 76, "rate_cents": 4800, "amount_cents": 364800},
                {
                    "type": "allowance",
                    "allowance_type": "laundry",
                    "amount_cents": 19815,
                },
            ],
            "superannuation": [
                {"contribution_type": "superannuation_guarantee", "amount_cents": 46154}
            ],
        },
    }
    au_pii = build_pii_text(
        "AU2",
        {
            "employee_name": "Alex Example",
            "position": "Store Manager",
            "department": "Retail",
            "employer_identity": "51824753556",
            "bsb": "062-000",
            "account_number": "12345678",
            "account_name": "A Example",
            "address": au_address("1 Sample Street", "", "Exampleton", "NSW", "2000"),
        },
    )
    nz_v2 = {
        "schema": PayslipSchema.NZ_V2,
        "issued_at": "2026-11-14T08:30:00Z",
        "payslip_non_pii": {
            "period_start": "2026-11-01",
            "period_end": "2026-11-14",
            "payment_date": "2026-11-14",
            "currency": "NZD",
            "pay_cycle": "fortnightly",
            "tax_code": "M",
            "gross": "3200.00",
            "paye": "540.25",
            "net": "2659.75",
            "ytd_gross": "32000.00",
            "ytd_paye": "5402.50",
            "earnings": [{"type": "ordinary", "units": "80", "rate": "40.00", "amount": "3200.00"}],
        },
    }
    nz_pii = build_pii_text(
        "NZ2",
        {
            "employee_name": "Sam Sample",
            "ird_number": "123-456-789",
            "position": "Barista",
            "department": "Cafe",
            "employer_name": "Demo Payroll NZ Ltd",
            "account_number": "12-3456-7890123-00",
            "account_name": "S Sample",
            "address": nz_address("2 Example Road", "", "Te Aro", "Wellington", "6011"),
        },
    )
    return [("AU fortnightly payslip", au_v1, au_pii), ("NZ fortnightly payslip", nz_v2, nz_pii)]


def seed_demo(domain: Domain) -> DemoInstance:
    issuer = domain.admin.create_issuer(DEMO_ISSUER)
    verifier = domain.admin.create_verifier(DEMO_VERIFIER)
    demo = DemoInstance(issuer=issuer, verifier=verifier)
    principal = Principal(issuer.client_id, "issuer", issuer.issuer_id, "service:issuer")
    records = sample_records()
    records.append(("Revoked payslip (shows NOT VERIFIED)", records[0][1], records[0][2]))
    for label, fields, pii in records:
        # Sealed and recorded as the issuer library does it (one implementation, in protocol).
        sealed = seal(pii, issuer.encryption_key)
        reference = new_reference()
        body = non_pii_record(
            fields["schema"],
            fields["issued_at"],
            fields["payslip_non_pii"],
            sealed,
            reference=reference,
            key_version=issuer.key_version,
        )
        domain.registration.register_non_pii(principal, validate_register_non_pii(body))
        revoked = label.startswith("Revoked")
        if revoked:
            domain.revocation.revoke(principal, reference, "demo: replaced payslip")
        scan_base = domain.registration.scan_base
        demo.samples.append(
            DemoSample(
                label=label,
                service_reference=reference,
                payload=sealed.payload_v2(reference),
                scan_url=sealed.scan_url(scan_base, reference),
                revoked=revoked,
            )
        )
    return demo
