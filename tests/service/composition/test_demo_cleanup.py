"""A demo instance lives in a temporary directory made for it (its invented payslips, its master
key); stopping it removes that directory, so demo runs of the app, `serve --demo` and the tests
do not pile up instances in the temporary folder."""

from __future__ import annotations

from pathlib import Path

from service.hosting.server import start, start_demo
from testbed import web


def test_stopping_a_demo_removes_its_directory() -> None:
    running = start_demo()
    folder = running.temporary_dir
    assert folder is not None and (folder / "master.key").exists()
    assert web.get(f"{running.url}/healthz", timeout=10).status_code == 200
    running.stop()
    assert not folder.exists()


def test_a_demo_does_not_own_a_directory_it_did_not_make(tmp_path: Path) -> None:
    running = start(tmp_path / "office", demo=True, init_if_missing=True)
    assert running.temporary_dir is None
    running.stop()
    assert (tmp_path / "office" / "master.key").exists()
