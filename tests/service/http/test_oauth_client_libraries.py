"""Standard OAuth client libraries get a token as they come (PROTOCOL §7, issue 26 item 8):
HTTP Basic client authentication (RFC 6749 §2.3.1) beside body credentials, against a real
server on loopback, then the token is used for a real verification."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote_plus

import httpx
import pytest
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session as AuthlibSession
from oauthlib.oauth2 import BackendApplicationClient
from oauthlib.oauth2.rfc6749.errors import OAuth2Error
from requests_oauthlib import OAuth2Session as OauthlibSession

from service.domain.errors import ServiceError
from service.http.errors import as_oauth, error_body
from service.protocol.errors import ErrorCode
from testbed import web
from testbed.factories import sealed_record
from tests.service.conftest import LiveService
from tests.service.http.http_helpers import expect_error


@pytest.fixture(autouse=True)
def _loopback_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both libraries refuse plain http unless told; the server here is on loopback."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")


def _verifies(live: LiveService, token: str) -> None:
    """The token works where it is meant to: a registered payslip verifies with it."""
    sealed = sealed_record(live.issuer["encryption_key"])
    registered = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    assert registered.status_code == 201, registered.text
    reply = live.verify(sealed.payload, token)
    assert reply.status_code == 200, reply.text
    assert reply.json()["verified"] is True


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_authlib_gets_a_token_with_either_method(live: LiveService, method: str) -> None:
    client = live.verifier
    with AuthlibSession(
        client["client_id"], client["client_secret"], token_endpoint_auth_method=method
    ) as session:
        token = session.fetch_token(
            f"{live.url}/oauth/token", grant_type="client_credentials", audience=live.url
        )
    assert token["token_type"] == "Bearer"
    assert token["scope"] == "service:verifier"
    _verifies(live, token["access_token"])


def test_requests_oauthlib_gets_a_token_with_its_defaults(live: LiveService) -> None:
    client = live.verifier
    session = OauthlibSession(client=BackendApplicationClient(client_id=client["client_id"]))
    with session:
        token = session.fetch_token(
            f"{live.url}/oauth/token",
            client_id=client["client_id"],
            client_secret=client["client_secret"],
            audience=live.url,
        )
    _verifies(live, token["access_token"])


def _basic(client_id: str, secret: str) -> dict[str, str]:
    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


def _form(**fields: str) -> dict[str, Any]:
    return {"grant_type": "client_credentials", **fields}


def test_credentials_in_both_places_are_invalid_request(live: LiveService) -> None:
    client = live.issuer
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url, client_secret=client["client_secret"]),
        headers=_basic(client["client_id"], client["client_secret"]),
    )
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert body["error"] == "invalid_request"
    assert "once" in body["detail"]


def test_a_body_client_id_other_than_the_basic_one_is_invalid_request(
    live: LiveService,
) -> None:
    client = live.issuer
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url, client_id=live.verifier["client_id"]),
        headers=_basic(client["client_id"], client["client_secret"]),
    )
    assert expect_error(reply, 400, "VALIDATION_FAILED")["error"] == "invalid_request"


def test_the_same_client_id_in_the_body_beside_basic_is_accepted(live: LiveService) -> None:
    client = live.issuer
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url, client_id=client["client_id"]),
        headers=_basic(client["client_id"], client["client_secret"]),
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["scope"] == "service:issuer"


def test_a_wrong_basic_secret_is_invalid_client_challenged_with_basic(
    live: LiveService,
) -> None:
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url),
        headers=_basic(live.issuer["client_id"], "not-the-secret"),
    )
    # RFC 6749 §5.2: the challenge names the scheme the client used (PROTOCOL §6's Bearer is
    # for bearer-token routes and body credentials), so expect_error's Bearer check is not used.
    assert reply.status_code == 401, reply.text
    assert reply.json()["error"] == "invalid_client"
    assert reply.json()["code"] == "UNAUTHORIZED"
    assert reply.headers["WWW-Authenticate"].startswith("Basic ")


def test_a_wrong_body_secret_keeps_the_bearer_challenge(live: LiveService) -> None:
    """A Basic challenge would make a browser open its own sign-in box over the phone page."""
    reply = web.post(
        f"{live.url}/oauth/token",
        json=_form(audience=live.url, client_id=live.issuer["client_id"], client_secret="nope"),
    )
    expect_error(reply, 401, "UNAUTHORIZED")
    assert reply.headers["WWW-Authenticate"].startswith("Bearer ")


@pytest.mark.parametrize(
    "header", ["Basic !!!notbase64", "Basic " + base64.b64encode(b"no-colon").decode(), "Digest x"]
)
def test_a_malformed_authorization_header_is_invalid_request(
    live: LiveService, header: str
) -> None:
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url),
        headers={"Authorization": header},
    )
    assert expect_error(reply, 400, "VALIDATION_FAILED")["error"] == "invalid_request"


def test_a_wrong_audience_names_the_expected_one(live: LiveService) -> None:
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience="https://wrong.example"),
        auth=(live.verifier["client_id"], live.verifier["client_secret"]),
    )
    body = expect_error(reply, 403, "FORBIDDEN")
    assert body["error"] == "invalid_scope"
    assert live.url in body["detail"]
    assert live.url in body["error_description"]


# --- refusals reach the library's exception with their reason (issue 36 item 1) --------------


def _authlib_refusal(live: LiveService, secret: str, audience: str) -> str:
    with (
        AuthlibSession(live.verifier["client_id"], secret) as session,
        pytest.raises(OAuthError) as raised,
    ):
        session.fetch_token(
            f"{live.url}/oauth/token", grant_type="client_credentials", audience=audience
        )
    return str(raised.value)


def _oauthlib_refusal(live: LiveService, secret: str, audience: str) -> str:
    client_id = live.verifier["client_id"]
    session = OauthlibSession(client=BackendApplicationClient(client_id=client_id))
    with session, pytest.raises(OAuth2Error) as raised:
        session.fetch_token(
            f"{live.url}/oauth/token",
            client_id=client_id,
            client_secret=secret,
            audience=audience,
        )
    return str(raised.value)


@pytest.mark.parametrize("refusal", [_authlib_refusal, _oauthlib_refusal])
def test_a_wrong_audience_reaches_the_library_with_the_expected_url(
    live: LiveService, refusal: Any
) -> None:
    text = refusal(live, live.verifier["client_secret"], "https://wrong.example")
    assert "invalid_scope" in text
    assert f"must be {live.url}" in text, text


@pytest.mark.parametrize("refusal", [_authlib_refusal, _oauthlib_refusal])
def test_a_wrong_secret_reaches_the_library_with_its_reason(
    live: LiveService, refusal: Any
) -> None:
    text = refusal(live, "not-the-secret", live.url)
    assert "invalid_client" in text
    assert "unknown client or wrong secret" in text, text


def test_a_scope_the_client_may_not_have_names_the_one_it_may(live: LiveService) -> None:
    reply = web.post(
        f"{live.url}/oauth/token",
        data=_form(audience=live.url, scope="service:admin"),
        auth=(live.verifier["client_id"], live.verifier["client_secret"]),
    )
    body = expect_error(reply, 403, "FORBIDDEN")
    assert body["error"] == "invalid_scope"
    assert "service:verifier" in body["error_description"]


def _token_refusals(live: LiveService) -> list[tuple[int, httpx.Response]]:
    """One request for each way the token endpoint refuses: the grant's own checks, the body
    the handler reads, the method, and the declared length the pipeline checks."""
    url = f"{live.url}/oauth/token"
    return [
        (400, live.http.post(url, data={"grant_type": "password"})),
        (400, live.http.post(url, data={"grant_type": "client_credentials"})),
        (400, live.http.post(url, content=b"[1]", headers={"Content-Type": "application/json"})),
        (415, live.http.post(url, content=b"x", headers={"Content-Type": "text/plain"})),
        (405, live.http.get(url)),
        (413, live.http.post(url, data={"grant_type": "x" * 9000})),
    ]


def test_every_token_endpoint_refusal_carries_error_and_error_description(
    live: LiveService,
) -> None:
    """RFC 6749 §5.2's two fields, beside our own `code` and `detail`, on each refusal; the
    description is the detail in the ASCII the RFC allows."""
    for status, reply in _token_refusals(live):
        assert reply.status_code == status, reply.text
        body = reply.json()
        assert body["error"] in {"invalid_request", "unsupported_grant_type"}, body
        assert body["code"] and body["detail"], body
        assert body["error_description"] == body["detail"].replace('"', "'"), body


def test_an_oauth_description_is_the_detail_in_the_ascii_rfc_6749_allows() -> None:
    body = error_body(
        as_oauth(ServiceError(ErrorCode.RATE_LIMITED, 'too "many" — slow', retry_after=3))
    )
    assert body["error"] == "temporarily_unavailable"
    assert body["error_description"] == "too 'many' ? slow"
    assert body["code"] == "RATE_LIMITED"


def test_a_token_for_another_scope_is_told_the_scope_the_operation_needs(
    live: LiveService,
) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    reply = live.post("/v1/registerNonPII", sealed.body, live.verifier_token())
    body = expect_error(reply, 403, "FORBIDDEN")
    assert "needs a token with scope service:issuer" in body["detail"]
    assert "error_description" not in body, "not OAuth's error object: an API's own"
    challenge = reply.headers["WWW-Authenticate"]
    assert challenge == 'Bearer error="insufficient_scope", scope="service:issuer"'
