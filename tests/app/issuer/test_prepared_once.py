"""The "prepare once, resend the same on retry" rule (app.issuer.records.PreparedOnce), against
the real demo service: a retry after a lost answer is a duplicate, never a second record."""

from __future__ import annotations

import copy

from app.issuer.pii import au2_text
from app.issuer.records import IssuerKey, PreparedOnce, register_prepared
from app.shell.context import AppContext
from service.composition.demo import sample_records

PII = au2_text(employee_name="Casey Sampleton", position="Store Manager", bsb="062-000")


def _inputs(context: AppContext) -> tuple[IssuerKey, str, dict[str, object]]:
    _, record, _ = sample_records()[0]
    assert context.service is not None
    return (
        IssuerKey.from_info(context.issuer_info),
        context.service.config.scan_base,
        copy.deepcopy(record["payslip_non_pii"]),
    )


def test_a_retry_resends_the_same_payslip_and_is_answered_duplicate(
    demo_context: AppContext,
) -> None:
    key, scan_base, payslip = _inputs(demo_context)
    once = PreparedOnce()
    first = once.get(key, scan_base, "au.payslip.v1", payslip, PII)
    assert once.pending
    # The answer to the first attempt is "lost": the user presses the button again.
    registered = register_prepared(demo_context.issuer, first)  # type: ignore[arg-type]
    again = once.get(key, scan_base, "au.payslip.v1", copy.deepcopy(payslip), PII)
    assert again is first  # same reference, IV and tag
    retried = register_prepared(demo_context.issuer, again)  # type: ignore[arg-type]
    assert registered.created and not retried.created
    assert retried.service_reference == registered.service_reference
    assert retried.payload == registered.payload


def test_any_change_or_forget_prepares_a_new_payslip(demo_context: AppContext) -> None:
    key, scan_base, payslip = _inputs(demo_context)
    once = PreparedOnce()
    first = once.get(key, scan_base, "au.payslip.v1", payslip, PII)
    changed = dict(payslip, net_cents=int(payslip["net_cents"]) + 1)  # type: ignore[call-overload]
    second = once.get(key, scan_base, "au.payslip.v1", changed, PII)
    assert second.reference != first.reference
    third = once.get(key, scan_base, "au.payslip.v1", changed, PII + "x")
    assert third.reference != second.reference
    assert once.get(key, scan_base, "au.payslip.v1", changed, PII + "x") is third
    once.forget()
    assert not once.pending
    fourth = once.get(key, scan_base, "au.payslip.v1", changed, PII + "x")
    assert fourth.reference != third.reference
    assert PII not in repr(once.__dict__)  # the marker is a digest, not the employee's text
