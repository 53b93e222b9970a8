"""The store contract: every adapter of `service.storage.port.Store` must pass these tests.

Not collected by itself (no `Test` prefix). An adapter's test module subclasses `StoreContract`
and provides a `store` fixture yielding a fresh, empty store, e.g.::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Iterator[Store]:
            s = MyStore(tmp_path)
            yield s
            s.close()

The tests only use the port, so they pin down the semantics the domain relies on (the order of
the add_records rules, what a rejected record reserves, idempotent revocation, key demotion ...)
independently of how an adapter implements them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from service.protocol.vocabulary import KeyState, PayslipSchema, RecordStatus
from service.storage.port import (
    AddOutcome,
    AddStatus,
    Client,
    Issuer,
    KeyVersion,
    Pairing,
    Record,
    Store,
    Verifier,
)

ISSUER_A = "iss-a"
ISSUER_B = "iss-b"


def run_threads(n_threads: int, work: Callable[[int], None], *, timeout: float = 120) -> None:
    """`work(0)` ... `work(n_threads - 1)` on as many threads at once; waits for them and fails
    with what any of them raised (a thread's exception would otherwise only be printed)."""
    errors: list[BaseException] = []

    def guarded(t: int) -> None:
        try:
            work(t)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=timeout)
    assert not errors, errors


def make_record(
    ref: str,
    *,
    issuer: str = ISSUER_A,
    iv: str | None = None,
    fingerprint: str | None = None,
    key_version: str | None = "kv-1",
    **changes: Any,
) -> Record:
    """A plausible record; the IV and fingerprint default to values derived from the reference."""
    record = Record(
        service_reference=ref,
        issuer_id=issuer,
        schema=PayslipSchema.AU_V2,
        issued_at="2026-01-31T00:00:00Z",
        payslip_non_pii={
            "pay_period": {"start": "2026-01-01", "end": "2026-01-31"},
            "net_pay": {"amount": 123456, "currency": "AUD"},
            "lines": [{"code": "BASE", "amount": 100000}, {"code": "TAX", "amount": -23456}],
            "note": "Ünïcödé ✓",
        },
        iv=iv if iv is not None else f"iv-{ref}",
        tag=f"tag-{ref}",
        key_version=key_version,
        fingerprint=fingerprint if fingerprint is not None else f"fp-{ref}",
        registered_at="2026-02-01T10:00:00Z",
    )
    return replace(record, **changes) if changes else record


def statuses(outcomes: list[AddOutcome]) -> list[AddStatus]:
    return [o.status for o in outcomes]


def make_key(
    kv: str, issuer: str = ISSUER_A, number: int = 1, state: KeyState = KeyState.ACTIVE
) -> KeyVersion:
    return KeyVersion(
        key_version=kv,
        issuer_id=issuer,
        number=number,
        state=state,
        wrapped=f"wrapped-{kv}",
        created_at=f"2026-01-0{number}T00:00:00Z",
    )


def make_client(client_id: str, role: str = "issuer", owner: str = ISSUER_A) -> Client:
    return Client(
        client_id=client_id,
        role=role,
        owner_id=owner,
        name=f"client {client_id}",
        secret_hmac=f"hmac-{client_id}",
        created_at="2026-01-01T00:00:00Z",
    )


def make_pairing(pairing_id: str, expires_at: str = "2026-01-01T00:10:00Z") -> Pairing:
    return Pairing(
        pairing_id=pairing_id,
        client_id="cl-verifier",
        secret_hmac=f"hmac-{pairing_id}",
        created_at="2026-01-01T00:00:00Z",
        expires_at=expires_at,
    )


class StoreContract:
    """Behaviour every Store adapter must have. Subclasses provide the `store` fixture."""

    # --- add_records: single records ---------------------------------------------------------

    def test_empty_batch(self, store: Store) -> None:
        assert store.add_records([]) == []

    def test_created_and_roundtrip(self, store: Store) -> None:
        rec = make_record("ref-1")
        [outcome] = store.add_records([rec])
        assert outcome.status is AddStatus.CREATED
        assert outcome.record == rec
        got = store.get_record("ref-1")
        assert got == rec
        assert isinstance(got, Record)
        assert got.payslip_non_pii["lines"][1]["amount"] == -23456
        assert got.payslip_non_pii["note"] == "Ünïcödé ✓"

    def test_roundtrip_optional_fields(self, store: Store) -> None:
        rec = make_record(
            "ref-opt",
            key_version=None,
            status=RecordStatus.REVOKED,
            revoked_at="2026-03-01T00:00:00Z",
            revoke_reason=None,
        )
        store.add_records([rec])
        assert store.get_record("ref-opt") == rec

    def test_unknown_reference(self, store: Store) -> None:
        assert store.get_record("nope") is None

    def test_duplicate_same_fingerprint_returns_stored(self, store: Store) -> None:
        first = make_record("ref-1")
        store.add_records([first])
        again = make_record("ref-1", registered_at="2026-02-02T00:00:00Z", iv="iv-other")
        [outcome] = store.add_records([again])
        assert outcome.status is AddStatus.DUPLICATE
        assert outcome.record == first  # the stored one, not the resubmitted one
        assert store.get_record("ref-1") == first

    def test_conflict_different_fingerprint(self, store: Store) -> None:
        first = make_record("ref-1")
        store.add_records([first])
        [outcome] = store.add_records([make_record("ref-1", fingerprint="fp-changed")])
        assert outcome.status is AddStatus.CONFLICT
        assert outcome.record is None
        assert store.get_record("ref-1") == first

    def test_conflict_never_reveals_other_issuers_record(self, store: Store) -> None:
        store.add_records([make_record("ref-1", issuer=ISSUER_A)])
        [outcome] = store.add_records([make_record("ref-1", issuer=ISSUER_B, fingerprint="fp-b")])
        assert outcome.status is AddStatus.CONFLICT
        assert outcome.record is None

    def test_other_issuers_reference_with_equal_fingerprint_is_a_conflict(
        self, store: Store
    ) -> None:
        """A DUPLICATE carries the stored record, and AddOutcome never carries another issuer's:
        so the same content under another issuer's reference is a CONFLICT."""
        store.add_records([make_record("ref-1", issuer=ISSUER_A)])
        [outcome] = store.add_records([make_record("ref-1", issuer=ISSUER_B)])
        assert outcome.status is AddStatus.CONFLICT
        assert outcome.record is None
        outcomes = store.add_records(
            [make_record("ref-2", issuer=ISSUER_A), make_record("ref-2", issuer=ISSUER_B)]
        )
        assert [o.status for o in outcomes] == [AddStatus.CREATED, AddStatus.CONFLICT]
        assert outcomes[1].record is None

    def test_iv_reused_same_issuer(self, store: Store) -> None:
        store.add_records([make_record("ref-1", iv="iv-shared")])
        [outcome] = store.add_records([make_record("ref-2", iv="iv-shared")])
        assert outcome.status is AddStatus.IV_REUSED
        assert outcome.record is None
        assert store.get_record("ref-2") is None

    def test_same_iv_other_issuer_is_fine(self, store: Store) -> None:
        store.add_records([make_record("ref-1", issuer=ISSUER_A, iv="iv-shared")])
        [outcome] = store.add_records([make_record("ref-2", issuer=ISSUER_B, iv="iv-shared")])
        assert outcome.status is AddStatus.CREATED
        assert store.get_record("ref-2") is not None

    def test_reference_rule_comes_before_iv_rule(self, store: Store) -> None:
        first = make_record("ref-1", iv="iv-1")
        store.add_records([first, make_record("ref-2", iv="iv-2")])
        # Same reference and an IV that is taken by another record: the reference decides.
        dup = make_record("ref-1", iv="iv-2")
        conflict = make_record("ref-1", iv="iv-2", fingerprint="fp-x")
        outcomes = store.add_records([dup, conflict])
        assert statuses(outcomes) == [AddStatus.DUPLICATE, AddStatus.CONFLICT]
        assert outcomes[0].record == first

    # --- add_records: rules inside one batch ---------------------------------------------------

    def test_batch_outcomes_in_order(self, store: Store) -> None:
        store.add_records([make_record("old", iv="iv-old")])
        batch = [
            make_record("new-1"),
            make_record("old"),  # duplicate
            make_record("old", fingerprint="fp-y"),  # conflict
            make_record("new-2", iv="iv-old"),  # iv reused
            make_record("new-3"),
        ]
        outcomes = store.add_records(batch)
        assert statuses(outcomes) == [
            AddStatus.CREATED,
            AddStatus.DUPLICATE,
            AddStatus.CONFLICT,
            AddStatus.IV_REUSED,
            AddStatus.CREATED,
        ]
        assert outcomes[0].record == batch[0]
        assert outcomes[4].record == batch[4]
        assert store.get_record("new-2") is None
        assert store.get_record("new-1") == batch[0]
        assert store.get_record("new-3") == batch[4]

    def test_in_batch_duplicate(self, store: Store) -> None:
        a = make_record("ref-1")
        a_again = make_record("ref-1", iv="iv-different", registered_at="2026-02-09T00:00:00Z")
        outcomes = store.add_records([a, a_again])
        assert statuses(outcomes) == [AddStatus.CREATED, AddStatus.DUPLICATE]
        assert outcomes[1].record == a
        assert store.get_record("ref-1") == a

    def test_in_batch_conflict(self, store: Store) -> None:
        a = make_record("ref-1")
        outcomes = store.add_records([a, make_record("ref-1", fingerprint="fp-other")])
        assert statuses(outcomes) == [AddStatus.CREATED, AddStatus.CONFLICT]
        assert outcomes[1].record is None
        assert store.get_record("ref-1") == a

    def test_in_batch_iv_reuse_same_issuer(self, store: Store) -> None:
        outcomes = store.add_records(
            [make_record("ref-1", iv="iv-x"), make_record("ref-2", iv="iv-x")]
        )
        assert statuses(outcomes) == [AddStatus.CREATED, AddStatus.IV_REUSED]
        assert store.get_record("ref-2") is None

    def test_in_batch_same_iv_other_issuer(self, store: Store) -> None:
        outcomes = store.add_records(
            [
                make_record("ref-1", issuer=ISSUER_A, iv="iv-x"),
                make_record("ref-2", issuer=ISSUER_B, iv="iv-x"),
            ]
        )
        assert statuses(outcomes) == [AddStatus.CREATED, AddStatus.CREATED]

    def test_rejected_record_does_not_reserve_its_iv(self, store: Store) -> None:
        store.add_records([make_record("ref-1", iv="iv-1")])
        outcomes = store.add_records(
            [
                make_record("ref-1", iv="iv-free", fingerprint="fp-z"),  # conflict
                make_record("ref-2", iv="iv-free"),  # may take the IV the rejected one named
            ]
        )
        assert statuses(outcomes) == [AddStatus.CONFLICT, AddStatus.CREATED]

    def test_rejected_record_does_not_reserve_its_reference(self, store: Store) -> None:
        store.add_records([make_record("ref-1", iv="iv-1")])
        second = make_record("ref-2", iv="iv-fresh", fingerprint="fp-second")
        outcomes = store.add_records(
            [
                make_record("ref-2", iv="iv-1"),  # IV reused -> rejected
                second,  # same reference, different fingerprint: not a conflict
            ]
        )
        assert statuses(outcomes) == [AddStatus.IV_REUSED, AddStatus.CREATED]
        assert store.get_record("ref-2") == second

    def test_rejected_only_batch_stores_nothing(self, store: Store) -> None:
        store.add_records([make_record("ref-1", iv="iv-1")])
        before = store.counts()
        outcomes = store.add_records(
            [
                make_record("ref-1"),
                make_record("ref-1", fingerprint="f"),
                make_record("x", iv="iv-1"),
            ]
        )
        assert AddStatus.CREATED not in statuses(outcomes)
        assert store.counts() == before
        assert store.get_record("x") is None

    def test_large_batch(self, store: Store) -> None:
        batch = [make_record(f"ref-{i:05d}") for i in range(1000)]
        outcomes = store.add_records(batch)
        assert statuses(outcomes) == [AddStatus.CREATED] * 1000
        assert store.get_record("ref-00999") == batch[999]
        assert store.counts().records_by_issuer == {ISSUER_A: 1000}

    # --- pin, revoke, counts -------------------------------------------------------------------

    def test_pin_key(self, store: Store) -> None:
        store.add_records([make_record("ref-1", key_version=None)])
        store.pin_key("ref-1", "kv-7")
        got = store.get_record("ref-1")
        assert got is not None
        assert got.key_version == "kv-7"

    def test_pin_key_keeps_existing_pin(self, store: Store) -> None:
        store.add_records([make_record("ref-1", key_version="kv-1")])
        store.pin_key("ref-1", "kv-2")
        got = store.get_record("ref-1")
        assert got is not None
        assert got.key_version == "kv-1"

    def test_pin_key_unknown_reference_is_harmless(self, store: Store) -> None:
        store.pin_key("nope", "kv-1")
        assert store.get_record("nope") is None

    def test_revoke(self, store: Store) -> None:
        store.add_records([make_record("ref-1")])
        revoked = store.revoke_record("ref-1", ISSUER_A, "wrong amount", "2026-03-01T00:00:00Z")
        assert revoked is not None
        assert revoked.status == RecordStatus.REVOKED
        assert revoked.revoked_at == "2026-03-01T00:00:00Z"
        assert revoked.revoke_reason == "wrong amount"
        assert store.get_record("ref-1") == revoked
        assert replace(
            revoked, status=RecordStatus.ACTIVE, revoked_at=None, revoke_reason=None
        ) == (make_record("ref-1"))

    def test_revoke_without_reason(self, store: Store) -> None:
        store.add_records([make_record("ref-1")])
        revoked = store.revoke_record("ref-1", ISSUER_A, None, "2026-03-01T00:00:00Z")
        assert revoked is not None
        assert revoked.status == RecordStatus.REVOKED
        assert revoked.revoke_reason is None

    def test_revoke_repeat_keeps_first(self, store: Store) -> None:
        store.add_records([make_record("ref-1")])
        first = store.revoke_record("ref-1", ISSUER_A, "first", "2026-03-01T00:00:00Z")
        again = store.revoke_record("ref-1", ISSUER_A, "second", "2026-04-01T00:00:00Z")
        assert first is not None
        assert again == first
        assert store.get_record("ref-1") == first

    def test_revoke_other_issuer_or_unknown(self, store: Store) -> None:
        rec = make_record("ref-1", issuer=ISSUER_A)
        store.add_records([rec])
        assert store.revoke_record("ref-1", ISSUER_B, "x", "2026-03-01T00:00:00Z") is None
        assert store.revoke_record("nope", ISSUER_A, "x", "2026-03-01T00:00:00Z") is None
        assert store.get_record("ref-1") == rec

    def test_counts(self, store: Store) -> None:
        assert store.counts().records_by_issuer == {}
        store.add_records(
            [
                make_record("a1", issuer=ISSUER_A),
                make_record("a2", issuer=ISSUER_A),
                make_record("a3", issuer=ISSUER_A),
                make_record("b1", issuer=ISSUER_B),
            ]
        )
        store.revoke_record("a1", ISSUER_A, None, "2026-03-01T00:00:00Z")
        store.revoke_record("a1", ISSUER_A, None, "2026-03-02T00:00:00Z")  # repeat: no change
        counts = store.counts()
        # Revoked records still count as records; issuers without revocations may be absent or 0.
        assert counts.records_by_issuer == {ISSUER_A: 3, ISSUER_B: 1}
        assert {k: v for k, v in counts.revoked_by_issuer.items() if v} == {ISSUER_A: 1}

    def test_counts_of_records_a_key_would_take_with_it(self, store: Store) -> None:
        """Issue 35: retiring a key makes its payslips unverifiable, and Admin says how many
        first: records not revoked, per pinned key; unpinned ones per issuer until pinned."""
        store.add_records(
            [
                make_record("a1", issuer=ISSUER_A, key_version="kv-1"),
                make_record("a2", issuer=ISSUER_A, key_version="kv-1"),
                make_record("a3", issuer=ISSUER_A, key_version="kv-2"),
                make_record("a4", issuer=ISSUER_A, key_version=None),
                make_record("b1", issuer=ISSUER_B, key_version=None),
            ]
        )
        store.revoke_record("a2", ISSUER_A, None, "2026-03-01T00:00:00Z")
        counts = store.counts()
        assert counts.active_by_key == {"kv-1": 1, "kv-2": 1}
        assert counts.unpinned_by_issuer == {ISSUER_A: 1, ISSUER_B: 1}
        store.pin_key("a4", "kv-2")  # a verification noted its key
        counts = store.counts()
        assert counts.active_by_key == {"kv-1": 1, "kv-2": 2}
        assert counts.unpinned_by_issuer == {ISSUER_B: 1}
        store.revoke_record("a1", ISSUER_A, None, "2026-03-02T00:00:00Z")
        assert store.counts().active_by_key == {"kv-2": 2}

    # --- issuers, verifiers, clients -------------------------------------------------------

    def test_issuers(self, store: Store) -> None:
        assert store.list_issuers() == []
        a = Issuer(ISSUER_A, "Acme Pty Ltd", "2026-01-01T00:00:00Z")
        b = Issuer(ISSUER_B, "Beta Ltd", "2026-01-02T00:00:00Z")
        store.add_issuer(a)
        store.add_issuer(b)
        assert store.get_issuer(ISSUER_A) == a
        assert store.get_issuer("nope") is None
        assert sorted(store.list_issuers(), key=lambda i: i.issuer_id) == [a, b]

    def test_verifiers(self, store: Store) -> None:
        assert store.list_verifiers() == []
        v1 = Verifier("ver-1", "Bank", "2026-01-01T00:00:00Z")
        v2 = Verifier("ver-2", "Landlord", "2026-01-02T00:00:00Z")
        store.add_verifier(v1)
        store.add_verifier(v2)
        assert sorted(store.list_verifiers(), key=lambda v: v.verifier_id) == [v1, v2]

    def test_clients(self, store: Store) -> None:
        assert store.list_clients() == []
        c1 = make_client("cl-1")
        c2 = make_client("cl-2", role="verifier", owner="ver-1")
        c3 = replace(make_client("cl-3", role="admin", owner=""), disabled=True)
        for c in (c1, c2, c3):
            store.add_client(c)
        assert store.get_client("cl-1") == c1
        assert store.get_client("cl-1").disabled is False  # type: ignore[union-attr]
        assert store.get_client("cl-3") == c3
        assert store.get_client("nope") is None
        assert sorted(store.list_clients(), key=lambda c: c.client_id) == [c1, c2, c3]

    def test_a_phone_client_keeps_its_expiry_and_last_use(self, store: Store) -> None:
        phone = replace(
            make_client("cl-phone", role="verifier", owner="ver-1"),
            expires_at="2027-02-21T09:00:00.000Z",
        )
        store.add_client(phone)
        store.add_client(make_client("cl-desk", role="verifier", owner="ver-1"))
        assert store.get_client("cl-phone") == phone
        assert phone.last_used_at is None
        store.touch_client("cl-phone", "2026-11-29T10:00:00.000Z")
        store.touch_client("nope", "2026-11-29T10:00:00.000Z")  # harmless
        used = store.get_client("cl-phone")
        assert used == replace(phone, last_used_at="2026-11-29T10:00:00.000Z")
        assert store.get_client("cl-desk").last_used_at is None  # type: ignore[union-attr]
        assert used in store.list_clients()
        assert used is not None and used.usable("2027-02-21T08:59:59.999Z")
        assert not used.usable("2027-02-21T09:00:00.000Z")

    def test_a_pairing_keeps_its_client_days(self, store: Store) -> None:
        pairing = replace(make_pairing("p-days"), client_days=30)
        store.add_pairing(pairing)
        assert store.take_pairing("p-days", "hmac-p-days") == pairing

    # --- phone pairings -------------------------------------------------------------------

    def test_pairing_is_taken_once_and_only_with_its_digest(self, store: Store) -> None:
        pairing = make_pairing("p-1")
        store.add_pairing(pairing)
        assert store.take_pairing("p-1", "hmac-wrong") is None
        assert store.take_pairing("nope", "hmac-p-1") is None
        assert store.take_pairing("p-1", "hmac-p-1") == pairing
        assert store.take_pairing("p-1", "hmac-p-1") is None

    def test_pairing_taken_by_exactly_one_of_many_threads(self, store: Store) -> None:
        store.add_pairing(make_pairing("p-race"))
        results: list[Pairing | None] = []
        lock = threading.Lock()
        start = threading.Barrier(8)

        def take() -> None:
            start.wait()
            got = store.take_pairing("p-race", "hmac-p-race")
            with lock:
                results.append(got)

        threads = [threading.Thread(target=take) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(r is not None for r in results) == 1

    def test_purge_pairings_removes_only_expired(self, store: Store) -> None:
        old = make_pairing("p-old", expires_at="2026-01-01T00:05:00Z")
        fresh = make_pairing("p-new", expires_at="2026-01-01T00:15:00Z")
        store.add_pairing(old)
        store.add_pairing(fresh)
        assert store.purge_pairings("2026-01-01T00:10:00Z") == 1
        assert store.take_pairing("p-old", "hmac-p-old") is None
        assert store.take_pairing("p-new", "hmac-p-new") == fresh

    def test_disable_and_enable_client(self, store: Store) -> None:
        store.add_client(make_client("cl-1"))
        assert store.set_client_disabled("cl-1", True) is True
        assert store.get_client("cl-1") == replace(make_client("cl-1"), disabled=True)
        assert [c.disabled for c in store.list_clients()] == [True]
        assert store.set_client_disabled("cl-1", False) is True
        assert store.get_client("cl-1") == make_client("cl-1")
        assert store.set_client_disabled("nope", True) is False
        assert store.get_client("nope") is None

    # --- keys ------------------------------------------------------------------------------

    def test_keys(self, store: Store) -> None:
        assert store.list_keys() == []
        k1 = make_key("kv-a1", ISSUER_A, 1)
        k2 = make_key("kv-b1", ISSUER_B, 1)
        store.add_key(k1, demote_active=True)
        store.add_key(k2, demote_active=False)
        assert store.get_key("kv-a1") == k1
        assert store.get_key("nope") is None
        assert store.list_keys(ISSUER_A) == [k1]
        assert store.list_keys("nobody") == []
        assert sorted(store.list_keys(), key=lambda k: k.key_version) == [k1, k2]

    def test_add_key_demotes_previous_active(self, store: Store) -> None:
        a1 = make_key("kv-a1", ISSUER_A, 1)
        b1 = make_key("kv-b1", ISSUER_B, 1)
        store.add_key(a1, demote_active=True)
        store.add_key(b1, demote_active=True)
        a2 = make_key("kv-a2", ISSUER_A, 2)
        store.add_key(a2, demote_active=True)
        assert store.get_key("kv-a1") == replace(a1, state=KeyState.LIVE)
        assert store.get_key("kv-a2") == a2
        assert store.get_key("kv-b1") == b1  # other issuers untouched
        by_number = sorted(store.list_keys(ISSUER_A), key=lambda k: k.number)
        assert [k.state for k in by_number] == [KeyState.LIVE, KeyState.ACTIVE]

    def test_add_key_without_demotion(self, store: Store) -> None:
        a1 = make_key("kv-a1", ISSUER_A, 1)
        store.add_key(a1, demote_active=False)
        store.add_key(make_key("kv-a2", ISSUER_A, 2, state=KeyState.LIVE), demote_active=False)
        assert store.get_key("kv-a1") == a1

    def test_retire_key_destroys_material(self, store: Store) -> None:
        a1 = make_key("kv-a1", ISSUER_A, 1)
        store.add_key(a1, demote_active=True)
        store.add_key(make_key("kv-a2", ISSUER_A, 2), demote_active=True)
        retired = store.retire_key("kv-a1", "2026-05-01T00:00:00Z")
        expected = replace(
            a1, state=KeyState.RETIRED, wrapped="", retired_at="2026-05-01T00:00:00Z"
        )
        assert retired == expected
        assert store.get_key("kv-a1") == expected
        assert store.get_key("kv-a2") == make_key("kv-a2", ISSUER_A, 2)
        assert store.retire_key("nope", "2026-05-01T00:00:00Z") is None

    def test_statuses_and_states_come_back_as_their_enums(self, store: Store) -> None:
        """Every read gives the vocabulary's members, not bare words, whichever way the record
        or key was last changed (added, revoked, demoted, retired), so code that holds a
        `Record` or `KeyVersion` can trust its types."""
        store.add_records([make_record("ref-1"), make_record("ref-2")])
        store.revoke_record("ref-1", ISSUER_A, None, "2026-03-01T00:00:00Z")
        for number in (1, 2, 3):
            store.add_key(make_key(f"kv-a{number}", number=number), demote_active=True)
        store.retire_key("kv-a1", "2026-03-01T00:00:00Z")

        def typed(word: object) -> tuple[type, object]:
            return type(word), word

        records = [store.get_record("ref-1"), store.get_record("ref-2")]
        records.append(store.read_for_verification("ref-1").record)
        assert [typed(r.status) for r in records if r is not None] == [
            (RecordStatus, RecordStatus.REVOKED),
            (RecordStatus, RecordStatus.ACTIVE),
            (RecordStatus, RecordStatus.REVOKED),
        ]
        keys = store.list_keys(ISSUER_A)
        assert [typed(k.state) for k in keys] == [
            (KeyState, KeyState.RETIRED),
            (KeyState, KeyState.LIVE),
            (KeyState, KeyState.ACTIVE),
        ]
        assert [typed(k.state) for k in store.read_for_verification("ref-1").keys] == [
            typed(k.state) for k in keys
        ]
        key = store.get_key("kv-a2")
        assert key is not None and typed(key.state) == (KeyState, KeyState.LIVE)

    # --- settings, lifecycle ---------------------------------------------------------------

    def test_read_for_verification(self, store: Store) -> None:
        """The record with its issuer, every key of that issuer (retired ones included, in
        insertion order), the key it is pinned to even if another issuer's, and the client."""
        store.add_issuer(Issuer(ISSUER_A, "Acme Payroll", "2026-01-01T00:00:00Z"))
        a1, a2 = make_key("kv-a1", number=1, state=KeyState.LIVE), make_key("kv-a2", number=2)
        b1 = make_key("kv-b1", issuer=ISSUER_B)
        for key in (a1, b1, a2):
            store.add_key(key, demote_active=False)
        store.retire_key("kv-a1", "2026-03-01T00:00:00Z")
        store.add_client(make_client("cli-v", role="verifier", owner="ver-1"))
        store.add_records([make_record("ref-1", key_version=None)])
        store.add_records([make_record("ref-2", key_version="kv-b1")])
        read = store.read_for_verification("ref-1", "cli-v")
        assert read.record == make_record("ref-1", key_version=None)
        assert read.issuer == Issuer(ISSUER_A, "Acme Payroll", "2026-01-01T00:00:00Z")
        assert read.keys == (store.get_key("kv-a1"), a2)
        assert read.keys[0].state == KeyState.RETIRED and read.keys[0].wrapped == ""
        assert read.client == make_client("cli-v", role="verifier", owner="ver-1")
        assert store.read_for_verification("ref-2").keys == (store.get_key("kv-a1"), b1, a2)
        assert store.read_for_verification("ref-2").client is None

    def test_read_for_verification_without_record_or_client(self, store: Store) -> None:
        store.add_client(make_client("cli-v", role="verifier", owner="ver-1"))
        store.add_records([make_record("ref-1")])  # its issuer and keys are not stored
        read = store.read_for_verification("nope", "cli-v")
        assert read.record is None and read.issuer is None and read.keys == ()
        assert read.client == make_client("cli-v", role="verifier", owner="ver-1")
        read = store.read_for_verification("ref-1", "cli-unknown")
        assert read.record == make_record("ref-1")
        assert read.issuer is None and read.keys == () and read.client is None

    def test_read_for_verification_sees_every_change_at_once(self, store: Store) -> None:
        """Nothing is cached: a retirement or a disabled client shows in the very next read."""
        store.add_key(make_key("kv-1"), demote_active=False)
        store.add_client(make_client("cli-v", role="verifier", owner="ver-1"))
        store.add_records([make_record("ref-1")])
        assert store.read_for_verification("ref-1", "cli-v").keys[0].state == KeyState.ACTIVE
        store.retire_key("kv-1", "2026-03-01T00:00:00Z")
        store.set_client_disabled("cli-v", True)
        read = store.read_for_verification("ref-1", "cli-v")
        assert read.keys[0].state == KeyState.RETIRED
        assert read.client is not None and read.client.disabled
        store.pin_key("ref-2", "kv-1")  # harmless on an unknown reference
        assert store.read_for_verification("ref-2", "cli-v").record is None

    def test_settings(self, store: Store) -> None:
        assert store.get_setting("signing_key") is None
        store.set_setting("signing_key", "v1")
        store.set_setting("hmac_key", "h1")
        assert store.get_setting("signing_key") == "v1"
        store.set_setting("signing_key", "v2")
        assert store.get_setting("signing_key") == "v2"
        assert store.get_setting("hmac_key") == "h1"
        store.set_setting("empty", "")
        assert store.get_setting("empty") == ""

    def test_replace_setting_is_compare_and_set(self, store: Store) -> None:
        assert store.replace_setting("cas", "x", "y") is False  # not there: nothing written
        assert store.get_setting("cas") is None
        assert store.replace_setting("cas", None, "v1") is True
        assert store.replace_setting("cas", None, "other") is False  # there now
        assert store.replace_setting("cas", "v0", "other") is False
        assert store.get_setting("cas") == "v1"
        assert store.replace_setting("cas", "v1", "v2") is True
        assert store.get_setting("cas") == "v2"

    def test_replace_setting_loses_no_change_among_threads(self, store: Store) -> None:
        """Eight threads each add their marks by read, change, compare-and-set: every mark is
        there at the end (a plain read-then-set would lose some)."""

        def work(t: int) -> None:
            for i in range(10):
                while True:
                    before = store.get_setting("marks")
                    after = f"{before or ''},{t}-{i}"
                    if store.replace_setting("marks", before, after):
                        break

        run_threads(8, work)
        marks = (store.get_setting("marks") or "").strip(",").split(",")
        assert sorted(marks) == sorted(f"{t}-{i}" for t in range(8) for i in range(10))

    def test_the_first_receipt_key_is_made_once_among_threads(self, store: Store) -> None:
        from service.domain.clock import SystemClock
        from service.domain.receipt_keys import ReceiptKeys

        kids: list[str] = []

        def work(t: int) -> None:
            kids.append(ReceiptKeys(store, b"\x11" * 32, SystemClock()).signer()[0])

        run_threads(8, work)
        assert len(set(kids)) == 1 and len(kids) == 8
        published = ReceiptKeys(store, b"\x11" * 32, SystemClock()).published()
        assert [k.kid for k in published] == kids[:1]

    def test_receipt_keys_rotate_and_revoke_without_losing_either(self, store: Store) -> None:
        """PROTOCOL §11 on this store: receipt keys apart from token keys; rotations and
        revocations made at once by several writers (processes sharing the store) all land; the
        keys stay wrapped under the master key, so a writer without it cannot add one."""
        from service.domain.clock import SystemClock
        from service.domain.errors import MasterKeyMismatch
        from service.domain.receipt_keys import RECEIPT_KEYS_SETTING, ReceiptKeys
        from service.domain.signing_keys import SigningKeys
        from service.protocol.crypto import wrap_key
        from service.protocol.encoding import b64url_encode

        master = b"\x11" * 32
        first_kid, _ = ReceiptKeys(store, master, SystemClock()).signer()
        assert first_kid.startswith("receipt-")
        SigningKeys(store, master, SystemClock(), 900).rotate(drop_previous=True)
        assert ReceiptKeys(store, master, SystemClock()).signer()[0] == first_kid
        signed: list[str] = []
        made: list[str] = []
        revoked_kids: list[str] = []

        def work(t: int) -> None:
            keys = ReceiptKeys(store, master, SystemClock())  # a process of its own
            for _ in range(3):
                kid, _ = keys.signer()
                signed.append(kid)
                if t % 2:
                    revoked_kids.append(keys.revoke(kid)["kid"])
                else:
                    made.append(keys.rotate()["kid"])

        run_threads(6, work)
        another = ReceiptKeys(store, master, SystemClock())
        states = {k.kid: str(k.state) for k in another.published()}
        assert set(signed) | set(made) <= set(states)  # every key stays published
        assert len(set(made)) == 9  # every rotation made its own key
        assert {states[kid] for kid in revoked_kids} == {"revoked"}  # no revocation lost
        assert list(states.values()).count("current") == 1
        revoked = [k for k in another.published() if k.revoked_at is not None]
        assert revoked and all(k.jwk()["revoked_at"] == k.revoked_at for k in revoked)
        wrapped = store.get_setting(RECEIPT_KEYS_SETTING) or ""
        assert wrapped and first_kid not in wrapped
        forged = b'{"keys":[]}'
        store.set_setting(
            RECEIPT_KEYS_SETTING,
            b64url_encode(wrap_key(forged, b"\x22" * 32, RECEIPT_KEYS_SETTING)),
        )
        with pytest.raises(MasterKeyMismatch):
            ReceiptKeys(store, master, SystemClock()).published()

    def test_ping(self, store: Store) -> None:
        assert store.ping() is True

    # --- concurrency -----------------------------------------------------------------------

    def test_threads_race_for_references_and_ivs(self, store: Store) -> None:
        """8 threads register colliding references (different fingerprints) and colliding IVs
        (unique references); exactly one thread wins each reference and each (issuer, IV)."""
        n_threads, n_items = 8, 40
        barrier = threading.Barrier(n_threads)
        results: dict[int, list[tuple[Record, AddOutcome]]] = {}

        def work(t: int) -> None:
            mine: list[tuple[Record, AddOutcome]] = []
            same_ref = [
                make_record(f"ref-{i}", iv=f"iv-t{t}-{i}", fingerprint=f"fp-t{t}-{i}")
                for i in range(n_items)
            ]
            same_iv = [
                make_record(f"ref-t{t}-{i}", iv=f"iv-shared-{i}", issuer=ISSUER_B)
                for i in range(n_items)
            ]
            barrier.wait()
            for i in range(0, n_items, 4):  # mix single inserts and small batches
                chunk = [same_ref[i], same_iv[i]]
                mine += zip(chunk, store.add_records(chunk), strict=True)
                for j in range(i + 1, i + 4):
                    mine += zip([same_ref[j]], store.add_records([same_ref[j]]), strict=True)
                    mine += zip([same_iv[j]], store.add_records([same_iv[j]]), strict=True)
            results[t] = mine

        run_threads(n_threads, work)
        assert len(results) == n_threads

        winners_by_ref: Counter[str] = Counter()
        winners_by_iv: Counter[tuple[str, str]] = Counter()
        for mine in results.values():
            for rec, outcome in mine:
                if outcome.status is AddStatus.CREATED:
                    winners_by_ref[rec.service_reference] += 1
                    winners_by_iv[(rec.issuer_id, rec.iv)] += 1
                    assert store.get_record(rec.service_reference) == rec
                elif rec.issuer_id == ISSUER_A:
                    assert outcome.status is AddStatus.CONFLICT
                else:
                    assert outcome.status is AddStatus.IV_REUSED
                    assert store.get_record(rec.service_reference) is None
        assert all(n == 1 for n in winners_by_ref.values())
        assert all(n == 1 for n in winners_by_iv.values())
        assert {f"ref-{i}" for i in range(n_items)} <= set(winners_by_ref)
        assert {(ISSUER_B, f"iv-shared-{i}") for i in range(n_items)} <= set(winners_by_iv)
        counts = store.counts()
        assert counts.records_by_issuer == {ISSUER_A: n_items, ISSUER_B: n_items}

    def test_threads_mixed_operations(self, store: Store) -> None:
        """Concurrent writers of every kind lose nothing."""
        n_threads = 8
        barrier = threading.Barrier(n_threads)

        def work(t: int) -> None:
            barrier.wait()
            for i in range(15):
                store.add_client(make_client(f"cl-{t}-{i}"))
                store.set_setting(f"s-{t}-{i}", str(i))
                store.add_records([make_record(f"r-{t}-{i}")])
                store.revoke_record(f"r-{t}-{i}", ISSUER_A, None, "2026-03-01T00:00:00Z")

        run_threads(n_threads, work)
        assert len(store.list_clients()) == n_threads * 15
        assert store.get_setting("s-7-14") == "14"
        counts = store.counts()
        assert counts.records_by_issuer == {ISSUER_A: n_threads * 15}
        assert counts.revoked_by_issuer == {ISSUER_A: n_threads * 15}
