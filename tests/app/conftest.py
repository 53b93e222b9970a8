"""App fixtures: a real embedded demo service, settings in tmp_path, and leak checks.

Every GUI test gets a fresh config directory (no keyring, no user settings) and fails if it leaves
top-level windows open or background threads running.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from app.commands.run import verify_command
from app.settings.desk import SecretStore, Settings
from app.shell.context import AppContext, start_demo_context
from tests.commands import run_in_process

if TYPE_CHECKING:
    from tests.app.ui.dialog_answers import DialogAnswers
    from tests.app.ui.file_dialogs import FileDialogs

Verify = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("PAYSLIP_CONFIG_DIR", str(folder))
    monkeypatch.setenv("PAYSLIP_NO_KEYRING", "1")
    return folder


@pytest.fixture
def demo_context(config_dir: Path) -> Iterator[AppContext]:
    context = start_demo_context(Settings(), SecretStore(config_dir, use_keyring=False))
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def no_leaks(qapp: object) -> Iterator[None]:
    """Fail a GUI test that leaves visible windows or extra non-daemon threads behind."""
    from PySide6.QtWidgets import QApplication

    before = {t.ident for t in threading.enumerate()}
    yield
    QApplication.processEvents()
    visible = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    for widget in visible:
        widget.close()
    leaked = [
        t for t in threading.enumerate() if t.ident not in before and t.is_alive() and not t.daemon
    ]
    assert not visible, f"test left windows open: {[type(w).__name__ for w in visible]}"
    assert not leaked, f"test left threads running: {[t.name for t in leaked]}"


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    return folder


@pytest.fixture
def verify(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Verify:
    """`python -m app verify ARGS` through the same function (`verify_command`) in this process:
    the same exit code, stdout and stderr, without a process start's second of CPU."""

    def call(
        args: list[str], env_extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_in_process(
            verify_command, *args, capsys=capsys, monkeypatch=monkeypatch, env=env_extra
        )

    return call


@pytest.fixture
def file_dialogs(qapp: object) -> Iterator[FileDialogs]:
    """The app's real file dialogs, opened with the app's event filters installed (as `run_gui`
    installs them) and answered through their widgets; every dialog that opened was expected."""
    from app.ui import accessible_names
    from tests.app.ui.file_dialogs import FileDialogs

    accessible_names.install()
    dialogs = FileDialogs()
    try:
        yield dialogs
    finally:
        dialogs.close()
    assert dialogs.unanswered == 0, f"unexpected file dialogs: {dialogs.seen}"


@pytest.fixture
def dialog_answers(qapp: object) -> Iterator[DialogAnswers]:
    """The app's real modal dialogs (PIN, set PIN, settings), opened with the app's event filters
    installed (as `run_gui` installs them) and answered through their widgets."""
    from app.ui import accessible_names
    from tests.app.ui.dialog_answers import DialogAnswers

    accessible_names.install()
    answers = DialogAnswers()
    try:
        yield answers
    finally:
        answers.close()
    assert answers.unexpected == 0, f"unexpected dialogs: {answers.kinds}"


@pytest.fixture(autouse=True)
def pin_kdf_at_test_cost(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kiosk PIN's scrypt at N=2^12 instead of 2^17: the same code and format, a second of
    CPU less for each of the twenty-odd PINs set or typed across the tests. The modules marked
    `real_pin_cost` (tests/app/shell/test_pin_hash.py) hold the real cost."""
    if request.node.get_closest_marker("real_pin_cost") is None:
        from app.settings import pin_hash

        monkeypatch.setattr(pin_hash, "SCRYPT_N", 2**12)
