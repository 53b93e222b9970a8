"""`serve` on a host other computers reach (issue 37 #2): HTTPS, or plain HTTP only when asked
for in so many words, with a warning naming what crosses the network in clear; HSTS on every
HTTPS answer; the admin API and `/metrics` on loopback only unless `--admin-network`; the
address printed is the one really listened on.

Real `python -m service serve` processes on every interface; "another computer" is this one
reached at its own network address (the peer address the server sees is then not loopback).
"""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.composition.instance import init_instance
from testbed import web
from tests.service.cli.test_cli import Serve, cli
from tests.service.hosting.test_tls_serve import self_signed


def _network_address() -> str:
    """This computer's address on its network (the interface of the default route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the interface
        address = str(probe.getsockname()[0])
    assert not address.startswith("127."), "this computer has no network address to test with"
    return address


def _listening(serve: Serve, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no 'listening on' line; stderr: {''.join(serve.stderr)}"
        try:
            line = serve.lines.get(timeout=min(remaining, 0.5))
        except queue.Empty:
            assert serve.proc.poll() is None, f"exited early: {''.join(serve.stderr)}"
            continue
        if line.startswith("listening on "):
            return line.split()[-1]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    created = tmp_path / "data"
    admin = init_instance(created)
    (tmp_path / "admin.txt").write_text(
        f"{admin['admin_client_id']} {admin['admin_client_secret']}"
    )
    return created


def _admin(data_dir: Path) -> tuple[str, str]:
    client_id, secret = (data_dir.parent / "admin.txt").read_text().split()
    return client_id, secret


@contextlib.contextmanager
def _serving(*args: str) -> Iterator[tuple[Serve, str]]:
    serve = Serve("--host", "0.0.0.0", *args)
    try:
        yield serve, _listening(serve)
    finally:
        serve.stop()


def _admin_overview(base: str, data_dir: Path, audience: str, **kwargs: object) -> int:
    client_id, secret = _admin(data_dir)
    granted = web.post(
        f"{base}/oauth/token",
        json={
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": secret,
            "audience": audience,
        },
        timeout=10,
        **kwargs,  # type: ignore[arg-type]
    )
    assert granted.status_code == 200, granted.text
    token = granted.json()["access_token"]
    reply = web.get(
        f"{base}/admin/v1/overview",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
        **kwargs,  # type: ignore[arg-type]
    )
    return int(reply.status_code)


def test_plain_http_beyond_loopback_is_refused_without_insecure_http(data_dir: Path) -> None:
    done = cli("serve", "--data-dir", str(data_dir), "--host", "0.0.0.0", "--port", "0")
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --host 0.0.0.0 is reachable"), lines
    assert "--tls-cert" in lines[0] and "--insecure-http" in lines[0]


def test_insecure_http_warns_and_keeps_the_admin_api_on_loopback(data_dir: Path) -> None:
    address = _network_address()
    with _serving("--data-dir", str(data_dir), "--port", "0", "--insecure-http") as (serve, url):
        match = re.fullmatch(r"http://0\.0\.0\.0:(\d+)", url)
        assert match, url  # the address really bound: every interface, not 127.0.0.1
        port = int(match.group(1))
        warning = "".join(serve.stderr)
        assert "warning: serving plain HTTP on 0.0.0.0" in warning
        for named in ("employee names", "bank accounts", "client secrets", "tokens", "pairing"):
            assert named in warning, named
        here, there = f"http://127.0.0.1:{port}", f"http://{address}:{port}"
        audience = here  # the public URL defaults to this computer's own address
        assert _admin_overview(here, data_dir, audience) == 200
        assert _admin_overview(there, data_dir, audience) == 403
        assert web.get(f"{there}/healthz", timeout=10).status_code == 200  # the rest answers
        # The operator's figures stay on this computer too, refused as the service refuses.
        assert web.get(f"{here}/metrics", timeout=10).status_code == 200
        refused = web.get(f"{there}/metrics", timeout=10)
        assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"
        assert "--admin-network" in refused.json()["detail"]
        assert refused.headers["X-Content-Type-Options"] == "nosniff"
        assert "X-Request-ID" in refused.headers
        assert "payslip_http_requests" not in refused.text
        assert web.get(f"{there}/openapi.json", timeout=10).status_code == 200  # public docs


def test_admin_network_opens_the_admin_api(data_dir: Path) -> None:
    address = _network_address()
    with _serving(
        "--data-dir", str(data_dir), "--port", "0", "--insecure-http", "--admin-network"
    ) as (_, url):
        port = url.rsplit(":", 1)[1]
        audience = f"http://127.0.0.1:{port}"
        assert _admin_overview(f"http://{address}:{port}", data_dir, audience) == 200
        metrics = web.get(f"http://{address}:{port}/metrics", timeout=10)
        assert metrics.status_code == 200 and "payslip_http_requests" in metrics.text


def _head(port: int, context: ssl.SSLContext, request: bytes) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw) as sock,
    ):
        sock.sendall(request)
        answer = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in answer and (chunk := sock.recv(65536)):
                answer += chunk
    return answer.partition(b"\r\n\r\n")[0]


def test_https_beyond_loopback_with_hsts_on_every_answer(data_dir: Path, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    args = (
        "--data-dir",
        str(data_dir),
        "--port",
        "0",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
    )
    with _serving(*args) as (serve, url):
        assert re.fullmatch(r"https://0\.0\.0\.0:\d+", url), url
        assert "plain HTTP" not in "".join(serve.stderr)
        port = int(url.rsplit(":", 1)[1])
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        requests = {
            "200": b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "404": b"GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "refused from the head": b"POST /v1/verifications/payload HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 20000\r\n\r\n",
            "malformed": b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        }
        heads = {name: _head(port, context, request) for name, request in requests.items()}
        assert heads["refused from the head"].startswith(b"HTTP/1.1 401"), heads
        lacking = [
            name
            for name, head in heads.items()
            if b"strict-transport-security: max-age=31536000" not in head.lower()
        ]
        assert lacking == [], heads


def test_loopback_http_has_no_hsts_and_prints_its_address(data_dir: Path) -> None:
    serve = Serve("--data-dir", str(data_dir))
    try:
        url = serve.wait_listening()
        reply = web.get(f"{url}/healthz", timeout=10)
        assert "strict-transport-security" not in reply.headers
        assert "plain HTTP" not in "".join(serve.stderr)
    finally:
        serve.stop()


def test_workers_refuse_tls_options(data_dir: Path, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    done = cli(
        "serve",
        "--data-dir",
        str(data_dir),
        "--workers",
        "2",
        "--store",
        "postgres",
        "--database-url",
        "postgresql://127.0.0.1:5432/nothing_here",
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
    )
    assert done.returncode != 0
    assert done.stderr.startswith("error: --tls-cert/--tls-key serve HTTPS in one process")
