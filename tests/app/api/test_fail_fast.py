"""Fail fast, and say how (issue 27, item 9): issuing reports an unreachable service within 5 s;
a refused connection says "refused" and names the address, in the GUI and in `app verify`.

No wall-clock assertions: the issuing client's time is a fake clock that moves only when the
client sleeps or a connection attempt uses up its connect timeout, so what is asserted is the
timeout configuration and the retry loop's use of it. Refusals are real: a port bound but not
listening on loopback.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from random import Random

import httpx
import pytest
from pytestqt.qtbot import QtBot

from app.api.errors import ServiceUnreachable, unreachable_words
from app.api.fail_fast import ISSUE_CONNECT_TIMEOUT, ISSUE_UNREACHABLE_AFTER, issuer_client
from app.issuer.local_issuer import save_local_issuer
from app.issuer.messages import describe_error
from app.shell.context import VERIFY_REFUSED_AFTER, AppContext, verifier_client
from app.ui.issue.screen import IssueScreen
from app.ui.widgets.tasks import TaskRunner
from service.composition.demo import sample_records
from tests.app.api.faults import FakeTime
from tests.app.ui.issue.test_issue_screen import NZ_PII
from tests.commands import run_module

FIVE_SECONDS = 5.0
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def dead_url() -> Iterator[str]:
    """An address where nothing listens: the port is held (bound, never listening), so every
    connection is refused and no other program can take it meanwhile."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{holder.getsockname()[1]}"


def never_answers(fake: FakeTime) -> httpx.MockTransport:
    """A network where connections are never accepted: each attempt takes its whole connect
    timeout (on the fake clock) and fails."""

    def handler(request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions["timeout"]
        fake.now += float(timeouts["connect"])
        raise httpx.ConnectTimeout("no answer", request=request)

    return httpx.MockTransport(handler)


def test_issuing_clients_are_configured_to_give_up_within_five_seconds() -> None:
    client = issuer_client("http://192.0.2.1:8080", "iss_x", "secret")
    policy = client._policy
    assert policy.connect_timeout == ISSUE_CONNECT_TIMEOUT <= 2.0
    assert policy.unreachable_after == ISSUE_UNREACHABLE_AFTER < FIVE_SECONDS
    assert policy.deadline == 30.0  # a service that answers keeps time for a long pay run
    client.close()


def test_a_service_that_never_accepts_is_reported_within_five_seconds() -> None:
    fake = FakeTime()
    client = issuer_client(
        "http://192.0.2.1:8080",
        "iss_x",
        "secret",
        transport=never_answers(fake),
        clock=fake.clock,
        sleep=fake.sleep,
    )
    start = fake.now
    with pytest.raises(ServiceUnreachable) as caught:
        client.register_and_build_barcode({"payslip": "whatever"})
    assert fake.now - start < FIVE_SECONDS
    assert caught.value.reason == "no_answer"
    words = unreachable_words(caught.value)
    assert words is not None and "http://192.0.2.1:8080" in words and "did not answer" in words
    client.close()


def test_a_refused_connection_says_refused_and_names_the_address(dead_url: str) -> None:
    fake = FakeTime()
    client = issuer_client(dead_url, "iss_x", "secret", clock=fake.clock, sleep=fake.sleep)
    with pytest.raises(ServiceUnreachable) as caught:
        client.register_batch([{"service_reference": "x"}])  # idempotent: retried
    assert fake.now - 1000.0 < FIVE_SECONDS  # retries stop at the "unreachable" limit
    assert caught.value.reason == "refused" and caught.value.address == dead_url
    text = describe_error(caught.value)
    assert "refused" in text and dead_url in text and "did not answer" not in text
    client.close()


def test_the_issue_screen_names_a_dead_saved_address_at_once_and_on_issuing(
    qtbot: QtBot, demo_context: AppContext, dead_url: str, no_leaks: None
) -> None:
    assert demo_context.admin is not None
    made = demo_context.admin.admin_create_issuer("Harbour Payroll")
    save_local_issuer(demo_context.settings, demo_context.secrets, dead_url, "Harbour", made)
    context = dataclasses.replace(demo_context, issuer=None, issuer_info=None)
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    try:
        with qtbot.waitSignal(widget.issuer_panel.probed, timeout=10000) as probed:
            widget.issuer_panel.reload()  # as when the screen opens
        assert "refused" in probed.args[0] and dead_url in probed.args[0]
        widget.show()
        assert widget.issuer_panel.unreachable.isVisibleTo(widget)
        _, record, _ = sample_records()[1]
        widget.single.set_schema("nz.payslip.v2")
        widget.single.fill_example(record["payslip_non_pii"], NZ_PII)
        with qtbot.waitSignal(widget.single.failed, timeout=10000) as failed:
            widget.single.issue_button.click()
        assert "refused" in failed.args[0] and dead_url in failed.args[0]
        assert "did not answer in time" not in failed.args[0]
    finally:
        tasks.wait()
        widget.shutdown()
        widget.close()


def test_app_verify_says_refused_and_names_the_address(dead_url: str) -> None:
    payload = f"2|{'A' * 22}|{'A' * 40}"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = run_module(
        "app",
        "verify",
        payload,
        f"--service-url={dead_url}",
        "--client-id=x",
        "--client-secret=y",
        env=env,
    )
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("SERVICE_UNREACHABLE: ")
    assert "refused" in line and dead_url in line and "did not answer in time" not in line


def test_a_pay_run_against_a_dead_address_stops_saying_refused(
    qtbot: QtBot, demo_context: AppContext, dead_url: str, tmp_path: Path, no_leaks: None
) -> None:
    assert demo_context.admin is not None
    made = demo_context.admin.admin_create_issuer("Harbour Payroll")
    save_local_issuer(demo_context.settings, demo_context.secrets, dead_url, "Harbour", made)
    context = dataclasses.replace(demo_context, issuer=None, issuer_info=None)
    tasks = TaskRunner()
    widget = IssueScreen(context, tasks)
    qtbot.addWidget(widget)
    try:
        widget.tabs.setCurrentIndex(1)
        widget.payrun.run_file.setText(str(ROOT / "resources" / "sample_payrun.csv"))
        widget.payrun.run_out_dir.setText(str(tmp_path / "out"))
        with qtbot.waitSignal(widget.payrun.run_finished, timeout=20000) as finished:
            widget.payrun.run_button.click()
        text = finished.args[0]
        assert isinstance(text, str), text
        assert "refused" in text and dead_url in text
    finally:
        tasks.wait()
        widget.shutdown()
        widget.close()


@pytest.mark.parametrize("seed", range(8))
def test_the_desk_says_refused_within_one_and_a_half_seconds(dead_url: str, seed: int) -> None:
    """Issue 35: a desk's refused-connection verdict took 1.7-3.3 s (refusals retried with
    jittered backoff up to the 4 s deadline). The desk's client still retries a refusal, once
    or more, but only for VERIFY_REFUSED_AFTER: the fake clock (moved only by the client's own
    backoff sleeps; a refusal on loopback is immediate) reads at most 1 s, for every jitter."""
    fake = FakeTime()
    client = verifier_client(
        dead_url, "ver_x", "secret", dead_url, clock=fake.clock, sleep=fake.sleep, rng=Random(seed)
    )
    with pytest.raises(ServiceUnreachable) as caught:
        client.verify_payload(f"2|{'A' * 22}|{'A' * 40}")
    assert caught.value.reason == "refused" and caught.value.address == dead_url
    assert fake.sleeps, "a refusal is still tried again (a service may be restarting)"
    assert fake.now - 1000.0 <= VERIFY_REFUSED_AFTER < 1.5
    client.close()
