"""`service.hosting.server.start` leaves nothing open when it fails part-way.

The embedded service is started again after a failed start (the app's retry, a changed port in
Settings): a failure after the store opened used to leave the listening socket and the store
open, so the TinyDB store could not be opened again in the same process and the socket stayed
bound until the garbage collector found it (which warnings-as-errors now reports).
"""

from __future__ import annotations

import gc
import socket
from pathlib import Path

import pytest

from service.composition.instance import init_instance, open_store
from service.hosting.server import start


def test_a_start_that_fails_after_the_store_opened_closes_the_store_and_socket(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    init_instance(data_dir)
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    with pytest.raises(ValueError):
        # The server's own options are checked last, after the store has opened.
        start(data_dir, sock=listening, threads="many")  # type: ignore[arg-type]
    assert listening.fileno() == -1  # closed, not left to the garbage collector
    gc.collect()  # an unclosed socket or file here would be a ResourceWarning, an error
    with socket.create_server(("127.0.0.1", port)):
        pass  # the port is free again
    store = open_store(data_dir)  # and the store was closed: it opens again here
    store.close()
    running = start(data_dir)  # a second start works
    running.stop()
