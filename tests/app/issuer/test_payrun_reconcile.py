"""Resuming a pay run whose rows were edited in between: every branch of the three-way
reconciliation (`app.issuer.run.reconcile`) seen from results.csv and the service's record count,
plus the reconciliation rules on their own (a real journal key and real sealing)."""

from __future__ import annotations

import os
from pathlib import Path

from app.issuer import IssuerKey
from app.issuer.journal import RunJournal
from app.issuer.run.journal_replay import fingerprint
from app.issuer.run.reconcile import reconcile
from app.issuer.run.results import RecordResult
from app.issuer.run.rows import PayrunRow
from app.issuer.run.source import read_text_rows
from tests.app.issuer.test_payrun import (
    HEADER,
    good_row,
    interrupted_run,
    record_count,
    results,
    run,
    write_csv,
)
from tests.service.conftest import (  # noqa: F401 - the fixtures
    LiveService,
    live,
    tinydb_server,
)


def test_edited_rows_are_refused_whether_acknowledged_or_only_sent(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Batch 1 (rows 1-2) is registered and acknowledged; batch 2's (rows 3-4) answer is lost.
    source, out, _ = interrupted_run(live, tmp_path, 4, lose=2, batch_size=2)
    assert record_count(live) == 4

    edited = [good_row(i).replace(f"{1000 + i}.00,100.00", "1234.00,100.00") for i in (1, 3)]
    write_csv(source, [edited[0], good_row(2), edited[1], good_row(4)])
    summary = run(live, source, out, batch_size=2)

    rows = results(out)
    assert [r["status"] for r in rows] == ["rejected", "created", "rejected", "duplicate"]
    assert "the registered version is kept" in rows[0]["reason"]
    assert "changed after an interrupted run sent it" in rows[2]["reason"]
    # The refused rows still name the record the service holds, so it can be found or revoked.
    assert all(r["service_reference"] for r in rows)
    assert rows[1]["badge"] and rows[3]["badge"] and not rows[0]["badge"]
    assert record_count(live) == 4  # nothing registered twice, nothing replaced
    assert summary.resumed and not summary.clean


def _row(text: str) -> PayrunRow:
    (row,) = read_text_rows(HEADER + "\n" + text + "\n")
    assert isinstance(row, PayrunRow)
    return row


def test_reconcile_seals_new_rows_afresh_and_resends_pending_ones_unchanged(
    tmp_path: Path,
) -> None:
    journal = RunJournal.open(tmp_path)
    try:
        key = IssuerKey(os.urandom(32), "kv1")
        row = _row(good_row(7))
        mark = fingerprint(journal, row)
        assert mark == fingerprint(journal, _row(good_row(7)))
        assert mark != fingerprint(journal, _row(good_row(7, award="Retail")))

        first = reconcile(row, mark, {}, {}, key=key, issued_at="2026-11-13T00:00:00Z")
        again = reconcile(row, mark, {}, {}, key=key, issued_at="2026-11-13T00:00:00Z")
        assert first.kind == again.kind == "new" and first.entry and again.entry
        assert first.entry.reference != again.entry.reference  # a new reference and IV each time
        assert first.entry.ciphertext != again.entry.ciphertext

        pending = {row.number: first.entry}
        resent = reconcile(row, mark, {}, pending, key=key, issued_at="later")
        assert resent.kind == "resend" and resent.entry is first.entry and not pending

        done = RecordResult(row.number, row.external_id, "created", first.entry.reference)
        acked = {row.number: (done, mark)}
        kept = reconcile(row, mark, acked, {}, key=key, issued_at="later")
        assert kept.kind == "done" and kept.result is done and not acked
    finally:
        journal.close()
