"""`payslip_non_pii` for `au.payslip.v1`: spec.md "payslip_non_pii for au.payslip.v1" as completed
by PROTOCOL §5. Amounts are integer cents; the enumerations here are reused by `au.payslip.v2`."""

from __future__ import annotations

from typing import Literal, get_args

from .common import ClosedModel, Conditional, ConditionalModel, PeriodModel, When
from .scalars import Cents, Date, FundAbn, Opt, Quantity, Usi

V1Currency = Literal["AUD", "NZD", "USD", "GBP", "EUR", "CAD", "SGD", "HKD", "CHF", "ZAR"]
AuPayFrequency = Literal["weekly", "fortnightly", "monthly", "quarterly"]
EmploymentBasis = Literal[
    "full_time",
    "part_time",
    "casual",
    "labour_hire",
    "voluntary_agreement",
    "death_beneficiary",
    "non_employee",
]
EngagementType = Literal["permanent", "fixed_term"]
AuV1EarningType = Literal[
    "paid_leave",
    "allowance",
    "ordinary",
    "overtime",
    "bonus_commission",
    "directors_fees",
    "lump_sum",
    "return_to_work",
]
AuLeaveType = Literal[
    "cash_out_in_service",
    "unused_on_termination",
    "paid_parental",
    "workers_compensation",
    "ancillary_defence",
    "other_paid_leave",
]
AuAllowanceType = Literal[
    "cents_per_km",
    "award_transport",
    "laundry",
    "overtime_meal",
    "travel",
    "tools",
    "tasks",
    "qualifications",
    "other",
]
AuOtherCategory = Literal[
    "home_office", "non_deductible", "transport_fares", "uniform", "private_vehicle", "general"
]
SalarySacrificeType = Literal["super", "other"]
AuDeductionType = Literal[
    "union_professional_fees",
    "workplace_giving",
    "child_support_deduction",
    "child_support_garnishee",
    "other_post_tax",
]
SuperContributionType = Literal["superannuation_guarantee", "resc", "salary_sacrifice"]

ALLOWANCE_TYPES: frozenset[str] = frozenset(get_args(AuAllowanceType))


def au_earning_rules(types: frozenset[str]) -> tuple[Conditional, ...]:
    """The au.v1 conditional fields, over the earning `types` of the schema version at hand."""

    def is_type(value: str) -> When:
        return When("type", types, value)

    return (
        Conditional("leave_type", (is_type("paid_leave"),)),
        Conditional("allowance_type", (is_type("allowance"),)),
        Conditional(
            "other_category",
            (is_type("allowance"), When("allowance_type", ALLOWANCE_TYPES, "other")),
        ),
    )


class AuV1Hourly(ClosedModel):
    ordinary_rate_cents: Cents
    hours: Quantity
    amount_cents: Cents


class AuV1Earning(ConditionalModel):
    """One earning line; `leave_type`, `allowance_type` and `other_category` exist only for the
    earning kinds they describe, so a line cannot claim two kinds at once."""

    conditionals = au_earning_rules(frozenset(get_args(AuV1EarningType)))

    type: AuV1EarningType
    amount_cents: Cents
    units: Opt[Quantity] = None
    rate_cents: Opt[Cents] = None
    leave_type: Opt[AuLeaveType] = None
    allowance_type: Opt[AuAllowanceType] = None
    other_category: Opt[AuOtherCategory] = None


class AuV1SalarySacrifice(ClosedModel):
    type: SalarySacrificeType
    amount_cents: Cents


class AuV1Deduction(ClosedModel):
    type: AuDeductionType
    amount_cents: Cents


class AuV1Superannuation(ClosedModel):
    contribution_type: SuperContributionType
    amount_cents: Cents
    usi: Opt[Usi] = None
    fund_abn: Opt[FundAbn] = None


class AuV1Ytd(ClosedModel):
    taxable_cents: Opt[Cents] = None
    super_cents: Opt[Cents] = None
    non_taxable_cents: Opt[Cents] = None
    post_tax_deductions_cents: Opt[Cents] = None
    reimbursements_cents: Opt[Cents] = None


class AuPayslipV1(PeriodModel):
    """Non-personal payslip data under `au.payslip.v1`; amounts in integer cents."""

    period_start: Date
    period_end: Date
    payment_date: Date
    currency: V1Currency
    gross_cents: Cents
    paygw_cents: Cents
    net_cents: Cents
    ytd_gross_cents: Cents
    ytd_paygw_cents: Cents
    pay_frequency: Opt[AuPayFrequency] = None
    employment_basis: Opt[EmploymentBasis] = None
    engagement_type: Opt[EngagementType] = None
    hourly: Opt[AuV1Hourly] = None
    annual_rate_cents: Opt[Cents] = None
    taxable_gross_cents: Opt[Cents] = None
    stsl_withholding_cents: Opt[Cents] = None
    earnings: Opt[list[AuV1Earning]] = None
    salary_sacrifice: Opt[list[AuV1SalarySacrifice]] = None
    deductions: Opt[list[AuV1Deduction]] = None
    superannuation: Opt[list[AuV1Superannuation]] = None
    reimbursements_cents: Opt[Cents] = None
    ytd: Opt[AuV1Ytd] = None
