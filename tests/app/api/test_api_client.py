"""ApiClient against the real service behind a fault injector (tests/app/api/faults.py): tokens,
retries with backoff and Retry-After, registerAndBuildBarcode's no-resend rule, the deadline.

Backoff is asserted on a fake clock whose `sleep` advances it (the suite does not wait out
Retry-After). The deadline tests run the real transport on that clock (tests/app/api/timed.py):
an attempt that times out moves it by the timeout it carried, so they assert on the timeouts
each attempt was given and on the clock's reading, never on the wall clock.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.api import (
    ApiClient,
    ApiError,
    Forbidden,
    InternalError,
    RateLimited,
    ServiceUnavailable,
    ServiceUnreachable,
    Unauthorized,
)
from app.shell.context import VERIFY_DEADLINE, verifier_client
from service.composition.config import RateLimits
from testbed.factories import Sealed, build_body
from tests.app.api.faults import (
    BUILD,
    REGISTER,
    TOKEN,
    VERIFY,
    FakeTime,
    Fault,
    Live,
    Maker,
    closed_port,
    raw,
    register_one,
    service_error,
    serving,
    token_requests,
)
from tests.app.api.timed import TimedTransport

# --------------------------------------------------------------------------- tokens


def test_one_token_serves_many_verifications(
    live: Live, verifier: ApiClient, registered: Sealed
) -> None:
    for _ in range(3):
        assert verifier.verify_payload(registered.payload).verified is True
    assert token_requests(live)[-1] == {
        "grant_type": "client_credentials",
        "client_id": live.verifier["client_id"],
        "client_secret": live.verifier["client_secret"],
        "audience": live.verifier_url,
        "scope": "service:verifier",
    }
    verifier_tokens = [b for b in token_requests(live) if b["scope"] == "service:verifier"]
    assert len(verifier_tokens) == 1
    sent = live.proxy.requests_to(VERIFY)
    assert len(sent) == 3
    token = live.proxy.issued[-1]
    for seen in sent:
        assert seen.prefix == "" and seen.headers["Host"].startswith("localhost:")
        assert seen.headers["Authorization"] == f"Bearer {token}"
        assert seen.headers["Content-Type"] == "application/json"
        assert seen.body == {"barcode": registered.payload}
    assert all(s.prefix == "/auth" for s in live.proxy.requests_to(TOKEN))


def test_each_api_gets_a_token_for_its_own_audience_and_scope(
    live: Live, make_client: Maker, registered: Sealed
) -> None:
    issuer, verifier, admin = make_client("issuer"), make_client(), make_client("admin")
    live.proxy.seen.clear()
    for _ in range(2):
        verifier.verify_payload(registered.payload)
        issuer.register_non_pii(live.sealed().body)
        admin.admin_list()
    pairs = [(b["audience"], b["scope"]) for b in token_requests(live)]
    assert pairs == [
        (live.verifier_url, "service:verifier"),
        (live.issuer_url, "service:issuer"),
        (live.issuer_url, "service:admin"),
    ]


def test_scope_override_is_sent_and_a_refusal_is_typed(live: Live, make_client: Maker) -> None:
    client = make_client("issuer", scope="service:admin")
    with pytest.raises(Forbidden) as info:
        client.register_non_pii(live.sealed().body)
    assert info.value.status == 403
    assert token_requests(live)[0]["scope"] == "service:admin"
    assert live.proxy.counts[REGISTER] == 0


@pytest.mark.parametrize(("lifetime", "early"), [(900, 60.0), (60, 30.0)])
def test_token_refreshed_shortly_before_it_expires(
    tmp_path: Path,
    fake_time: FakeTime,
    lifetime: int,
    early: float,
) -> None:
    with serving(tmp_path / "data", token_ttl=lifetime) as live:
        barcode = register_one(live)
        client = ApiClient(
            live.auth_url,
            live.verifier["client_id"],
            live.verifier["client_secret"],
            verifier_url=live.verifier_url,
            clock=fake_time.clock,
            sleep=fake_time.sleep,
        )
        with client:
            live.proxy.issued.clear()
            client.verify_payload(barcode)
            fake_time.now += lifetime - early - 1
            client.verify_payload(barcode)
            assert len(live.proxy.issued) == 1
            fake_time.now += 1
            assert client.verify_payload(barcode).verified is True
            assert len(live.proxy.issued) == 2
            used = [s.headers["Authorization"] for s in live.proxy.requests_to(VERIFY)]
            assert used == [f"Bearer {live.proxy.issued[0]}"] * 2 + [
                f"Bearer {live.proxy.issued[1]}"
            ]


def test_a_token_answer_without_expires_in_is_kept_for_a_short_while(
    live: Live, verifier: ApiClient, registered: Sealed, fake_time: FakeTime
) -> None:
    def without_expiry(answer: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in answer.items() if k != "expires_in"}

    live.proxy.issued.clear()
    live.proxy.inject(TOKEN, Fault("edit", edit=without_expiry), times=2)
    verifier.verify_payload(registered.payload)
    verifier.verify_payload(registered.payload)
    assert len(live.proxy.issued) == 1
    fake_time.now += 31  # the assumed 60 s lifetime, refreshed at half of it
    assert verifier.verify_payload(registered.payload).verified is True
    assert len(live.proxy.issued) == 2


def test_eight_threads_share_one_token_request(
    live: Live, verifier: ApiClient, registered: Sealed
) -> None:
    live.proxy.issued.clear()
    live.proxy.inject(TOKEN, Fault("slow", delay=0.3), times=8)
    barrier = threading.Barrier(8)
    results: list[Any] = []
    errors: list[BaseException] = []

    def work() -> None:
        barrier.wait()
        try:
            results.append(verifier.verify_payload(registered.payload))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    assert [r.verified for r in results] == [True] * 8
    assert len(live.proxy.issued) == 1
    assert live.proxy.counts[VERIFY] == 8


def test_a_refused_token_is_replaced_once_and_the_call_succeeds(
    live: Live, verifier: ApiClient, registered: Sealed, fake_time: FakeTime
) -> None:
    verifier.verify_payload(registered.payload)
    live.proxy.issued.clear()
    live.proxy.seen.clear()
    live.proxy.inject(VERIFY, Fault("stale"))
    assert verifier.verify_payload(registered.payload).verified is True
    assert len(live.proxy.issued) == 1  # one fresh token
    refused, retried = live.proxy.requests_to(VERIFY)
    assert refused.headers["Authorization"] != f"Bearer {live.proxy.issued[0]}"
    assert retried.headers["Authorization"] == f"Bearer {live.proxy.issued[0]}"
    assert refused.headers["X-Request-Id"] == retried.headers["X-Request-Id"]
    assert fake_time.sleeps == []


def test_a_second_401_is_final(live: Live, verifier: ApiClient, registered: Sealed) -> None:
    live.proxy.inject(VERIFY, Fault("stale"), times=2)
    live.proxy.issued.clear()
    with pytest.raises(Unauthorized) as info:
        verifier.verify_payload(registered.payload)
    assert info.value.status == 401
    assert live.proxy.counts[VERIFY] == 2
    assert len(live.proxy.issued) == 2


def test_the_token_endpoints_refusals_are_typed(
    live: Live, make_client: Maker, registered: Sealed
) -> None:
    with pytest.raises(Unauthorized):
        make_client(secret="wrong-secret").verify_payload(registered.payload)
    with pytest.raises(Forbidden):  # a verifier asking for an issuer token
        make_client("verifier").register_non_pii(live.sealed().body)
    assert live.proxy.counts[VERIFY] == 0
    assert live.proxy.counts[REGISTER] == 1  # the fixture's own registration


def test_a_busy_token_endpoint_is_retried_after_retry_after(
    live: Live, verifier: ApiClient, registered: Sealed, fake_time: FakeTime
) -> None:
    live.proxy.seen.clear()
    live.proxy.inject(TOKEN, service_error("SERVICE_UNAVAILABLE", retry_after=2))
    assert verifier.verify_payload(registered.payload).verified is True
    assert len(live.proxy.requests_to(TOKEN)) == 2
    assert fake_time.sleeps and fake_time.sleeps[0] >= 2


# --------------------------------------------------------------------------- retries


def test_429_waits_for_retry_after_then_succeeds(
    live: Live, verifier: ApiClient, registered: Sealed, fake_time: FakeTime
) -> None:
    live.proxy.inject(VERIFY, service_error("RATE_LIMITED", retry_after=1))
    assert verifier.verify_payload(registered.payload).verified is True
    assert live.proxy.counts[VERIFY] == 2
    assert len(fake_time.sleeps) == 1
    assert fake_time.sleeps[0] >= 1


def test_503_twice_then_the_answer_with_jittered_backoff(
    live: Live, verifier: ApiClient, registered: Sealed, fake_time: FakeTime
) -> None:
    live.proxy.inject(VERIFY, service_error("SERVICE_UNAVAILABLE"), times=2)
    assert verifier.verify_payload(registered.payload).verified is True
    assert live.proxy.counts[VERIFY] == 3
    assert len(fake_time.sleeps) == 2
    # The service's 503 carries Retry-After: 1; without it the jitter would be <= 0.25, 0.5.
    assert all(1 <= s <= 1.5 for s in fake_time.sleeps)
    ids = {s.headers["X-Request-Id"] for s in live.proxy.requests_to(VERIFY)}
    assert len(ids) == 1


def test_backoff_is_jittered_and_capped(
    live: Live, make_client: Maker, registered: Sealed, fake_time: FakeTime
) -> None:
    client = make_client(deadline=1000.0)
    live.proxy.inject(VERIFY, service_error("INTERNAL_ERROR"), times=10)
    assert client.verify_payload(registered.payload).verified is True
    assert live.proxy.counts[VERIFY] == 11
    assert len(fake_time.sleeps) == 10
    assert 0 <= fake_time.sleeps[0] <= 0.25 and 0 <= fake_time.sleeps[1] <= 0.5
    assert all(0 <= s <= 8.0 for s in fake_time.sleeps)


@pytest.mark.parametrize(
    "fault",
    [
        service_error("INTERNAL_ERROR"),
        raw(502, b"<html>bad gateway</html>", "text/html"),
        raw(504, b"gateway timeout", "text/plain"),
        raw(408, b"", "text/plain"),
        Fault("drop"),
    ],
    ids=["500", "502-html", "504-text", "408", "dropped"],
)
def test_a_verification_survives_one_transient_failure(
    live: Live, verifier: ApiClient, registered: Sealed, fault: Fault
) -> None:
    live.proxy.inject(VERIFY, fault)
    assert verifier.verify_payload(registered.payload).verified is True
    assert live.proxy.counts[VERIFY] == 2
    ids = {s.headers["X-Request-Id"] for s in live.proxy.requests_to(VERIFY)}
    assert len(ids) == 1


def test_a_slow_answer_times_out_and_is_asked_again(
    live: Live, make_client: Maker, registered: Sealed, fake_time: FakeTime
) -> None:
    timed = TimedTransport(fake_time)
    client = make_client(timeout=2.0, transport=timed)
    live.proxy.inject(VERIFY, Fault("slow", delay=12.0))
    assert client.verify_payload(registered.payload).verified is True
    first, *_, last = timed.to(VERIFY)
    # The first attempt gave up at its own 2 s read timeout, without the slow answer; the
    # answer came from an attempt sent again.
    assert (first.outcome, first.timeout["read"]) == ("ReadTimeout", 2.0)
    assert last.outcome == "HTTP 200"
    assert live.proxy.counts[VERIFY] >= 2


def test_request_ids_are_fresh_per_call(
    live: Live, verifier: ApiClient, registered: Sealed
) -> None:
    verifier.verify_payload(registered.payload)
    verifier.verify_payload(registered.payload)
    a, b = (s.headers["X-Request-Id"] for s in live.proxy.requests_to(VERIFY))
    assert a != b


# ------------------------------------------------------------------------ registerAndBuildBarcode


@pytest.mark.parametrize(
    ("fault", "exc"),
    [
        (service_error("SERVICE_UNAVAILABLE", retry_after=1), ServiceUnavailable),
        (service_error("INTERNAL_ERROR"), InternalError),
        (raw(502, b"<html/>", "text/html"), ServiceUnavailable),
        (Fault("drop"), ServiceUnreachable),
        (Fault("lose"), ServiceUnreachable),
    ],
    ids=["503", "500", "502-html", "dropped", "lost-after-registering"],
)
def test_build_barcode_is_not_resent_once_the_service_may_have_acted(
    live: Live, issuer: ApiClient, fake_time: FakeTime, fault: Fault, exc: type[ApiError]
) -> None:
    live.proxy.inject(BUILD, fault)
    with pytest.raises(exc):
        issuer.register_and_build_barcode(build_body(live.sealed()))
    assert live.proxy.counts[BUILD] == 1
    assert fake_time.sleeps == []


def test_build_barcode_slow_answer_is_not_resent(live: Live, make_client: Maker) -> None:
    client = make_client("issuer", timeout=0.5)
    live.proxy.inject(BUILD, Fault("slow", delay=5.0))
    with pytest.raises(ServiceUnreachable):
        client.register_and_build_barcode(build_body(live.sealed()))
    assert live.proxy.counts[BUILD] == 1


def test_build_barcode_is_resent_after_429_and_returns_the_badge(
    live: Live, issuer: ApiClient, fake_time: FakeTime
) -> None:
    live.proxy.inject(BUILD, service_error("RATE_LIMITED", retry_after=1))
    result = issuer.register_and_build_barcode(build_body(live.sealed()))
    assert result.barcode.format == "png"
    assert live.proxy.counts[BUILD] == 2
    assert fake_time.sleeps[0] >= 1
    first, second = live.proxy.requests_to(BUILD)
    assert first.body == second.body
    assert "service_reference" not in first.body
    assert first.headers["X-Request-Id"] == second.headers["X-Request-Id"]


class ConnectFailsFirst(httpx.BaseTransport):
    """Real transport, except the first `n` requests to `path` fail to connect."""

    def __init__(self, path: str, n: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.path = path
        self.left = n

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(self.path) and self.left > 0:
            self.left -= 1
            raise httpx.ConnectError("connection refused", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def test_build_barcode_is_resent_when_the_connection_failed_before_sending(
    live: Live, make_client: Maker, fake_time: FakeTime
) -> None:
    client = make_client("issuer", transport=ConnectFailsFirst(BUILD, 2))
    assert client.register_and_build_barcode(build_body(live.sealed())).barcode.data
    assert live.proxy.counts[BUILD] == 1
    assert len(fake_time.sleeps) == 2


def test_build_barcode_against_a_stopped_service_gives_up_within_the_deadline(
    live: Live, make_client: Maker, fake_time: FakeTime
) -> None:
    client = make_client("issuer", deadline=3.0)
    client.register_non_pii(live.sealed().body)  # token cached
    live.running.stop()  # connections are now refused
    start = fake_time.now
    with pytest.raises(ServiceUnreachable) as info:
        client.register_and_build_barcode(build_body(live.sealed()))
    assert info.value.status is None
    assert "connection refused" in info.value.message
    assert info.value.reason == "refused"
    assert (info.value.address or "").startswith("http://127.0.0.1:")
    assert len(fake_time.sleeps) >= 2
    assert fake_time.now - start < 3.0


# --------------------------------------------------------------------------- deadline


def test_the_deadline_is_never_exceeded_and_the_last_error_is_raised(
    live: Live, make_client: Maker, registered: Sealed, fake_time: FakeTime
) -> None:
    client = make_client(deadline=5.0)
    live.proxy.inject(VERIFY, service_error("SERVICE_UNAVAILABLE", retry_after=1), 100)
    start = fake_time.now
    with pytest.raises(ServiceUnavailable) as info:
        client.verify_payload(registered.payload)
    assert info.value.retry_after == 1
    assert fake_time.now - start < 5.0
    assert all(s >= 1 for s in fake_time.sleeps)
    assert len(fake_time.sleeps) >= 3
    assert live.proxy.counts[VERIFY] == len(fake_time.sleeps) + 1


def test_the_services_own_rate_limit_beyond_the_deadline_is_not_waited_for(
    tmp_path: Path, fake_time: FakeTime
) -> None:
    limits = RateLimits(per_client="2/minute")
    with serving(tmp_path / "data", rate_limits=limits) as live:
        barcode = register_one(live)
        with ApiClient(
            live.auth_url,
            live.verifier["client_id"],
            live.verifier["client_secret"],
            verifier_url=live.verifier_url,
            deadline=5.0,
            clock=fake_time.clock,
            sleep=fake_time.sleep,
        ) as client:
            client.verify_payload(barcode)
            client.verify_payload(barcode)
            with pytest.raises(RateLimited) as info:
                client.verify_payload(barcode)
    assert info.value.retry_after is not None and info.value.retry_after > 5
    assert fake_time.sleeps == []
    assert live.proxy.counts[VERIFY] == 3


@pytest.mark.parametrize("stuck", [VERIFY, TOKEN])
def test_the_desk_says_cannot_verify_within_its_deadline_when_the_service_hangs(
    live: Live, registered: Sealed, fake_time: FakeTime, stuck: str
) -> None:
    """app.shell.context.verifier_client (4 s deadline) against a service that accepts and never
    answers in time: the verify screen shows CANNOT VERIFY, it does not wait 30 s."""
    timed = TimedTransport(fake_time)
    client = verifier_client(
        live.auth_url,
        live.verifier["client_id"],
        live.verifier["client_secret"],
        live.verifier_url,
        transport=timed,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    with client:
        if stuck == VERIFY:
            client.verify_payload(registered.payload)  # token cached: only the call hangs
        live.proxy.inject(stuck, Fault("slow", delay=30.0), times=10)
        timed.attempts.clear()
        started = fake_time.now
        with pytest.raises(ServiceUnreachable):
            client.verify_payload(registered.payload)
    # Every attempt gave up by its own timeout (none got the slow answer), and those timeouts
    # with the backoff between them add up to no more than the desk's deadline.
    hung = timed.to(stuck)
    assert hung and all(a.outcome == "ReadTimeout" for a in hung)
    assert fake_time.now - started <= VERIFY_DEADLINE


def test_the_deadline_cuts_an_attempt_shorter_than_its_timeout(
    live: Live, make_client: Maker, registered: Sealed, fake_time: FakeTime
) -> None:
    timed = TimedTransport(fake_time)
    client = make_client(timeout=10.0, deadline=1.5, transport=timed)
    live.proxy.inject(VERIFY, Fault("slow", delay=30.0), times=5)
    started = fake_time.now
    with pytest.raises(ServiceUnreachable):
        client.verify_payload(registered.payload)
    # One attempt, cut to the 1.5 s the deadline left (not the 10 s attempt timeout), and then
    # no other: the deadline was spent.
    assert [(a.outcome, a.timeout["read"]) for a in timed.to(VERIFY)] == [("ReadTimeout", 1.5)]
    assert fake_time.now - started == pytest.approx(1.5)


def test_an_unreachable_token_endpoint_gives_service_unreachable(
    make_client: Maker, fake_time: FakeTime
) -> None:
    client = make_client(auth_url=f"http://127.0.0.1:{closed_port()}", deadline=2.0)
    start = fake_time.now
    with pytest.raises(ServiceUnreachable):
        client.verify_payload("2|" + "A" * 22 + "|" + "A" * 40)
    assert fake_time.now - start < 2.0
    assert len(fake_time.sleeps) >= 1


# --------------------------------------------------------------------------- health


def test_healthz_is_one_short_unauthenticated_look(live: Live, verifier: ApiClient) -> None:
    assert verifier.healthz(live.base) is True
    assert verifier.healthz(live.base + "/") is True
    live.proxy.inject("/healthz", service_error("SERVICE_UNAVAILABLE", retry_after=1))
    assert verifier.healthz(live.base) is False
    assert verifier.healthz(f"http://127.0.0.1:{closed_port()}") is False
    assert live.proxy.counts[TOKEN] == 0


def test_connect_timeout_is_separate_and_the_deadline_holds_over_retries() -> None:
    """A host that never completes the TCP handshake (a listener whose backlog is full drops
    SYNs): each attempt gives up after the connect timeout and is retried, and the whole call
    still ends at its deadline, not after the 10 s read timeout (issue 9: fail fast)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept backlog; further SYNs are dropped
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    url = f"http://127.0.0.1:{port}"
    fake_time = FakeTime()
    timed = TimedTransport(fake_time)
    client = ApiClient(
        url,
        "desk",
        "secret",
        verifier_url=url,
        timeout=10.0,
        connect_timeout=0.4,
        deadline=2.0,
        transport=timed,
        sleep=fake_time.sleep,
        clock=fake_time.clock,
    )
    started = fake_time.now
    try:
        with pytest.raises(ServiceUnreachable) as caught:
            client.verify_payload("2|" + "A" * 22 + "|" + "A" * 40)
    finally:
        client.close()
        for filler in fillers:
            filler.close()
        server.close()
    assert "no answer to the connection" in caught.value.message
    assert caught.value.reason == "no_answer"
    # Each attempt waited for its connection only the 0.4 s connect timeout (or what was left
    # of the deadline, if less), while its read timeout was the rest of the deadline; more than
    # one attempt fitted, and attempts plus backoff stayed within the 2 s deadline.
    attempts = timed.attempts
    assert len(attempts) >= 2 and fake_time.sleeps
    assert all(a.outcome == "ConnectTimeout" for a in attempts)
    assert attempts[0].timeout["connect"] == 0.4 and attempts[0].timeout["read"] == 2.0
    assert all((a.timeout["connect"] or 0) <= 0.4 for a in attempts)
    assert fake_time.now - started <= 2.0
    with pytest.raises(ValueError):
        ApiClient(url, "a", "b", connect_timeout=0)
