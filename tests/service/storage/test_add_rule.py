"""The add-records verdict rule on its own (service/storage/add_rule.py): in-batch duplicates and
conflicts, IV reuse per issuer, the order of the checks, and what a rejected record reserves,
against stored records and within one call. The same rule runs in both adapters; the store
contract (store_contract.py) checks it end to end on TinyDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from service.storage.add_rule import AddPlan, resolve_additions
from service.storage.port import AddStatus, Record
from tests.service.storage.store_contract import ISSUER_A, ISSUER_B, make_record

C, D, X, IV = AddStatus.CREATED, AddStatus.DUPLICATE, AddStatus.CONFLICT, AddStatus.IV_REUSED


def resolve(records: list[Record], stored: Sequence[Record] = ()) -> AddPlan:
    by_ref = {r.service_reference: r for r in stored}
    ivs = {(r.issuer_id, r.iv) for r in stored}
    return resolve_additions(records, by_ref.get, ivs)


def statuses(plan: AddPlan) -> list[AddStatus]:
    return [o.status for o in plan.outcomes]


def test_new_records_are_created_and_returned_in_order() -> None:
    batch = [make_record("a"), make_record("b"), make_record("c")]
    plan = resolve(batch)
    assert statuses(plan) == [C, C, C]
    assert plan.created == batch
    assert [o.record for o in plan.outcomes] == batch


def test_empty_call() -> None:
    assert resolve([]) == AddPlan([], [])


def test_stored_reference_with_equal_fingerprint_is_a_duplicate_carrying_the_stored_record() -> (
    None
):
    stored = make_record("a", registered_at="2025-12-01T00:00:00Z")
    plan = resolve([make_record("a")], [stored])
    assert statuses(plan) == [D]
    assert plan.outcomes[0].record is stored  # the stored one, not the resubmitted one
    assert plan.created == []


def test_stored_reference_with_other_content_is_a_conflict_without_a_record() -> None:
    plan = resolve([make_record("a", fingerprint="changed")], [make_record("a")])
    assert statuses(plan) == [X]
    assert plan.outcomes[0].record is None
    assert plan.created == []


def test_other_issuers_reference_is_a_conflict_even_with_equal_fingerprint() -> None:
    theirs = make_record("a", issuer=ISSUER_B)
    plan = resolve([make_record("a", issuer=ISSUER_A, fingerprint=theirs.fingerprint)], [theirs])
    assert statuses(plan) == [X]
    assert plan.outcomes[0].record is None  # never another issuer's record


def test_stored_iv_of_the_same_issuer_is_reused() -> None:
    plan = resolve([make_record("new", iv="iv-old")], [make_record("old")])
    assert statuses(plan) == [IV]
    assert plan.outcomes[0].record is None
    assert plan.created == []


def test_the_same_iv_under_another_issuer_is_fine() -> None:
    plan = resolve([make_record("new", issuer=ISSUER_B, iv="iv-old")], [make_record("old")])
    assert statuses(plan) == [C]


def test_reference_rule_comes_before_iv_rule() -> None:
    stored = [make_record("a"), make_record("b")]
    # Same reference as "a" (equal content) and the IV of "b": the reference decides.
    dup = make_record("a", iv="iv-b", fingerprint="fp-a")
    conflict = make_record("a", iv="iv-b", fingerprint="other")
    assert statuses(resolve([dup], stored)) == [D]
    assert statuses(resolve([conflict], stored)) == [X]


def test_in_batch_duplicate_and_conflict() -> None:
    first = make_record("a")
    plan = resolve([first, make_record("a"), make_record("a", fingerprint="other")])
    assert statuses(plan) == [C, D, X]
    assert plan.outcomes[1].record is first
    assert plan.created == [first]


def test_in_batch_iv_reuse_is_per_issuer() -> None:
    plan = resolve(
        [
            make_record("a", iv="shared"),
            make_record("b", iv="shared"),
            make_record("c", issuer=ISSUER_B, iv="shared"),
            make_record("d", issuer=ISSUER_B, iv="shared"),
        ]
    )
    assert statuses(plan) == [C, IV, C, IV]
    assert [r.service_reference for r in plan.created] == ["a", "c"]


def test_in_batch_reference_rule_comes_before_iv_rule() -> None:
    first = make_record("a", iv="shared")
    plan = resolve([first, make_record("a", iv="shared"), make_record("a", fingerprint="x")])
    assert statuses(plan) == [C, D, X]


def test_rejected_records_reserve_nothing() -> None:
    stored = [make_record("old")]
    plan = resolve(
        [
            make_record("r1", iv="iv-old"),  # IV_REUSED: must not reserve "r1"
            make_record("r1", iv="fresh"),  # so this one is CREATED
            make_record("old", iv="iv-free", fingerprint="x"),  # CONFLICT: not reserving iv-free
            make_record("r2", iv="iv-free"),  # so this one is CREATED
        ],
        stored,
    )
    assert statuses(plan) == [IV, C, X, C]
    assert [(r.service_reference, r.iv) for r in plan.created] == [
        ("r1", "fresh"),
        ("r2", "iv-free"),
    ]


def test_mixed_batch_against_stored_records() -> None:
    stored = [make_record("s1"), make_record("s2", issuer=ISSUER_B)]
    batch = [
        make_record("n1"),  # created
        make_record("s1"),  # duplicate of stored
        make_record("s2", fingerprint="fp-s2", issuer=ISSUER_A),  # other issuer's: conflict
        make_record("n2", iv="iv-s1"),  # stored IV of the same issuer
        make_record("n3", issuer=ISSUER_B, iv="iv-s1"),  # IV of another issuer: created
        make_record("n1"),  # duplicate of this batch
        make_record("n4", iv="iv-n1"),  # IV of this batch
    ]
    plan = resolve(batch, stored)
    assert statuses(plan) == [C, D, X, IV, C, D, IV]
    assert [r.service_reference for r in plan.created] == ["n1", "n3"]


def test_inputs_are_not_modified() -> None:
    stored = {"s": make_record("s")}
    ivs = {(ISSUER_A, "iv-s")}
    batch = [make_record("a"), replace(make_record("b"), iv="iv-a")]
    resolve_additions(batch, stored.get, ivs)
    assert stored == {"s": make_record("s")}
    assert ivs == {(ISSUER_A, "iv-s")}
