"""The wire's words as enums (`service.protocol.vocabulary`): each enum holds exactly the words
the OpenAPI document lists and the service sends, so code that names a word through its type
says what clients read."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from app.verify.flow import Outcome
from app.verify.verdicts import EXIT_STATUS, HEADLINES, MEANINGS
from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    make_config,
    offline_config,
    open_store,
)
from service.domain.records import new_record
from service.http.openapi import build_openapi
from service.protocol import schemas
from service.protocol.crypto import new_key
from service.protocol.encoding import b64url_encode
from service.protocol.errors import ErrorCode
from service.protocol.vocabulary import (
    BatchItemStatus,
    KeyState,
    PayslipSchema,
    RecordStatus,
    Verdict,
)
from testbed.factories import sealed_record


@pytest.fixture(scope="module")
def components() -> dict[str, Any]:
    document = build_openapi(make_config(b"k" * 32, "https://payslip.example"))
    # Through JSON text, as a client gets it: enum members must come out as their words.
    parsed: dict[str, Any] = json.loads(json.dumps(document))["components"]["schemas"]
    return parsed


def _values(enum: type[Any]) -> list[str]:
    return [member.value for member in enum]


def test_batch_item_status_is_the_documented_batch_result_status(
    components: dict[str, Any],
) -> None:
    status = components["BatchResultItem"]["properties"]["status"]
    assert status["enum"] == _values(BatchItemStatus) == ["created", "duplicate", "error"]


def test_record_status_is_the_documented_payslip_status(components: dict[str, Any]) -> None:
    assert components["PayslipView"]["properties"]["status"]["enum"] == _values(RecordStatus)
    revoked = components["RevocationResult"]["properties"]["status"]
    assert revoked["const"] == RecordStatus.REVOKED


def test_key_retired_answer_names_the_retired_state(components: dict[str, Any]) -> None:
    assert components["KeyRetired"]["properties"]["status"]["const"] == KeyState.RETIRED


def test_payslip_schemas_are_the_documented_schema_ids_and_shapes(
    components: dict[str, Any],
) -> None:
    documented = components["RegisterNonPiiRequest"]["properties"]["schema"]["enum"]
    assert documented == _values(PayslipSchema)
    assert components["BatchRecord"]["properties"]["schema"]["enum"] == _values(PayslipSchema)
    # Each id selects its own payslip shape, in the request and in a verification's payslip.
    for model in ("RegisterNonPiiRequest", "PayslipView"):
        selected = [
            rule["if"]["properties"]["schema"]["const"] for rule in components[model]["allOf"]
        ]
        assert selected == _values(PayslipSchema)
    assert typing.get_args(schemas.SchemaId) == tuple(PayslipSchema)
    assert list(schemas.PAYSLIP_SCHEMAS) == list(PayslipSchema)


def test_an_unknown_schema_is_refused_with_the_ids_as_plain_words() -> None:
    """The members' repr is their word, so the message reads as it did with bare strings."""
    with pytest.raises(schemas.SchemaValidationError) as refused:
        schemas.validate_register_non_pii(
            {
                "schema": "au.payslip.v9",
                "issued_at": "2026-11-13T09:00:00Z",
                "payslip_non_pii": {},
                "encryption_metadata": {"iv": "A" * 16, "tag": "A" * 22},
            }
        )
    messages = {e.path: e.message for e in refused.value.field_errors}
    assert messages["schema"] == (
        "expected one of 'au.payslip.v1', 'nz.payslip.v1', 'au.payslip.v2' or 'nz.payslip.v2'"
    )


@pytest.mark.parametrize("schema", list(PayslipSchema))
def test_every_schema_registers_and_is_stored_as_its_member(schema: PayslipSchema) -> None:
    """Validation hands on the member, and what is stored and fingerprinted from it is the
    plain word the issuer sent."""
    body = sealed_record(b64url_encode(new_key()), schema.value).body
    request = schemas.validate_register_non_pii(json.loads(json.dumps(body)))
    assert request.schema_id is schema
    record = new_record(request, "A" * 22, "issuer", "2026-11-13T09:00:01Z")
    assert json.loads(json.dumps(record.schema)) == schema.value
    assert record.status is RecordStatus.ACTIVE


def test_the_key_states_the_overview_sends_are_exactly_key_state(tmp_path: Path) -> None:
    """Three rotations and a retirement put every state on the wire, each as its word."""
    init_instance(tmp_path)
    store = open_store(tmp_path)
    try:
        admin = domain_for(store, offline_config(load_master_key(tmp_path))).admin
        issuer = admin.create_issuer("Vocabulary Payroll")
        admin.rotate_key(issuer.issuer_id)
        admin.rotate_key(issuer.issuer_id)
        retired = admin.retire_key(issuer.key_version).wire()
        sent = json.loads(admin.overview().wire_json())
    finally:
        store.close()
    assert retired == {"key_version": issuer.key_version, "status": "retired"}
    states = [k["state"] for k in sent["keys"] if k["issuer_id"] == issuer.issuer_id]
    assert states == ["retired", "live", "active"]
    assert sorted(states) == sorted(_values(KeyState))


def test_every_verdict_is_a_member_and_travels_as_its_word() -> None:
    """Each error code's verdict and each desk outcome's is a `Verdict` member, and a member
    serialised anywhere (JSON, a pydantic dump, an f-string, a repr in a message) is exactly the
    word it replaced."""
    assert _values(Verdict) == ["verified", "not_verified", "cannot_verify"]
    assert all(isinstance(code.verdict, Verdict) for code in ErrorCode)
    assert all(isinstance(meaning.verdict, Verdict) for meaning in MEANINGS.values())
    for verdict in Verdict:
        word = verdict.value
        assert json.dumps({verdict: verdict}) == f'{{"{word}": "{word}"}}'
        assert TypeAdapter(Verdict).dump_json(verdict) == f'"{word}"'.encode()
        assert f"{verdict}" == str(verdict) == "%s" % verdict == word  # noqa: UP031 (as logging)
        assert repr(verdict) == repr(word)


def test_the_desk_table_has_an_entry_for_every_verdict() -> None:
    """`app.verify.verdicts` keys its desk words by the enum, and a verdict added to the protocol
    without its headline and exit status fails here; the words themselves are unchanged."""
    assert set(HEADLINES) == set(EXIT_STATUS) == set(Verdict)
    assert {meaning.verdict for meaning in MEANINGS.values()} == set(Verdict)
    assert HEADLINES == {
        "verified": "VERIFIED",
        "not_verified": "NOT VERIFIED",
        "cannot_verify": "CANNOT VERIFY",
    }
    assert EXIT_STATUS == {"verified": 0, "not_verified": 1, "cannot_verify": 2}


@pytest.mark.parametrize("reason", sorted(MEANINGS))
def test_app_verify_json_carries_the_headline_as_plain_text(reason: str) -> None:
    """`python -m app verify --json` prints the headline of the outcome's verdict, a plain
    string, and exits with its status."""
    outcome = Outcome(reason)
    printed = json.loads(json.dumps(outcome.as_json()))
    assert printed["verdict"] == HEADLINES[MEANINGS[reason].verdict]
    assert type(outcome.as_json()["verdict"]) is str
    assert outcome.exit_status == EXIT_STATUS[MEANINGS[reason].verdict]
