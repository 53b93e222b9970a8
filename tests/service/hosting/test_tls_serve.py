"""The embedded service serves HTTPS with an operator's certificate (issue 27, item 2).

A real self-signed certificate made with `cryptography`, a real waitress server on loopback, and
real TLS clients (httpx with the certificate as its only trust anchor, and the app's own
ApiClient pinned to it): health, a token and a large body all cross TLS intact, and plain HTTP to
the TLS port gets no answer.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.api import ApiClient
from app.api.probe import probe
from app.api.trust import public_trust, trust
from service.hosting.server import Running, start_demo
from service.hosting.tls import TlsError, server_context
from testbed import web


def self_signed(folder: Path, name: str = "verify.office.test") -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_service(tmp_path: Path) -> Iterator[tuple[Running, Path]]:
    cert_file, key_file = self_signed(tmp_path)
    running = start_demo(tls=server_context(cert_file, key_file))
    try:
        yield running, cert_file
    finally:
        running.stop()


def test_https_health_token_and_a_large_body(tls_service: tuple[Running, Path]) -> None:
    running, cert_file = tls_service
    assert running.url.startswith("https://127.0.0.1:")
    with httpx.Client(verify=web.pinned_client_context(cert_file)) as client:
        health = client.get(running.url + "/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        # ~200 KB: many TLS records, some arriving split across reads.
        big = client.post(running.url + "/oauth/token", content=b"x" * 200_000)
        assert big.status_code in (400, 413, 415)
    demo = running.demo
    assert demo is not None
    pinned = web.pinned_client_context(cert_file)
    verifier = demo.verifier
    with ApiClient(
        running.url,
        verifier.client_id,
        verifier.client_secret,
        verifier_url=running.url,
        verify=pinned,
    ) as api:
        answer = api.verify_payload(demo.samples[0].payload)
    assert answer.verified


def test_a_stop_with_an_idle_kept_alive_tls_connection_drains_cleanly(tmp_path: Path) -> None:
    """The drain looks at idle connections for a next request; on TLS it cannot peek at the
    socket (the serving thread used to die with ValueError, an unhandled thread exception that
    pytest turns into an error here)."""
    cert_file, key_file = self_signed(tmp_path)
    running = start_demo(tls=server_context(cert_file, key_file))
    with httpx.Client(verify=web.pinned_client_context(cert_file)) as client:
        assert client.get(running.url + "/healthz").status_code == 200
        running.stop()  # the connection is still open and idle (keep-alive)
    assert running.thread is not None and not running.thread.is_alive()


def test_plain_http_to_the_tls_port_gets_no_answer(tls_service: tuple[Running, Path]) -> None:
    running, _ = tls_service
    with pytest.raises(httpx.HTTPError), web.client() as client:
        client.get(running.url.replace("https://", "http://") + "/healthz", timeout=5)


def test_a_client_trusting_another_certificate_refuses_the_server(
    tls_service: tuple[Running, Path], tmp_path: Path
) -> None:
    running, _ = tls_service
    other = tmp_path / "other"
    other.mkdir()
    foreign, _ = self_signed(other, "elsewhere.test")
    # A Client of its own: tests/service/conftest.py swaps httpx.get for a no-verify client.
    with (
        pytest.raises(httpx.ConnectError),
        httpx.Client(verify=web.pinned_client_context(foreign)) as c,
    ):
        c.get(running.url + "/healthz", timeout=5)


def test_a_key_that_does_not_match_is_a_plain_error(tmp_path: Path) -> None:
    cert_file, _ = self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, wrong_key = self_signed(other)
    with pytest.raises(TlsError, match="matching PEM pair"):
        server_context(cert_file, wrong_key)
    with pytest.raises(TlsError, match="no file"):
        server_context(tmp_path / "missing.pem", wrong_key)


def test_the_server_keeps_serving_after_a_client_hangs_up_mid_handshake(
    tls_service: tuple[Running, Path],
) -> None:
    running, cert_file = tls_service
    port = int(running.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(b"\x16\x03\x01\x00")  # half a ClientHello record header, then gone
    with httpx.Client(verify=web.pinned_client_context(cert_file)) as client:
        assert client.get(running.url + "/healthz").status_code == 200


def test_the_shared_public_trust_still_takes_the_environments_certificates(
    tls_service: tuple[Running, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clients share one public trust (app.api.trust), built once per process; it is still
    httpx's default, so a certificate named by SSL_CERT_FILE is trusted without pinning, and a
    pinned context passes through unchanged."""
    running, cert_file = tls_service
    demo = running.demo
    assert demo is not None
    public_trust.cache_clear()
    try:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        assert trust(True) is trust(True)
        assert probe(running.url) is None
        verifier = demo.verifier
        with ApiClient(
            running.url, verifier.client_id, verifier.client_secret, verifier_url=running.url
        ) as api:
            assert api.verify_payload(demo.samples[0].payload).verified
        public_trust.cache_clear()
        monkeypatch.delenv("SSL_CERT_FILE")
        assert probe(running.url) is not None  # certifi's authorities do not know this one
        pinned = web.pinned_client_context(cert_file)
        assert trust(pinned) is pinned and trust(False) is False
    finally:
        public_trust.cache_clear()
