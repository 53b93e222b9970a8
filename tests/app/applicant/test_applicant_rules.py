"""The applicant check's set rules (PROTOCOL §10) over generated sets of payslips."""

from __future__ import annotations

import dataclasses
import unicodedata
from datetime import date, timedelta
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from app.applicant.documents import Document, Payslip
from app.applicant.income import frequency_of, half_up, income_of, share_of_net
from app.applicant.problems import Check
from app.applicant.rules import check_set, financial_year
from app.document.money import format_minor, minor_amount
from app.document.names import same_name
from service.protocol.vocabulary import Verdict

ISSUER = "0f8e8d3c-1111-4222-8333-444455556666"
NAME = "Jane Smith"


def fortnights(
    first_start: date,
    grosses: list[int],
    *,
    country: str = "au",
    ytd_start: int = 0,
    name: str = NAME,
    currency: str = "AUD",
) -> list[Payslip]:
    """Consecutive fortnightly payslips, paid the day after each period, with true YTD gross
    (reset at each financial year's start by payment date)."""
    out: list[Payslip] = []
    ytd = ytd_start
    previous_year: int | None = None
    for n, gross in enumerate(grosses):
        start = first_start + timedelta(days=14 * n)
        end = start + timedelta(days=13)
        paid = end + timedelta(days=1)
        year = financial_year(paid, country)
        if previous_year is not None and year != previous_year:
            ytd = 0
        previous_year = year
        ytd += gross
        out.append(
            Payslip(
                schema=f"{country}.payslip.v1",
                issuer_id=ISSUER,
                issuer_name="Example Payroll",
                payment_date=paid,
                period_start=start,
                period_end=end,
                currency=currency,
                gross_minor=gross,
                net_minor=gross * 4 // 5,
                ytd_gross_minor=ytd,
                employee_name=name,
            )
        )
    return out


def docs_of(payslips: list[Payslip]) -> list[Document]:
    return [
        Document(i, f"p{i}.pdf", f"p{i}.pdf", Verdict.VERIFIED, "VERIFIED", f"{i:022d}", payslip=p)
        for i, p in enumerate(payslips)
    ]


def today_after(payslips: list[Payslip]) -> date:
    latest = max(p.payment_date for p in payslips if p.payment_date)
    return latest + timedelta(days=3)


def checks(result: object) -> list[Check]:
    return [p.check for p in result.problems]  # type: ignore[attr-defined]


starts = st.dates(min_value=date(2020, 1, 1), max_value=date(2030, 12, 31))
pays = st.lists(st.integers(min_value=50_000, max_value=900_000), min_size=2, max_size=6)


@given(starts, pays)
def test_consecutive_fortnights_are_verified_with_their_income(start: date, grosses: list[int]):
    payslips = fortnights(start, grosses)
    result = check_set(docs_of(payslips), today=today_after(payslips), applicant_name=NAME)
    assert result.problems == ()
    assert result.verdict == Verdict.VERIFIED
    income = result.income.income
    assert income is not None and income.periods_per_year == 26
    assert income.gross_per_year_minor == half_up(Fraction(sum(grosses) * 26, len(grosses)))
    assert income.net_per_month_minor == half_up(Fraction(income.net_per_year_minor, 12))


@given(starts, st.lists(st.integers(50_000, 900_000), min_size=3, max_size=6), st.data())
def test_one_missing_fortnight_is_one_gap(start: date, grosses: list[int], data: st.DataObject):
    payslips = fortnights(start, grosses)
    missing = data.draw(st.integers(1, len(payslips) - 2))
    kept = payslips[:missing] + payslips[missing + 1 :]
    result = check_set(docs_of(kept), today=today_after(kept))
    assert checks(result) == [Check.GAP]  # no YTD check across the gap
    gap = result.problems[0]
    assert gap.documents == (missing - 1, missing)
    assert payslips[missing].period_start.strftime("%-d %b %Y") in gap.message
    assert result.verdict == Verdict.NOT_VERIFIED


@given(starts, pays, st.integers(1, 13), st.data())
def test_overlapping_periods(start: date, grosses: list[int], days: int, data: st.DataObject):
    payslips = fortnights(start, grosses)
    k = data.draw(st.integers(1, len(payslips) - 1))
    earlier = payslips[k].period_start - timedelta(days=days)
    payslips[k] = dataclasses.replace(payslips[k], period_start=earlier)
    result = check_set(docs_of(payslips), today=today_after(payslips))
    assert next(p for p in result.problems if p.check == Check.OVERLAP).documents == (k - 1, k)
    assert Check.GAP not in checks(result)
    assert result.verdict == Verdict.NOT_VERIFIED


@given(starts, pays, st.integers(-50_000, 50_000).filter(bool), st.data())
def test_a_ytd_that_jumps(start: date, grosses: list[int], jump: int, data: st.DataObject):
    payslips = fortnights(start, grosses)
    k = data.draw(st.integers(0, len(payslips) - 1))
    ytd = payslips[k].ytd_gross_minor
    assert ytd is not None
    payslips[k] = dataclasses.replace(payslips[k], ytd_gross_minor=ytd + jump)
    result = check_set(docs_of(payslips), today=today_after(payslips))
    flagged = [p for p in result.problems if p.check == Check.YTD_MISMATCH]
    year = [financial_year(p.payment_date, "au") for p in payslips]  # type: ignore[arg-type]
    # the pair before k (same year) and the pair after k (same year) compare against k's YTD
    expected = [(k - 1, k)] if k > 0 and year[k - 1] == year[k] else []
    expected += [(k, k + 1)] if k + 1 < len(payslips) and year[k] == year[k + 1] else []
    assert [p.documents for p in flagged] == expected
    assert set(checks(result)) <= {Check.YTD_MISMATCH}


@given(st.sampled_from(["au", "nz"]), st.integers(2020, 2030), pays)
def test_no_ytd_check_across_a_financial_year(country: str, year: int, grosses: list[int]):
    new_year = date(year, 7 if country == "au" else 4, 1)
    first_paid = new_year - timedelta(days=14 * (len(grosses) // 2))
    payslips = fortnights(
        first_paid - timedelta(days=14), grosses, country=country, ytd_start=10**7
    )
    years = {financial_year(p.payment_date, country) for p in payslips}  # type: ignore[arg-type]
    assert len(years) == 2  # the set does span the boundary; YTD restarts there
    result = check_set(docs_of(payslips), today=today_after(payslips))
    assert result.problems == ()


def _accented(word: str, upper: bool) -> str:
    table = {"a": "á", "e": "é", "o": "ö", "n": "ñ", "u": "ü"}
    out = "".join(table.get(c, c) for c in word)
    return out.upper() if upper else out


words = st.lists(
    st.text("abcdeijlmnorstu", min_size=2, max_size=8), min_size=2, max_size=3, unique=True
)


@given(words, st.booleans(), st.randoms())
def test_a_name_in_another_word_order_with_accents_matches(
    parts: list[str], upper: bool, rnd: object
):
    applicant = " ".join(parts)
    shuffled = list(parts)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    printed = ", ".join(_accented(p, upper) for p in shuffled)
    printed = unicodedata.normalize("NFC", printed)
    assert same_name(printed, applicant)
    payslips = fortnights(date(2026, 9, 5), [300_000, 300_000], name=printed)
    result = check_set(docs_of(payslips), today=today_after(payslips), applicant_name=applicant)
    assert result.verdict == Verdict.VERIFIED


def test_names_of_the_protocol_examples():
    assert same_name("Smith, José", "jose SMITH")
    assert same_name("Álvarez-Núñez Ana", "ana alvarez nunez")
    assert not same_name("Jane Smith", "Jane Citizen")
    assert not same_name("", "")


@given(starts, pays, st.data())
def test_a_different_employee(start: date, grosses: list[int], data: st.DataObject):
    payslips = fortnights(start, [*grosses, 400000])
    k = data.draw(st.integers(0, len(payslips) - 1))
    payslips[k] = dataclasses.replace(payslips[k], employee_name="Jane Citizen")
    result = check_set(docs_of(payslips), today=today_after(payslips), applicant_name=NAME)
    assert [(p.check, p.documents) for p in result.problems] == [
        (Check.DIFFERENT_EMPLOYEE, (k,)),
        (Check.NAME_MISMATCH, (k,)),
    ]
    assert "names Jane Citizen, not the applicant Jane Smith" in result.problems[1].message
    assert result.verdict == Verdict.NOT_VERIFIED


@given(starts, pays, st.data())
def test_a_revoked_one(start: date, grosses: list[int], data: st.DataObject):
    docs = docs_of(fortnights(start, grosses))
    k = data.draw(st.integers(0, len(docs) - 1))
    docs[k] = Document(
        k, "r.pdf", "r.pdf", Verdict.NOT_VERIFIED, "REVOKED", "R" * 22, code="REVOKED"
    )
    payslips = [d.payslip for d in docs if d.payslip]
    result = check_set(docs, today=today_after(payslips))
    assert (Check.NOT_VERIFIED, (k,)) in [(p.check, p.documents) for p in result.problems]
    assert "revoked" in result.problems[0].message
    assert result.verdict == Verdict.NOT_VERIFIED
    assert result.income.income is None  # §10: a revoked companion leaves no income proved
    assert "a payslip is NOT VERIFIED" in (result.income.why_none or "")


@given(starts, pays, st.data())
def test_one_unreachable_is_cannot_verify(start: date, grosses: list[int], data: st.DataObject):
    docs = docs_of(fortnights(start, grosses))
    k = data.draw(st.integers(0, len(docs) - 1))
    docs[k] = Document(
        k,
        "u.pdf",
        "u.pdf",
        Verdict.CANNOT_VERIFY,
        "SERVICE_UNREACHABLE",
        code="SERVICE_UNREACHABLE",
    )
    payslips = [d.payslip for d in docs if d.payslip]
    result = check_set(docs, today=today_after(payslips))
    if 0 < k < len(docs) - 1:  # its neighbours now look like a gap: that is a real finding
        assert checks(result)[0] == Check.CANNOT_VERIFY
    else:
        assert checks(result) == [Check.CANNOT_VERIFY]
        assert result.verdict == Verdict.CANNOT_VERIFY


def test_not_a_payslip_alone_is_cannot_verify():
    payslips = fortnights(date(2026, 9, 5), [300_000])
    docs = [
        *docs_of(payslips),
        Document(1, "x.txt", "x.txt", None, "NOT_A_PAYSLIP_CODE", detail="not a code"),
    ]
    result = check_set(docs, today=today_after(payslips))
    assert [(p.check, p.documents) for p in result.problems] == [(Check.NOT_A_PAYSLIP, (1,))]
    assert result.verdict == Verdict.CANNOT_VERIFY


@given(starts, pays)
def test_mixed_currencies_prove_no_income(start: date, grosses: list[int]):
    payslips = fortnights(start, grosses)
    payslips[0] = dataclasses.replace(payslips[0], currency="NZD", schema="nz.payslip.v1")
    result = check_set(docs_of(payslips), today=today_after(payslips))
    assert result.income.income is None
    assert "different currencies (AUD, NZD)" in (result.income.why_none or "")


def test_duplicate_and_stale():
    payslips = fortnights(date(2026, 9, 5), [300_000, 310_000])
    docs = docs_of(payslips)
    docs.append(dataclasses.replace(docs[1], input_index=2, label="again.png"))
    latest = payslips[-1].payment_date
    assert latest is not None
    result = check_set(docs, today=latest + timedelta(days=63), max_age_days=45)
    assert [(p.check, p.documents) for p in result.problems] == [
        (Check.DUPLICATE, (1, 2)),
        (Check.STALE, (1,)),
    ]
    assert result.problems[1].message.startswith("The latest payslip is 63 days old")
    assert result.income.income is None  # NOT VERIFIED: no income, however it would add up
    income = income_of(docs).income
    assert income is not None and income.payslips == 2  # the duplicate is one pay, not two
    fresh = check_set(docs[:2], today=latest + timedelta(days=45), max_age_days=45)
    assert fresh.verdict == Verdict.VERIFIED


def test_different_employer_by_issuer_or_abn():
    payslips = fortnights(date(2026, 9, 5), [300_000, 300_000, 300_000])
    payslips = [dataclasses.replace(p, employer_abn="51824753556") for p in payslips]
    payslips[2] = dataclasses.replace(payslips[2], employer_abn="53004085616")
    result = check_set(docs_of(payslips), today=today_after(payslips))
    assert [(p.check, p.documents) for p in result.problems] == [(Check.DIFFERENT_EMPLOYER, (2,))]
    payslips[2] = dataclasses.replace(
        payslips[2], employer_abn=None, issuer_id="other", issuer_name="Other Payroll"
    )
    result = check_set(docs_of(payslips), today=today_after(payslips))
    assert "from Other Payroll, not Example Payroll" in result.problems[0].message


def test_periods_per_year_from_frequency_or_length():
    base = fortnights(date(2026, 1, 1), [1])[0]
    for start, end, expected in [
        (date(2026, 2, 1), date(2026, 2, 28), "monthly"),
        (date(2026, 2, 15), date(2026, 3, 14), "monthly"),
        (date(2026, 3, 2), date(2026, 3, 29), "four_weekly"),
        (date(2026, 3, 1), date(2026, 3, 31), "monthly"),
        (date(2026, 3, 2), date(2026, 3, 8), "weekly"),
        (date(2026, 3, 2), date(2026, 3, 10), None),
    ]:
        assert (
            frequency_of(dataclasses.replace(base, period_start=start, period_end=end)) == expected
        )
    no_start = dataclasses.replace(base, period_start=None, pay_frequency="semi_monthly")
    assert frequency_of(no_start) == "semi_monthly"
    assert frequency_of(dataclasses.replace(no_start, pay_frequency=None)) is None


def test_minor_units_of_v1_and_v2():
    assert minor_amount({"gross_cents": 384615, "currency": "AUD"}, "gross") == 384615
    assert minor_amount({"gross": "384615", "currency": "JPY"}, "gross") == 384615
    assert minor_amount({"gross": "1.5", "currency": "KWD"}, "gross") == 1500
    assert minor_amount({"gross": "3200.005", "currency": "NZD"}, "gross") == 320001
    assert minor_amount({"currency": "NZD"}, "gross") is None
    assert format_minor(1500, "KWD") == "1.500 KWD"
    assert format_minor(384615, "JPY") == "384,615 JPY"


def test_income_rounds_half_up_and_rent_share():
    payslips = fortnights(date(2026, 9, 5), [100_001, 100_000])  # mean 100000.5 cents
    income = income_of(docs_of(payslips)).income
    assert income is not None
    assert income.gross_per_year_minor == 2_600_013  # 100000.5 x 26 = 2600013
    assert income.gross_per_pay_minor == 100_001  # half up
    assert half_up(Fraction(-5, 2)) == -3
    net_week = income.net_per_year_minor / 52
    share = share_of_net(round(net_week * 0.28), "week", income)
    assert share == 28


def _result(schema: str, non_pii: dict[str, object], name: str = NAME) -> object:
    from service.protocol.schemas import VerificationResult

    return VerificationResult.model_validate(
        {
            "verified": True,
            "service_reference": "A" * 22,
            "payslip": {
                "schema": schema,
                "issued_at": "2026-11-13T09:00:00Z",
                "payslip_non_pii": non_pii,
                "status": "active",
                "issuer": {"issuer_id": ISSUER, "name": "Example Payroll"},
                "registered_at": "2026-11-13T09:00:01Z",
            },
            "employee": {"employee_name": name, "employer_identity": "51 824 753 556"},
            "decrypted_at": "2026-11-20T09:00:00Z",
        }
    )


def test_v2_results_in_zero_two_and_three_digit_currencies():
    from app.applicant.documents import payslip_of

    for currency, gross, minor in (
        ("JPY", "384615", 384615),
        ("NZD", "3200.50", 320050),
        ("KWD", "1250.125", 1250125),
    ):
        non_pii = {
            "period_end": "2026-11-14",
            "payment_date": "2026-11-14",
            "currency": currency,
            "gross": gross,
            "net": gross,
            "pay_cycle": "Four-Weekly",
        }
        payslip = payslip_of(_result("nz.payslip.v2", non_pii), with_employee=True)  # type: ignore[arg-type]
        assert payslip.gross_minor == minor and payslip.period_start is None
        assert payslip.pay_frequency == "four_weekly" and payslip.country == "nz"
        assert payslip.employer_abn == "51824753556"
    hidden = payslip_of(_result("au.payslip.v2", non_pii), with_employee=False)  # type: ignore[arg-type]
    assert hidden.employee_name is None and hidden.employer_abn is None


def test_without_period_start_or_ytd_and_mixed_au_nz():
    payslips = fortnights(date(2026, 3, 1), [300_000, 300_000, 300_000])
    bare = [
        dataclasses.replace(p, period_start=None, ytd_gross_minor=None, pay_frequency="fortnightly")
        for p in payslips
    ]
    result = check_set(docs_of([bare[0], bare[2]]), today=today_after(bare))
    assert result.problems == ()  # no start, no YTD: gap and YTD cannot be checked
    assert result.income.income is not None and result.income.income.periods_per_year == 26
    # an NZ payslip next to AU ones: never YTD-compared (different financial years)
    mixed = [
        payslips[0],
        dataclasses.replace(payslips[1], schema="nz.payslip.v1", ytd_gross_minor=1),
    ]
    result = check_set(docs_of(mixed), today=today_after(mixed))
    assert Check.YTD_MISMATCH not in checks(result)
    # no period start and no frequency: no income, and why
    unknown = [dataclasses.replace(p, pay_frequency=None) for p in bare]
    assert income_of(docs_of(unknown)).income is None


@given(pays, st.data())
def test_only_a_verified_set_proves_income(grosses: list[int], data: st.DataObject):
    """PROTOCOL §10: two people's pay averaged, a gap, a YTD that does not add up or a stale set
    proves no income; the reason is given instead (issue 35). One financial year (August to
    November), so the YTD check applies to every pair."""
    payslips = fortnights(date(2026, 8, 1), [*grosses, 400_000])
    k = data.draw(st.integers(1, len(payslips) - 1))
    two_people = list(payslips)
    two_people[k] = dataclasses.replace(payslips[k], employee_name="John Citizen")
    jumped = list(payslips)
    ytd = payslips[k].ytd_gross_minor
    assert ytd is not None
    jumped[k] = dataclasses.replace(payslips[k], ytd_gross_minor=ytd + 1)
    gap = payslips[:k] + payslips[k + 1 :] if k < len(payslips) - 1 else None
    cases = [(two_people, "two people's pay"), (jumped, "year-to-date figures do not add up")]
    if gap is not None:
        cases.append((gap, "a payslip is missing"))
    for sample, why in cases:
        result = check_set(docs_of(sample), today=today_after(sample))
        assert result.verdict == Verdict.NOT_VERIFIED
        assert result.income.income is None
        assert why in (result.income.why_none or "")
        assert "VERIFIED together" in (result.income.why_none or "")
    whole = check_set(docs_of(payslips), today=today_after(payslips))
    assert whole.verdict == Verdict.VERIFIED and whole.income.income is not None
    old = check_set(docs_of(payslips), today=today_after(payslips) + timedelta(days=90))
    assert old.income.income is None and "too old" in (old.income.why_none or "")


def test_a_cannot_verify_set_proves_no_income():
    payslips = fortnights(date(2026, 9, 5), [300_000, 300_000])
    docs = docs_of(payslips)
    docs.append(Document(2, "u.pdf", "u.pdf", Verdict.CANNOT_VERIFY, "SERVICE_UNREACHABLE"))
    result = check_set(docs, today=today_after(payslips))
    assert result.verdict == Verdict.CANNOT_VERIFY
    assert result.income.income is None
    assert "not every payslip could be checked" in (result.income.why_none or "")


def test_sentences_name_documents_by_position_and_input_not_by_payment_date_alone():
    """Two payslips paid on one day read "#1 a.pdf (paid ...) and #2 a.pdf (paid ...)", not
    "paid on 27 Nov 2026 and 27 Nov 2026" (issue 35)."""
    first, second = fortnights(date(2026, 11, 1), [300_000, 300_000])
    second = dataclasses.replace(
        second, period_start=first.period_start, payment_date=first.payment_date, ytd_gross_minor=1
    )
    docs = [
        Document(0, "a/p.pdf", "p.pdf", Verdict.VERIFIED, "VERIFIED", "A" * 22, payslip=first),
        Document(1, "b/p.pdf", "p.pdf", Verdict.VERIFIED, "VERIFIED", "B" * 22, payslip=second),
    ]
    result = check_set(docs, today=today_after([first]))
    overlap = next(p for p in result.problems if p.check == Check.OVERLAP)
    paid = first.payment_date.strftime("%-d %b %Y")  # type: ignore[union-attr]
    assert overlap.message.startswith(f"#1 p.pdf (paid {paid}) and #2 p.pdf (paid {paid})")
    assert f"{paid} and {paid}" not in overlap.message
    ytd = next(p for p in result.problems if p.check == Check.YTD_MISMATCH)
    assert "#2 p.pdf" in ytd.message and "#1 p.pdf" in ytd.message
    revoked = Document(2, "c.pdf", "c.pdf", Verdict.NOT_VERIFIED, "REVOKED", code="REVOKED")
    result = check_set([*docs[:1], revoked], today=today_after([first]))
    assert result.problems[0].message.startswith("#2 c.pdf is NOT VERIFIED")


def test_one_payslip_reads_as_one_payslip():
    (payslip,) = fortnights(date(2026, 9, 5), [300_000])
    income = income_of(docs_of([payslip])).income
    assert income is not None
    assert income.explanation().startswith("The pay of one fortnightly payslip (3,000.00 AUD")
    assert "average of payslip" not in income.explanation()
    two = income_of(docs_of(fortnights(date(2026, 9, 5), [300_000, 300_000]))).income
    assert two is not None and two.explanation().startswith("The average of 2 fortnightly")
