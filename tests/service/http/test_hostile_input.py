"""Bodies built to cost the server, and the small protocol corners of issue 15 (items 3 and 5).

Every case goes to a real server on loopback: a million keys, deep nesting, thousands of bad
fields, duplicate keys, a lowercase `bearer` scheme, and a SIGTERM that must leave a compacted
journal behind.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from testbed import web
from testbed.factories import sealed_record
from tests.service.cli.test_cli import Serve, cli, token
from tests.service.conftest import BOTH_STORES, LiveService
from tests.service.http.http_helpers import expect_error

LIVE_STORES = BOTH_STORES


def _raw(live: LiveService, path: str, raw: bytes, bearer: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    return web.post(f"{live.url}{path}", content=raw, headers=headers, timeout=60)


# --- item 3: one request cannot cost gigabytes ---------------------------------------------


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"


def _short_key(n: int) -> str:
    return "".join(_ALPHABET[(n >> shift) & 63] for shift in (18, 12, 6, 0))


def test_a_million_keys_stop_at_the_first_overfull_object(live: LiveService) -> None:
    record = sealed_record(live.issuer["encryption_key"]).body
    keys = ",".join(f'"{_short_key(i)}":0' for i in range(1_000_000))
    envelope = json.dumps({"records": [record]}).encode()
    raw = envelope[:-2] + b',{"x":{' + keys.encode() + b"}}]}"
    assert 8_000_000 < len(raw) < 10 * 1024 * 1024  # inside the batch byte limit
    reply = _raw(live, "/v1/registerNonPIIBatch", raw, live.issuer_token())
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert "more than 400000 keys and strings" in body["detail"]  # refused before parsing
    assert len(reply.content) < 2_000  # not a 45 MB list of every key
    # The whole request was refused: the valid record in it was not stored.
    assert live.post("/v1/registerNonPII", record, live.issuer_token()).status_code == 201


def test_an_object_with_too_many_keys_is_refused_while_parsing(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    sealed.body["payslip_non_pii"].update({f"k{i}": 0 for i in range(300)})
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert "an object has more than 256 keys" in body["detail"]


def test_field_errors_are_capped_with_a_count_of_the_rest(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    sealed.body["payslip_non_pii"].update({f"unknown_{i}": 1 for i in range(200)})
    reply = live.post("/v1/registerNonPII", sealed.body, live.issuer_token())
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert len(body["field_errors"]) == 50
    assert "200 problems in all; the first 50 are listed" in body["detail"]


def test_a_batch_records_detail_stays_one_short_line(live: LiveService) -> None:
    bad = sealed_record(live.issuer["encryption_key"])
    bad.body["payslip_non_pii"].update({f"unknown_{i}": 1 for i in range(200)})
    good = sealed_record(live.issuer["encryption_key"])
    reply = live.post(
        "/v1/registerNonPIIBatch", {"records": [bad.body, good.body]}, live.issuer_token()
    )
    assert reply.status_code == 200, reply.text
    first, second = reply.json()["results"]
    assert first["status"] == "error" and first["code"] == "VALIDATION_FAILED"
    assert first["detail"].startswith("payslip_non_pii.unknown_")
    assert "200 problems in all" in first["detail"] and len(first["detail"]) < 200
    assert second["status"] == "created"


def test_deep_nesting_is_refused(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    nested: object = 1
    for _ in range(40):
        nested = {"a": [nested]}
    sealed.body["payslip_non_pii"]["earnings"] = [nested]
    body = expect_error(
        live.post("/v1/registerNonPII", sealed.body, live.issuer_token()), 400, "VALIDATION_FAILED"
    )
    assert "nests deeper than" in body["detail"]
    very_deep = b"[" * 10_000 + b"]" * 10_000
    reply = _raw(live, "/v1/verifications/payload", very_deep, live.verifier_token())
    assert expect_error(reply, 400, "VALIDATION_FAILED")["detail"].endswith(
        "the body nests deeper than 24 levels"
    )


# --- item 5: duplicate keys, the bearer scheme -----------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"barcode": "2|x|y", "barcode": "2|z|w"}',
        b'{"barcode": {"a": 1, "a": 2}}',
    ],
)
def test_duplicate_keys_are_refused(live: LiveService, raw: bytes) -> None:
    reply = _raw(live, "/v1/verifications/payload", raw, live.verifier_token())
    body = expect_error(reply, 400, "VALIDATION_FAILED")
    assert "repeats the key" in body["detail"]
    assert [e["path"] for e in body["field_errors"]] == [""]


def test_duplicate_keys_in_a_registration_store_nothing(live: LiveService) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    text = json.dumps(sealed.body)
    raw = ('{"schema": "nz.payslip.v1", ' + text[1:]).encode()  # `schema` twice
    reply = _raw(live, "/v1/registerNonPII", raw, live.issuer_token())
    expect_error(reply, 400, "VALIDATION_FAILED")
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(live: LiveService, scheme: str) -> None:
    sealed = sealed_record(live.issuer["encryption_key"])
    assert live.post("/v1/registerNonPII", sealed.body, live.issuer_token()).status_code == 201
    reply = web.post(
        f"{live.url}/v1/verifications/payload",
        json={"barcode": sealed.payload},
        headers={"Authorization": f"{scheme} {live.verifier_token()}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Token x", "bearerx y"])
def test_other_schemes_and_empty_tokens_stay_unauthorized(live: LiveService, header: str) -> None:
    reply = web.post(
        f"{live.url}/v1/verifications/payload",
        json={"barcode": "2|x|y"},
        headers={"Authorization": header},
        timeout=30,
    )
    expect_error(reply, 401, "UNAUTHORIZED")


# --- item 5: SIGTERM compacts the journal -------------------------------------------------


def _snapshot_and_last_commit(db: Path) -> tuple[int, int]:
    """(the last commit folded into the snapshot, the last commit in the journal)."""
    lines = (db / "journal.jsonl").read_text().splitlines()
    base = int(json.loads(lines[0])["base"])
    last = max([base] + [int(json.loads(line)["seq"]) for line in lines[1:]])
    return base, last


def test_sigterm_closes_the_store_and_compacts_its_journal(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    assert cli("init", "--data-dir", str(data_dir)).returncode == 0
    made = cli("admin", "--data-dir", str(data_dir), "create-issuer", "--name", "Acme")
    issuer = json.loads(made.stdout)
    server = Serve("--data-dir", str(data_dir))
    try:
        url = server.wait_listening()
        bearer = token(url, issuer["client_id"], issuer["client_secret"])
        for _ in range(20):
            body = sealed_record(issuer["encryption_key"]).body
            reply = web.post(
                f"{url}/v1/registerNonPII",
                json=body,
                headers={"Authorization": f"Bearer {bearer}"},
                timeout=30,
            )
            assert reply.status_code == 201
        folded, last = _snapshot_and_last_commit(data_dir / "db")
        assert folded < last  # twenty commits only in the journal so far
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0
    finally:
        server.stop()
    folded_after, last_after = _snapshot_and_last_commit(data_dir / "db")
    assert folded_after == last_after == last  # the snapshot holds every commit
    listed = json.loads(cli("admin", "--data-dir", str(data_dir), "list").stdout)
    assert json.dumps(listed).count(issuer["issuer_id"]) >= 1
