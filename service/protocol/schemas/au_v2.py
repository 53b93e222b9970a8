"""`payslip_non_pii` for `au.payslip.v2` (PROTOCOL §5). Every amount, rate and quantity is a decimal
string stored exactly as sent, so no float ever rounds a figure the verifier is shown."""

from __future__ import annotations

from typing import Literal, get_args

from .au_v1 import (
    AuAllowanceType,
    AuDeductionType,
    AuLeaveType,
    AuOtherCategory,
    EmploymentBasis,
    EngagementType,
    SalarySacrificeType,
    SuperContributionType,
    au_earning_rules,
)
from .common import ClosedModel, Conditional, ConditionalModel, PeriodModel, When
from .scalars import Date, DecimalText, IsoCurrency, Opt, Text200, Usi

AuV2PayFrequency = Literal[
    "weekly", "fortnightly", "monthly", "quarterly", "four_weekly", "semi_monthly"
]
AuV2EarningType = Literal[
    "paid_leave",
    "allowance",
    "ordinary",
    "overtime",
    "bonus_commission",
    "directors_fees",
    "lump_sum",
    "return_to_work",
    "etp",
    "other",
]
LumpSumType = Literal["a_redundancy", "a_other", "b", "d", "e"]
EtpType = Literal[
    "redundancy",
    "other",
    "redundancy_split",
    "other_split",
    "death_dependant",
    "death_non_dependant",
    "death_non_dependant_split",
    "death_trustee",
]
EtpComponent = Literal["taxable", "tax_free"]

_TYPES: frozenset[str] = frozenset(get_args(AuV2EarningType))


class HourlyV2(ClosedModel):
    ordinary_rate: DecimalText
    hours: DecimalText
    amount: DecimalText


class AuV2Earning(ConditionalModel):
    """One earning line; each kind-specific field exists only for its kind (PROTOCOL §5)."""

    conditionals = (
        *au_earning_rules(_TYPES),
        Conditional("lump_sum_type", (When("type", _TYPES, "lump_sum"),)),
        Conditional("etp_type", (When("type", _TYPES, "etp"),)),
        Conditional("etp_component", (When("type", _TYPES, "etp"),)),
    )

    type: AuV2EarningType
    amount: DecimalText
    units: Opt[DecimalText] = None
    rate: Opt[DecimalText] = None
    ytd_amount: Opt[DecimalText] = None
    leave_type: Opt[AuLeaveType] = None
    allowance_type: Opt[AuAllowanceType] = None
    other_category: Opt[AuOtherCategory] = None
    lump_sum_type: Opt[LumpSumType] = None
    etp_type: Opt[EtpType] = None
    etp_component: Opt[EtpComponent] = None


class AuV2SalarySacrifice(ClosedModel):
    type: SalarySacrificeType
    amount: DecimalText
    ytd_amount: Opt[DecimalText] = None


class AuV2Deduction(ClosedModel):
    type: AuDeductionType
    amount: DecimalText
    ytd_amount: Opt[DecimalText] = None


class AuV2Superannuation(ClosedModel):
    contribution_type: SuperContributionType
    amount: DecimalText
    rate: Opt[DecimalText] = None
    ytd_amount: Opt[DecimalText] = None
    usi: Opt[Usi] = None


class AuV2Ytd(ClosedModel):
    taxable: Opt[DecimalText] = None
    super: Opt[DecimalText] = None
    non_taxable: Opt[DecimalText] = None
    post_tax_deductions: Opt[DecimalText] = None
    reimbursements: Opt[DecimalText] = None


class AuPayslipV2(PeriodModel):
    """Non-personal payslip data under `au.payslip.v2`; figures are decimal strings."""

    period_start: Opt[Date] = None
    period_end: Date
    payment_date: Date
    currency: IsoCurrency
    gross: DecimalText
    paygw: DecimalText
    net: DecimalText
    ytd_gross: Opt[DecimalText] = None
    ytd_paygw: Opt[DecimalText] = None
    annual_rate: Opt[DecimalText] = None
    taxable_gross: Opt[DecimalText] = None
    stsl_withholding: Opt[DecimalText] = None
    reimbursements: Opt[DecimalText] = None
    pay_frequency: Opt[AuV2PayFrequency] = None
    employment_basis: Opt[EmploymentBasis] = None
    engagement_type: Opt[EngagementType] = None
    award: Opt[Text200] = None
    hourly: Opt[HourlyV2] = None
    earnings: Opt[list[AuV2Earning]] = None
    salary_sacrifice: Opt[list[AuV2SalarySacrifice]] = None
    deductions: Opt[list[AuV2Deduction]] = None
    superannuation: Opt[list[AuV2Superannuation]] = None
    ytd: Opt[AuV2Ytd] = None
