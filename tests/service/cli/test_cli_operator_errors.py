"""Operator mistakes at `python -m service` and `python -m app` end in one plain line (issue 8).

Each case is something a new operator really does: initialise a second data directory against a
database that already holds an instance, start with another instance's master key, forget the
PostgreSQL extra, mistype the database port, start a second server on a taken port. The answer is
always one `error: ...` line on stderr, a non-zero exit, no traceback, and nothing changed. The
mistake is always a real command; the instance a case starts from is made in-process, by the
function `init` calls.
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from service.composition.instance import init_instance
from tests.commands import run_module
from tests.service.cli.test_cli import ROOT, assert_one_line_error, cli, one_json_object
from tests.service.storage.test_store_postgres import database_url, schema_url  # noqa: F401 - fixtures

WRONG_KEY_LINE = (
    "error: the master key does not open this store: the data directory (or PAYSLIP_MASTER_KEY) "
    "belongs to another instance; use the one the store was initialised with"
)
WORKERS_LINE = (
    "error: --workers above 1 needs PostgreSQL: set PAYSLIP_DATABASE_URL "
    "(or pass --store postgres --database-url URL)"
)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _settings_rows(url: str) -> list[tuple[object, ...]]:
    """The instance secrets (wrapped) and other settings the database holds."""
    with psycopg.connect(url) as conn:
        return sorted(conn.execute("SELECT * FROM settings").fetchall())


@pytest.mark.postgres
def test_init_against_a_database_that_holds_an_instance_refuses_and_changes_nothing(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
) -> None:
    env = {"PAYSLIP_DATABASE_URL": schema_url, "PAYSLIP_LOG_DIR": str(tmp_path / "logs")}
    init_instance(tmp_path / "first", "postgres", schema_url)  # what `init` does, in-process
    before = _settings_rows(schema_url)

    second_dir = tmp_path / "second"
    again = cli("init", "--data-dir", str(second_dir), env=env)
    assert_one_line_error(again.returncode, again.stdout, again.stderr)
    assert again.stderr.strip() == (
        "error: the database already holds an instance; use its data directory (or its "
        "PAYSLIP_MASTER_KEY) with `serve` and `admin`, or point PAYSLIP_DATABASE_URL at an "
        "empty database"
    )
    assert not second_dir.exists()  # no master key, no folder: a corrected retry just works
    assert _settings_rows(schema_url) == before
    listed = cli("admin", "--data-dir", str(tmp_path / "first"), "list", env=env)
    assert listed.returncode == 0, listed.stderr

    # An existing but empty directory is left as it was, too.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(*_outcome(cli("init", "--data-dir", str(empty), env=env)))
    assert _files(empty) == []


def _outcome(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


@pytest.mark.postgres
def test_another_instances_master_key_is_named_as_the_problem(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
) -> None:
    env = {"PAYSLIP_DATABASE_URL": schema_url}
    init_instance(tmp_path / "real", "postgres", schema_url)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    key = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    (foreign / "master.key").write_text(key + "\n")
    for args in (
        ("admin", "--data-dir", str(foreign), "list"),
        ("admin", "--data-dir", str(foreign), "create-verifier", "--name", "Desk"),
        ("serve", "--data-dir", str(foreign), "--port", "0"),
        ("serve", "--data-dir", str(foreign), "--port", "0", "--workers", "2"),
    ):
        done = cli(*args, env=env)
        assert_one_line_error(*_outcome(done))
        assert done.stderr.strip() == WRONG_KEY_LINE, args
    listed = one_json_object(
        cli("admin", "--data-dir", str(tmp_path / "real"), "list", env=env).stdout
    )
    assert listed["verifiers"] == []  # the refused create-verifier stored nothing


def test_workers_need_postgresql_chosen_the_same_way_as_everywhere(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    init_instance(data_dir, "tinydb")
    env = {"PAYSLIP_DATABASE_URL": ""}
    done = cli("serve", "--data-dir", str(data_dir), "--workers", "4", "--port", "0", env=env)
    assert_one_line_error(*_outcome(done))
    assert done.stderr.strip() == WORKERS_LINE


@pytest.mark.postgres
def test_workers_start_when_the_environment_selects_postgresql(
    tmp_path: Path,
    schema_url: str,  # noqa: F811
) -> None:
    """`PAYSLIP_DATABASE_URL` alone selects PostgreSQL for `serve --workers`, as it does for
    `init` (workers also need Redis for their shared limits: PAYSLIP_REDIS_URL)."""
    redis_url = os.environ.get("PAYSLIP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    env = {**os.environ, "PAYSLIP_DATABASE_URL": schema_url, "PAYSLIP_REDIS_URL": redis_url}
    data_dir = tmp_path / "d"
    init_instance(data_dir, "postgres", schema_url)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service",
            "serve",
            "--data-dir",
            str(data_dir),
            "--port",
            "0",
            "--workers",
            "2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), proc.stderr
    finally:
        proc.terminate()  # drains: a worker still booting is waited for, up to the 30 s grace
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def init_through(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`init --data-dir <tmp>/d` through `code`: the CLI's main, run after `code` has changed the
    module under test (a failure no real input can provoke any more)."""
    return subprocess.run(
        [sys.executable, "-c", code, "init", "--data-dir", str(tmp_path / "d")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_missing_postgresql_extra_says_which_extra_to_install(tmp_path: Path) -> None:
    """The import of psycopg fails exactly as on an install without the `postgres` extra."""
    code = (
        "import sys; sys.modules['psycopg'] = None; "
        "from service.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    done = init_through(
        code, tmp_path, PAYSLIP_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/x"
    )
    assert_one_line_error(*_outcome(done))
    assert done.stderr.strip() == (
        "error: PostgreSQL support is not installed: pip install 'payslip-verify[postgres]'"
    )
    assert not (tmp_path / "d").exists()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/nothing?connect_timeout=2"
    for args in (("init", "--data-dir", str(tmp_path / "d")), ("admin", "list")):
        done = cli(*args, env={"PAYSLIP_DATABASE_URL": url, "PAYSLIP_DATA_DIR": str(tmp_path)})
        assert_one_line_error(*_outcome(done))
        assert done.stderr.startswith("error: cannot use the PostgreSQL database"), done.stderr
        assert "check PAYSLIP_DATABASE_URL" in done.stderr
    assert not (tmp_path / "d").exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    assert cli("init", "--data-dir", str(data_dir)).returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("serve", "--data-dir", str(data_dir), "--port", str(port))
    assert_one_line_error(*_outcome(done))
    assert done.stderr.strip() == (
        f"error: port {port} on 127.0.0.1 is already in use: stop the other server or choose "
        "another port (--port 0 picks a free one)"
    )


def test_an_unusable_data_directory_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for args in (
        ("init", "--data-dir", str(a_file / "x")),
        ("admin", "--data-dir", str(a_file), "list"),
    ):
        done = cli(*args)
        assert_one_line_error(*_outcome(done))
    assert a_file.read_text() == "not a folder"


def test_a_damaged_master_key_file_is_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    assert cli("init", "--data-dir", str(data_dir)).returncode == 0
    (data_dir / "master.key").write_bytes(b"\xff\xfe not a key")
    done = cli("admin", "--data-dir", str(data_dir), "list")
    assert_one_line_error(*_outcome(done))
    assert done.stderr.strip() == (
        f"error: the master key in {data_dir / 'master.key'} is not 32 bytes of base64url"
    )


def test_an_unforeseen_failure_is_one_line_naming_the_log(tmp_path: Path) -> None:
    """No real input reaches this path once every known condition has its sentence, so the
    failure is provoked by replacing init with a function that raises."""
    code = (
        "import sys, service.cli.main as m\n"
        "def boom(*a, **k):\n    raise RuntimeError('internal detail')\n"
        "m.init_instance = boom\n"
        "sys.exit(m.main(sys.argv[1:]))"
    )
    logs = tmp_path / "logs"
    done = init_through(code, tmp_path, PAYSLIP_LOG_DIR=str(logs))
    assert_one_line_error(*_outcome(done))
    log = logs / "payslip-verify-errors.log"
    assert done.stderr.strip() == (
        f"error: unexpected failure (RuntimeError); the details are in {log}"
    )
    assert "internal detail" not in done.stderr
    text = log.read_text()
    assert "Traceback" in text and "internal detail" in text
    assert (log.stat().st_mode & 0o777) == 0o600


def test_app_commands_never_print_a_traceback(tmp_path: Path) -> None:
    """`python -m app` forwards `service ...` and fails in one line like the service CLI."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PAYSLIP_LOG_DIR": str(tmp_path)}
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for args in (
        ["service", "admin", "--data-dir", str(a_file), "list"],
        ["issue-run", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "out")],
    ):
        done = run_module("app", *args, env=env)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
