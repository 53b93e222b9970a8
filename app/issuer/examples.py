"""Invented example payslips for "Fill with an example" (demo mode) and for tests.

Every name, number and account here is made up; the amounts add up so the example looks like a
real fortnight's pay. Dates are relative to today so the example never looks stale.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from app.issuer.fields import cents_to_money

CURRENCY = {"au": "AUD", "nz": "NZD"}

AU_EMPLOYEE = {
    "employee_name": "Casey Sampleton",
    "position": "Store Manager",
    "department": "Retail",
    "employer_abn": "51824753556",
    "employer_name": "Demo Payroll Pty Ltd",
    "bsb": "062-000",
    "account_number": "11112222",
    "account_name": "C Sampleton",
    "line1": "1 Example Street",
    "suburb": "Exampleton",
    "state": "NSW",
    "postcode": "2000",
}
NZ_EMPLOYEE = {
    "employee_name": "Sam Sampleford",
    "ird_number": "123-456-789",
    "position": "Barista",
    "department": "Cafe",
    "employer_name": "Demo Payroll NZ Ltd",
    "account_number": "12-3456-7890123-00",
    "account_name": "S Sampleford",
    "line1": "2 Example Road",
    "suburb": "Te Aro",
    "city": "Wellington",
    "postcode": "6011",
}


def example_payslip(schema: str, today: date | None = None) -> dict[str, Any]:
    """A valid `payslip_non_pii` for `schema` (a fortnight ending yesterday, paid today)."""
    paid = today or date.today()
    end = paid - timedelta(days=1)
    start = end - timedelta(days=13)
    country, version = schema.split(".")[0], schema.rsplit(".", 1)[-1]
    gross, tax = (384615, 78200) if country == "au" else (320000, 54025)
    base: dict[str, Any] = {
        "period_start": start.isoformat(),
        "period_end": end.isoformat(),
        "payment_date": paid.isoformat(),
        "currency": CURRENCY[country],
    }
    tax_name = "paygw" if country == "au" else "paye"
    if version == "v1":
        base |= {"gross_cents": gross, f"{tax_name}_cents": tax, "net_cents": gross - tax}
        if country == "au":  # au.payslip.v1 requires the year-to-date figures
            base |= {"ytd_gross_cents": gross * 9, "ytd_paygw_cents": tax * 9}
    else:
        base |= {
            "gross": cents_to_money(gross),
            tax_name: cents_to_money(tax),
            "net": cents_to_money(gross - tax),
        }
    if country == "au":
        base["pay_frequency"] = "fortnightly"
    return base


def example_employee(schema: str) -> dict[str, str]:
    return dict(AU_EMPLOYEE if schema.startswith("au.") else NZ_EMPLOYEE)
