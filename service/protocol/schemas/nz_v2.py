"""`payslip_non_pii` for `nz.payslip.v2` (PROTOCOL §5). Figures are decimal strings kept as sent;
pay cycle, tax code and employment type are free text here, unlike nz.v1."""

from __future__ import annotations

from typing import Literal, get_args

from .au_v2 import HourlyV2
from .common import ClosedModel, Conditional, ConditionalModel, PeriodModel, When
from .nz_v1 import LeaveUnit
from .scalars import Date, DecimalText, IsoCurrency, Opt, Text50

NzV2EarningType = Literal[
    "paid_leave",
    "allowance",
    "ordinary",
    "overtime",
    "penal_rate",
    "piece_work",
    "bonus_commission",
    "extra_pay",
    "schedular_payment",
    "directors_fees",
    "pay_as_you_go_holiday_pay",
    "leave_compensation_payment",
    "annual_holiday_cash_out",
    "alternative_holiday_cash_out",
    "holiday_pay_on_termination",
    "other",
]
NzLeaveType = Literal[
    "annual_holiday",
    "public_holiday",
    "alternative_holiday",
    "sick_leave",
    "bereavement_leave",
    "other_paid_leave",
]
NzAllowanceType = Literal[
    "meal",
    "travel",
    "accommodation",
    "vehicle",
    "phone",
    "tools",
    "uniform",
    "on_call",
    "shift",
    "first_aid",
    "higher_duties",
    "qualification",
    "other",
]
NzDeductionType = Literal[
    "union_fees", "payroll_donation", "attachment_order", "ir_arrears", "other_post_tax"
]

_TYPES: frozenset[str] = frozenset(get_args(NzV2EarningType))


class NzV2Earning(ConditionalModel):
    """One earning line; `leave_type` and `allowance_type` exist only for their kinds."""

    conditionals = (
        Conditional("leave_type", (When("type", _TYPES, "paid_leave"),)),
        Conditional("allowance_type", (When("type", _TYPES, "allowance"),)),
    )

    type: NzV2EarningType
    amount: DecimalText
    units: Opt[DecimalText] = None
    rate: Opt[DecimalText] = None
    ytd_amount: Opt[DecimalText] = None
    leave_type: Opt[NzLeaveType] = None
    allowance_type: Opt[NzAllowanceType] = None


class NzV2Deduction(ClosedModel):
    type: NzDeductionType
    amount: DecimalText
    ytd_amount: Opt[DecimalText] = None


class NzV2LeaveBalance(ClosedModel):
    amount: DecimalText
    unit: LeaveUnit


class NzV2LeaveBalances(ClosedModel):
    annual: Opt[NzV2LeaveBalance] = None
    annual_accrued_this_period: Opt[NzV2LeaveBalance] = None
    sick: Opt[NzV2LeaveBalance] = None
    sick_accrued_this_period: Opt[NzV2LeaveBalance] = None
    alternative: Opt[NzV2LeaveBalance] = None


class NzV2Ytd(ClosedModel):
    student_loan: Opt[DecimalText] = None
    kiwisaver_employee: Opt[DecimalText] = None
    kiwisaver_employer: Opt[DecimalText] = None
    child_support: Opt[DecimalText] = None
    non_taxable: Opt[DecimalText] = None
    post_tax_deductions: Opt[DecimalText] = None
    reimbursements: Opt[DecimalText] = None


class NzPayslipV2(PeriodModel):
    """Non-personal payslip data under `nz.payslip.v2`; figures are decimal strings."""

    period_start: Opt[Date] = None
    period_end: Date
    payment_date: Date
    currency: IsoCurrency
    gross: DecimalText
    paye: DecimalText
    net: DecimalText
    ytd_gross: Opt[DecimalText] = None
    ytd_paye: Opt[DecimalText] = None
    hours_paid: Opt[DecimalText] = None
    annual_rate: Opt[DecimalText] = None
    earnings_not_liable_for_acc: Opt[DecimalText] = None
    employee_share_scheme: Opt[DecimalText] = None
    student_loan: Opt[DecimalText] = None
    child_support: Opt[DecimalText] = None
    kiwisaver_employee_deduction: Opt[DecimalText] = None
    kiwisaver_employee_rate: Opt[DecimalText] = None
    kiwisaver_employer_contribution: Opt[DecimalText] = None
    esct: Opt[DecimalText] = None
    reimbursements: Opt[DecimalText] = None
    # Adjustments of earlier periods, the payroll-giving tax credit, and student loan compulsory
    # (SLCIR) and borrower-initiated (SLBOR) repayments: issuer libraries in the field send them.
    prior_period_gross_adjustment: Opt[DecimalText] = None
    prior_period_paye_adjustment: Opt[DecimalText] = None
    payroll_donation_tax_credit: Opt[DecimalText] = None
    slcir: Opt[DecimalText] = None
    slbor: Opt[DecimalText] = None
    pay_cycle: Opt[Text50] = None
    tax_code: Opt[Text50] = None
    employment_type: Opt[Text50] = None
    hourly: Opt[HourlyV2] = None
    earnings: Opt[list[NzV2Earning]] = None
    deductions: Opt[list[NzV2Deduction]] = None
    leave_balances: Opt[NzV2LeaveBalances] = None
    ytd: Opt[NzV2Ytd] = None
