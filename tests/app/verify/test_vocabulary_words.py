"""The app's words for the service's vocabulary (`service.protocol.vocabulary`): every member has
its words wherever the app shows or writes one, so a word added to the protocol cannot reach a
screen or results.csv untranslated."""

from __future__ import annotations

import pytest

from app.applicant.report import SET_WORDS
from app.issuer.pii import PII_FORMAT_FOR_SCHEMA, format_for_schema
from app.issuer.row_status import RowStatus
from app.ui.admin.overview import KEY_STATES
from app.ui.issue.payrun_columns import SCHEMAS
from app.ui.issue.results import READY, ResultsModel
from app.ui.issue.schema_choice import CURRENT, OLDER, SCHEMA_LABELS
from app.ui.verify.verdict_sound import verdict_wav
from app.ui.widgets.style import VERDICT_TONES
from service.protocol.vocabulary import BatchItemStatus, KeyState, PayslipSchema, Verdict


def test_every_key_state_has_its_office_words() -> None:
    assert set(KEY_STATES) == set(KeyState)
    assert KEY_STATES["live"] == "Previous (still verifies old payslips)"  # read from the wire


def test_every_schema_is_offered_by_country_and_has_its_pii_format() -> None:
    assert set(SCHEMA_LABELS) == set(CURRENT) | set(OLDER) == set(PayslipSchema)
    assert set(PII_FORMAT_FOR_SCHEMA) == set(PayslipSchema)
    assert format_for_schema("nz.payslip.v1") == "NZ2"  # the plain word a file or form holds


@pytest.mark.parametrize("answered", list(BatchItemStatus))
def test_a_rows_status_is_the_services_word_for_its_record(answered: BatchItemStatus) -> None:
    status = RowStatus.of_answer(str(answered))
    assert status.value == answered.value
    assert status.registered is (answered is not BatchItemStatus.ERROR)


def test_a_word_from_a_newer_service_counts_the_row_as_refused() -> None:
    assert RowStatus.of_answer("queued") is RowStatus.ERROR
    assert not RowStatus.REJECTED.registered


def test_every_verdict_has_its_set_words_tone_and_sound() -> None:
    assert set(SET_WORDS) == set(VERDICT_TONES) == set(Verdict)
    assert VERDICT_TONES[Verdict.CANNOT_VERIFY] == "error"
    assert len({verdict_wav(v) for v in Verdict}) == len(Verdict)


def test_every_row_status_has_its_results_label_and_every_schema_its_export_choice() -> None:
    assert set(ResultsModel.LABELS) == set(RowStatus) | {READY}
    assert {schema for _, schema in SCHEMAS} == set(PayslipSchema)
