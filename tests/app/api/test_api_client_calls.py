"""ApiClient operations against the real service behind a fault injector
(tests/app/api/faults.py): idempotent registration, revocation, admin calls, the typed errors
the service really sends, and no secret or personal data in errors and logs.
"""

from __future__ import annotations

import json
import logging
import pickle
import traceback
from collections.abc import Callable

import pytest

from app.api import (
    ApiClient,
    ApiError,
    Conflict,
    DecryptionFailed,
    EndpointNotFound,
    Forbidden,
    InternalError,
    InvalidResponse,
    IvReused,
    KeyVersionUnavailable,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    ServiceUnreachable,
    Unauthorized,
    UnsupportedMediaType,
    ValidationFailed,
)
from service.protocol.barcode_text import build_payload_v2
from service.protocol.encoding import b64url_encode, new_reference
from testbed.factories import Sealed, build_body
from tests.app.api.faults import (
    BATCH,
    BUILD,
    REGISTER,
    VERIFY,
    FakeTime,
    Fault,
    Live,
    Maker,
    closed_port,
    raw,
    service_error,
    token_requests,
)

# ------------------------------------------------------------------------ idempotent registration


def test_register_mints_one_reference_and_keeps_it_across_retries(
    live: Live, issuer: ApiClient
) -> None:
    live.proxy.inject(REGISTER, service_error("SERVICE_UNAVAILABLE"), times=2)
    live.proxy.inject(REGISTER, Fault("drop"))
    sealed = live.sealed()
    record = {k: v for k, v in sealed.body.items() if k != "service_reference"}
    ref, created = issuer.register_non_pii(record)
    assert "service_reference" not in record  # the caller's dict is not mutated
    assert created is True
    assert len(ref) == 22
    seen = live.proxy.requests_to(REGISTER)
    assert len(seen) == 4
    assert {s.body["service_reference"] for s in seen} == {ref}
    assert len({s.headers["X-Request-Id"] for s in seen}) == 1


def test_a_registration_whose_answer_was_lost_is_a_duplicate_not_a_second_record(
    live: Live, issuer: ApiClient, verifier: ApiClient, make_client: Maker
) -> None:
    sealed = live.sealed()
    live.proxy.inject(REGISTER, Fault("lose"))
    assert issuer.register_non_pii(sealed.body) == (sealed.reference, False)
    assert live.proxy.counts[REGISTER] == 2
    assert verifier.verify_payload(sealed.payload).verified is True
    overview = make_client("admin").admin_list()
    assert [i.records for i in overview.issuers] == [1]


def test_register_reports_a_duplicate_and_mints_fresh_references(
    live: Live, issuer: ApiClient
) -> None:
    sealed = live.sealed()
    assert issuer.register_non_pii(sealed.body) == (sealed.reference, True)
    assert issuer.register_non_pii(sealed.body) == (sealed.reference, False)
    first = {k: v for k, v in live.sealed().body.items() if k != "service_reference"}
    second = {k: v for k, v in live.sealed().body.items() if k != "service_reference"}
    a, b = issuer.register_non_pii(first)[0], issuer.register_non_pii(second)[0]
    assert a != b and len(a) == len(b) == 22


def test_a_batch_resent_after_a_lost_answer_keeps_its_references(
    live: Live, issuer: ApiClient, verifier: ApiClient
) -> None:
    given = live.sealed()
    minted = live.sealed()
    records = [
        {k: v for k, v in minted.body.items() if k != "service_reference"} | {"external_id": "e1"},
        given.body | {"external_id": "e2"},
    ]
    live.proxy.inject(BATCH, Fault("lose"))
    results = issuer.register_batch(records)
    assert [r.external_id for r in results] == ["e1", "e2"]
    assert [r.status for r in results] == ["duplicate", "duplicate"]
    first, second = live.proxy.requests_to(BATCH)
    assert first.body == second.body
    refs = [r["service_reference"] for r in first.body["records"]]
    assert refs[1] == given.reference and len(refs[0]) == 22
    assert [r.service_reference for r in results] == refs
    assert verifier.verify_payload(given.payload).verified is True


def test_revoke_with_and_without_a_reason(
    live: Live, issuer: ApiClient, verifier: ApiClient, registered: Sealed
) -> None:
    path = f"/v1/records/{registered.reference}/revoke"
    assert issuer.revoke(registered.reference, reason="issued in error").status == "revoked"
    assert issuer.revoke(registered.reference).status == "revoked"  # a no-op
    a, b = live.proxy.requests_to(path)
    assert a.prefix == "/issuer" and a.method == "POST"
    assert a.body == {"reason": "issued in error"}
    assert b.body == {}
    assert {t["scope"] for t in token_requests(live)} == {"service:issuer"}
    assert verifier.verify_payload(registered.payload).verified is False


def test_revoke_quotes_the_reference_into_one_path_segment(live: Live, issuer: ApiClient) -> None:
    with pytest.raises(ApiError):
        issuer.revoke("../../admin/v1/overview")
    assert live.proxy.counts["/admin/v1/overview"] == 0
    sent = live.proxy.seen[-1]
    assert sent.raw_uri == "/issuer/v1/records/..%2F..%2Fadmin%2Fv1%2Foverview/revoke"
    with pytest.raises(ValueError):
        issuer.revoke("..")


def test_admin_calls_change_the_service(live: Live, make_client: Maker, registered: Sealed) -> None:
    admin = make_client("admin")
    created = admin.admin_create_issuer("Acme Payroll")
    desk = admin.admin_create_verifier("Bank Desk")
    rotated = admin.admin_rotate_key(created.issuer_id)
    assert rotated.key_version != created.key_version
    assert admin.admin_retire_key(created.key_version).status == "retired"
    pairing = admin.admin_pair_verifier(desk.client_id)
    assert pairing.client_id == desk.client_id and pairing.pairing_code
    assert admin.admin_disable_client(desk.client_id).disabled is True
    overview = admin.admin_list()
    assert "Acme Payroll" in [i.name for i in overview.issuers]
    assert "Bank Desk" in [v.name for v in overview.verifiers]
    states = {k.key_version: k.state for k in overview.keys}
    assert states[created.key_version] == "retired"
    with pytest.raises(Unauthorized):  # the disabled desk gets no token any more
        make_client(client_id=desk.client_id, secret=desk.client_secret).verify_payload(
            registered.payload
        )
    admin_tokens = [t for t in token_requests(live) if t["scope"] == "service:admin"]
    assert [(t["audience"], t["client_id"]) for t in admin_tokens] == [
        (live.issuer_url, live.admin[0])
    ]
    assert all(s.prefix == "/issuer" for s in live.proxy.seen if s.path.startswith("/admin/"))


def test_creating_an_issuer_is_not_resent_after_a_500(live: Live, make_client: Maker) -> None:
    live.proxy.inject("/admin/v1/issuers", service_error("INTERNAL_ERROR"))
    with pytest.raises(InternalError):
        make_client("admin").admin_create_issuer("Acme")
    assert live.proxy.counts["/admin/v1/issuers"] == 1


def test_a_missing_url_is_a_programming_error(live: Live) -> None:
    with ApiClient(live.base, "id", "secret") as client, pytest.raises(ValueError):
        client.verify_payload("2|x")


# --------------------------------------------------------------------------- error mapping


def _conflict(live: Live, issuer: ApiClient) -> None:
    sealed = live.sealed()
    issuer.register_non_pii(sealed.body)
    changed = sealed.body | {"issued_at": "2026-11-14T09:00:00Z"}
    issuer.register_non_pii(changed)


def _iv_reused(live: Live, issuer: ApiClient) -> None:
    sealed = live.sealed()
    issuer.register_non_pii(sealed.body)
    issuer.register_non_pii(sealed.body | {"service_reference": new_reference()})


def _invalid(live: Live, issuer: ApiClient) -> None:
    body = live.sealed().body
    body["payslip_non_pii"] = body["payslip_non_pii"] | {"gross_cents": "lots"}
    issuer.register_non_pii(body)


def _tampered(live: Live, issuer: ApiClient) -> None:
    sealed = live.sealed()
    issuer.register_non_pii(sealed.body)
    flipped = bytes([sealed.ciphertext[0] ^ 1]) + sealed.ciphertext[1:]
    _verifier(live).verify_payload(build_payload_v2(sealed.reference, flipped))


def _retired(live: Live, issuer: ApiClient) -> None:
    version = live.issuer["key_version"]
    sealed = live.sealed(key_version=version)
    issuer.register_non_pii(sealed.body)
    with _admin(live) as admin:
        admin.admin_rotate_key(live.issuer["issuer_id"])
        admin.admin_retire_key(version)
    _verifier(live).verify_payload(sealed.payload)


def _admin(live: Live) -> ApiClient:
    return ApiClient(live.auth_url, *live.admin, issuer_url=live.issuer_url)


_VERIFIERS: list[ApiClient] = []


def _verifier(live: Live) -> ApiClient:
    client = ApiClient(
        live.auth_url,
        live.verifier["client_id"],
        live.verifier["client_secret"],
        verifier_url=live.verifier_url,
        deadline=5.0,
    )
    _VERIFIERS.append(client)
    return client


REAL_ERRORS: list[tuple[str, Callable[[Live, ApiClient], object], str, int, type[ApiError]]] = [
    ("invalid", _invalid, "VALIDATION_FAILED", 400, ValidationFailed),
    (
        "unknown-reference",
        lambda live, issuer: issuer.revoke(new_reference()),
        "SERVICE_REFERENCE_NOT_FOUND",
        404,
        NotFound,
    ),
    ("conflict", _conflict, "CONFLICT", 409, Conflict),
    ("iv-reused", _iv_reused, "IV_REUSED", 409, IvReused),
    ("tampered", _tampered, "DECRYPTION_FAILED", 400, DecryptionFailed),
    ("key-retired", _retired, "KEY_VERSION_UNAVAILABLE", 410, KeyVersionUnavailable),
    (
        "too-large",
        lambda live, issuer: _verifier(live).verify_payload("2|" + "A" * 40_000),
        "PAYLOAD_TOO_LARGE",
        413,
        PayloadTooLarge,
    ),
]


@pytest.mark.parametrize(
    ("scenario", "code", "status", "cls"),
    [case[1:] for case in REAL_ERRORS],
    ids=[case[0] for case in REAL_ERRORS],
)
def test_the_services_real_errors_arrive_typed(
    live: Live,
    issuer: ApiClient,
    fake_time: FakeTime,
    scenario: Callable[[Live, ApiClient], object],
    code: str,
    status: int,
    cls: type[ApiError],
) -> None:
    try:
        with pytest.raises(ApiError) as info:
            scenario(live, issuer)
    finally:
        while _VERIFIERS:
            _VERIFIERS.pop().close()
    exc = info.value
    assert type(exc) is cls
    assert (exc.code, exc.status) == (code, status)
    assert exc.message and exc.message != f"HTTP {status}"  # the service's own detail
    assert exc.request_id == live.proxy.seen[-1].headers["X-Request-Id"]
    assert code in str(exc) and exc.request_id in str(exc)
    assert fake_time.sleeps == []
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is cls and clone.code == code and clone.field_errors == exc.field_errors


def test_validation_errors_carry_the_fields_path(live: Live, issuer: ApiClient) -> None:
    with pytest.raises(ValidationFailed) as info:
        _invalid(live, issuer)
    paths = [fe.path for fe in info.value.field_errors]
    assert "payslip_non_pii.gross_cents" in paths
    assert "payslip_non_pii.gross_cents" in str(info.value)


ERROR_CASES: list[tuple[str, int, type[ApiError]]] = [
    ("VALIDATION_FAILED", 400, ValidationFailed),
    ("DECRYPTION_FAILED", 400, DecryptionFailed),
    ("FORBIDDEN", 403, Forbidden),
    ("SERVICE_REFERENCE_NOT_FOUND", 404, NotFound),
    ("NOT_FOUND", 404, EndpointNotFound),
    ("METHOD_NOT_ALLOWED", 405, EndpointNotFound),
    ("CONFLICT", 409, Conflict),
    ("IV_REUSED", 409, IvReused),
    ("KEY_VERSION_UNAVAILABLE", 410, KeyVersionUnavailable),
    ("PAYLOAD_TOO_LARGE", 413, PayloadTooLarge),
    ("UNSUPPORTED_MEDIA_TYPE", 415, UnsupportedMediaType),
    ("RATE_LIMITED", 429, RateLimited),
    ("INTERNAL_ERROR", 500, InternalError),
    ("SERVICE_UNAVAILABLE", 503, ServiceUnavailable),
]


@pytest.mark.parametrize(("code", "status", "cls"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_every_code_the_service_can_send_maps_to_its_error_class(
    live: Live,
    make_client: Maker,
    registered: Sealed,
    fake_time: FakeTime,
    code: str,
    status: int,
    cls: type[ApiError],
) -> None:
    """Each code as the service itself renders it (body and headers), with a reason; a
    Retry-After beyond the deadline makes even retryable codes surface after one request."""
    client = make_client(deadline=0.5)
    fault = service_error(code, retry_after=1, reason="why")
    fault.headers.setdefault("Retry-After", "1")
    live.proxy.inject(VERIFY, fault)
    with pytest.raises(ApiError) as info:
        client.verify_payload(registered.payload)
    exc = info.value
    assert type(exc) is cls
    assert (exc.code, exc.status) == (code, status)
    assert exc.message == f"{code.lower()} (injected)"
    assert exc.reason == "why"
    assert exc.request_id == live.proxy.requests_to(VERIFY)[0].headers["X-Request-Id"]
    assert exc.retry_after == 1
    assert live.proxy.counts[VERIFY] == 1
    assert fake_time.sleeps == []
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is cls and clone.code == code and clone.reason == "why"


def test_a_code_this_client_does_not_know_is_a_plain_api_error(
    live: Live, verifier: ApiClient, registered: Sealed
) -> None:
    body = json.dumps({"error": "Teapot", "code": "SOMETHING_NEW", "detail": "new"}).encode()
    live.proxy.inject(VERIFY, raw(418, body, "application/json"))
    with pytest.raises(ApiError) as info:
        verifier.verify_payload(registered.payload)
    assert type(info.value) is ApiError
    assert (info.value.code, info.value.status, info.value.message) == ("SOMETHING_NEW", 418, "new")


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (500, InternalError, "INTERNAL_ERROR"),
        (501, InternalError, "INTERNAL_ERROR"),
        (502, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (503, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (504, ServiceUnavailable, "SERVICE_UNAVAILABLE"),
        (404, EndpointNotFound, "NOT_FOUND"),
        (413, PayloadTooLarge, "PAYLOAD_TOO_LARGE"),
        (400, ValidationFailed, "VALIDATION_FAILED"),
    ],
)
def test_a_proxys_html_error_page_maps_by_status(
    live: Live, issuer: ApiClient, status: int, cls: type[ApiError], code: str
) -> None:
    live.proxy.inject(BUILD, raw(status, b"<html><body>oops</body></html>", "text/html"))
    with pytest.raises(cls) as info:
        issuer.register_and_build_barcode(build_body(live.sealed()))
    assert (info.value.code, info.value.status) == (code, status)
    assert info.value.field_errors == []
    assert live.proxy.counts[BUILD] == 1


def test_a_captive_portals_html_page_is_an_invalid_response(
    live: Live, verifier: ApiClient, registered: Sealed
) -> None:
    live.proxy.inject(VERIFY, raw(200, b"<html>captive portal</html>", "text/html"))
    with pytest.raises(InvalidResponse):
        verifier.verify_payload(registered.payload)


# --------------------------------------------------------------------------- privacy


def _all_text(exc: BaseException) -> str:
    parts = [str(exc), repr(exc), repr(vars(exc)), *traceback.format_exception(exc)]
    return "\n".join(parts)


def test_errors_and_logs_never_hold_secrets_or_personal_data(
    live: Live, make_client: Maker, registered: Sealed, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    verifier, issuer = make_client(deadline=3.0), make_client("issuer", deadline=3.0)
    failures: list[BaseException] = []
    live.proxy.inject(VERIFY, service_error("SERVICE_UNAVAILABLE", retry_after=1), 50)
    with pytest.raises(ServiceUnavailable) as a:
        verifier.verify_payload(registered.payload)
    failures.append(a.value)
    live.proxy.clear(VERIFY)
    body = build_body(live.sealed())
    live.proxy.inject(BUILD, Fault("drop"))
    with pytest.raises(ServiceUnreachable) as b:
        issuer.register_and_build_barcode(body)
    failures.append(b.value)
    live.proxy.inject(VERIFY, Fault("stale"), times=2)
    with pytest.raises(Unauthorized) as c:
        verifier.verify_payload(registered.payload)
    failures.append(c.value)
    nowhere = f"http://127.0.0.1:{closed_port()}"
    dead = make_client(auth_url=nowhere, verifier_url=nowhere, deadline=1.0)
    with pytest.raises(ServiceUnreachable) as d:
        dead.verify_payload(registered.payload)
    failures.append(d.value)

    secrets = [
        registered.payload,
        b64url_encode(registered.ciphertext),
        body["encrypted_pii"],
        registered.pii_text,
        live.verifier["client_secret"],
        live.issuer["client_secret"],
        *live.proxy.issued,
    ]
    assert len(live.proxy.issued) >= 3
    for exc in failures:
        assert exc.__cause__ is None and exc.__context__ is None
        text = _all_text(exc)
        for s in secrets:
            assert s not in text
    logs = caplog.text + "\n".join(str(r.args) for r in caplog.records)
    assert "/v1/verifications/payload" in logs
    for s in secrets:
        assert s not in logs
    assert live.verifier["client_secret"] not in repr(verifier)
