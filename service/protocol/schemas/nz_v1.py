"""`payslip_non_pii` for `nz.payslip.v1`: spec.md "payslip_non_pii for nz.payslip.v1" with the
types, required flags and values PROTOCOL §5 settles. Amounts are integer cents."""

from __future__ import annotations

from typing import Literal

from .au_v1 import V1Currency
from .common import ClosedModel, PeriodModel
from .scalars import BasisPoints, Cents, Date, NzTaxCode, Opt, Quantity

NzPayCycle = Literal["weekly", "fortnightly", "four_weekly", "monthly"]
NzV1EmploymentType = Literal["full_time", "part_time", "casual", "fixed_term"]
NzV1EarningType = Literal[
    "ordinary", "overtime", "holiday_pay", "sick_leave", "bonus", "allowance", "other"
]
LeaveUnit = Literal["hours", "days", "weeks"]


class NzV1Earning(ClosedModel):
    type: NzV1EarningType
    amount_cents: Cents
    units: Opt[Quantity] = None
    rate_cents: Opt[Cents] = None


class NzV1KiwiSaver(ClosedModel):
    employee_deduction_cents: Opt[Cents] = None
    employee_rate_basis_points: Opt[BasisPoints] = None
    employer_contribution_cents: Opt[Cents] = None
    esct_cents: Opt[Cents] = None


class NzV1LeaveBalance(ClosedModel):
    value: Quantity
    unit: LeaveUnit


class NzV1LeaveBalances(ClosedModel):
    """Balances by leave kind; a closed set of kinds, so a typo in a kind is caught."""

    annual: Opt[NzV1LeaveBalance] = None
    sick: Opt[NzV1LeaveBalance] = None
    alternative: Opt[NzV1LeaveBalance] = None
    long_service: Opt[NzV1LeaveBalance] = None


class NzPayslipV1(PeriodModel):
    """Non-personal payslip data under `nz.payslip.v1`; amounts in integer cents."""

    period_start: Date
    period_end: Date
    payment_date: Date
    currency: V1Currency
    gross_cents: Cents
    paye_cents: Cents
    net_cents: Cents
    ytd_gross_cents: Opt[Cents] = None
    ytd_paye_cents: Opt[Cents] = None
    student_loan_cents: Opt[Cents] = None
    pay_cycle: Opt[NzPayCycle] = None
    tax_code: Opt[NzTaxCode] = None
    employment_type: Opt[NzV1EmploymentType] = None
    hours_paid: Opt[Quantity] = None
    earnings: Opt[list[NzV1Earning]] = None
    kiwisaver: Opt[NzV1KiwiSaver] = None
    leave_balances: Opt[NzV1LeaveBalances] = None
