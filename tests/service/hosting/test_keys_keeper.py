"""The request head's view of the token signing keys (issue 22's leftover, session 9).

The head is judged on waitress's I/O thread by the keys as last read (`check_token(...,
cached_keys=True)`), never by a store read. While that view is recent, a token signed by a key it
does not hold is refused there, as any request thread would refuse it; when it is not (the store
failing, or nothing re-reading it), such a key may have been rotated in elsewhere and the verdict
is left to the request's own check (`KeyNotYetKnown`). The server's keeper thread re-reads the
keys every half refresh period, so on a quiet server the view stays recent.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.composition.instance import (
    domain_for,
    init_instance,
    load_master_key,
    offline_config,
    open_store,
)
from service.domain import signing_keys
from service.domain.clock import SystemClock
from service.domain.errors import ServiceError
from service.domain.signing_keys import REFRESH_SECONDS, SigningKeys
from service.domain.tokens import KeyNotYetKnown
from service.hosting.keys_keeper import KeysKeeper
from service.hosting.server import start
from service.protocol.errors import ErrorCode
from service.storage.port import Store, StoreUnavailable

VERIFIER_SCOPE = "service:verifier"


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[tuple[Path, Store, bytes]]:
    data_dir = tmp_path / "data"
    init_instance(data_dir)
    store = open_store(data_dir)
    try:
        yield data_dir, store, load_master_key(data_dir)
    finally:
        store.close()


def _forged() -> str:
    return jwt.encode(
        {"sub": "someone", "scope": VERIFIER_SCOPE, "exp": 2**40},
        Ed25519PrivateKey.generate(),
        algorithm="EdDSA",
        headers={"kid": "made-up-key"},
    )


def test_the_keys_are_recent_only_after_a_read(instance: tuple[Path, Store, bytes]) -> None:
    _, store, master_key = instance
    now = [1000.0]
    keys = SigningKeys(store, master_key, SystemClock(), 300, monotonic=lambda: now[0])
    assert keys.recently_read()  # read when made
    now[0] += 2 * REFRESH_SECONDS
    assert not keys.recently_read()
    keys.refresh()
    assert keys.recently_read()
    now[0] += 2 * REFRESH_SECONDS
    store.close()  # the store fails now: a failed re-read is no read
    with pytest.raises(Exception):  # noqa: B017 - whatever a closed store raises
        keys.refresh()
    assert not keys.recently_read()


def test_an_unknown_key_is_refused_from_cached_keys_only_while_they_are_recent(
    instance: tuple[Path, Store, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, store, master_key = instance
    tokens = domain_for(store, offline_config(master_key)).tokens
    forged = f"Bearer {_forged()}"
    with pytest.raises(ServiceError) as refused:
        tokens.check_token(forged, VERIFIER_SCOPE, cached_keys=True)
    assert refused.value.code is ErrorCode.UNAUTHORIZED
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0.0)  # no view is recent any more
    with pytest.raises(KeyNotYetKnown):
        tokens.check_token(forged, VERIFIER_SCOPE, cached_keys=True)
    with pytest.raises(ServiceError) as refused:  # a request thread reads the keys and refuses
        tokens.check_token(forged, VERIFIER_SCOPE)
    assert refused.value.code is ErrorCode.UNAUTHORIZED


def test_the_keeper_reads_again_after_a_failing_store_and_stops() -> None:
    calls: list[int] = []
    again = threading.Event()

    def refresh() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise StoreUnavailable("the database refuses connections")
        again.set()

    keeper = KeysKeeper(refresh, every=0.001)
    keeper.start()
    try:
        assert again.wait(30), "the keeper stopped after the store failed once"
    finally:
        keeper.stop()
    assert keeper.ended(timeout=30)


def test_a_quiet_server_still_refuses_a_forged_token_from_its_head(
    instance: tuple[Path, Store, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing but the keeper reads the keys for several refresh periods; a forged token with a
    10 MiB body declared is still refused from its head, before a byte of the body is sent."""
    data_dir, store, _ = instance
    store.close()
    monkeypatch.setattr(signing_keys, "REFRESH_SECONDS", 0.5)  # the keeper: every 0.25 s
    running = start(data_dir)
    try:
        assert running.keeper is not None
        assert running.keeper.rounds_later(6, timeout=60)  # 1.5 s: beyond two periods
        host, port = running.url.removeprefix("http://").split(":")
        head = (
            f"POST /v1/verifications/payload HTTP/1.1\r\nHost: t\r\n"
            f"Authorization: Bearer {_forged()}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10 * 1024 * 1024}\r\n\r\n"
        )
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head.encode())
            answer = sock.recv(65536).decode("latin-1")
        assert answer.startswith("HTTP/1.1 401 "), answer[:200]
    finally:
        running.stop()


def test_a_server_keeps_its_keys_recent_until_it_stops(instance: tuple[Path, Store, bytes]) -> None:
    data_dir, store, _ = instance
    store.close()  # the server opens the directory's store itself
    running = start(data_dir)
    try:
        assert running.keeper is not None and running.keeper.alive
    finally:
        running.stop()
    assert running.keeper.ended(timeout=30)  # it ends only when asked to stop
