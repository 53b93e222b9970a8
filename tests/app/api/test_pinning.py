"""A desk trusts the office service's certificate by its fingerprint only (issue 37): a server
showing any other certificate gets a failed handshake and not one byte of a request, so never a
desk's secret; the office network's own service makes its certificate on first use and speaks
HTTPS with it, and a desk given its fingerprint verifies through it."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.api.client import ApiClient
from app.api.errors import UNREACHABLE_WORDS, ApiError, ServiceUnreachable
from app.api.pinning import fingerprint_words, normalize_fingerprint, pinned_context
from app.api.probe import probe
from app.settings.desk import SecretStore, Settings
from app.shell.context import desk_options, office_fingerprint, start_embedded_context
from app.shell.office_tls import certificate_fingerprint, make_self_signed
from service.hosting.tls import server_context

SECRET = "desk-secret-that-must-never-leave"


class Recorder:
    """A real TLS server that records every byte a client sends after the handshake."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = server_context(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}"
        self.received = bytearray()
        self.handshakes = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while not self.done.is_set():
                conn, _ = self.listener.accept()
                with conn:
                    conn.settimeout(10)
                    try:
                        tls = self.context.wrap_socket(conn, server_side=True)
                    except (ssl.SSLError, OSError):
                        continue
                    self.handshakes += 1
                    with tls, contextlib.suppress(ssl.SSLError, OSError):
                        self._one_request(tls)
        except OSError:
            return

    def _one_request(self, tls: ssl.SSLSocket) -> None:
        """Read one request (head and body), keep its bytes, answer 503 and hang up."""
        got = bytearray()
        while chunk := tls.recv(65536):
            got += chunk
            head, sep, body = bytes(got).partition(b"\r\n\r\n")
            if sep:
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                if len(body) >= length:
                    break
        self.received += got
        if got:
            tls.sendall(b"HTTP/1.1 503 No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self) -> None:
        self.done.set()
        with socket.create_connection(self.listener.getsockname()):  # wakes the accept up
            pass
        self.thread.join(timeout=10)
        self.listener.close()


@pytest.fixture
def two_certificates(tmp_path: Path) -> Iterator[tuple[tuple[Path, Path], tuple[Path, Path]]]:
    yield (
        make_self_signed(tmp_path / "office", ["localhost", "127.0.0.1"]),
        make_self_signed(tmp_path / "impostor", ["localhost", "127.0.0.1"]),
    )


def sign_in(url: str, fingerprint: str) -> None:
    with ApiClient(
        url,
        "ver_desk",
        SECRET,
        verifier_url=url,
        timeout=3,
        deadline=3,
        verify=pinned_context(fingerprint),
    ) as client:
        client.check_sign_in()


def test_a_desk_sends_nothing_to_a_certificate_whose_fingerprint_changed(
    two_certificates: tuple[tuple[Path, Path], tuple[Path, Path]],
) -> None:
    (office_cert, _), (impostor_cert, impostor_key) = two_certificates
    pin = certificate_fingerprint(office_cert)
    assert pin != certificate_fingerprint(impostor_cert)
    recorder = Recorder(impostor_cert, impostor_key)  # the office address, another certificate
    try:
        with pytest.raises(ServiceUnreachable) as refused:
            sign_in(recorder.url, pin)
        assert refused.value.reason == "certificate"
        assert probe(recorder.url, pinned_context(pin)) == UNREACHABLE_WORDS["certificate"].format(
            address=recorder.url
        )
        assert recorder.handshakes >= 1  # it did talk TLS to the server...
        assert bytes(recorder.received) == b""  # ...and sent it nothing: no request, no secret

        # The control: pinned to the certificate the server shows, the request does go out.
        with pytest.raises(ApiError):  # the recorder answers 503
            sign_in(recorder.url, certificate_fingerprint(impostor_cert))
        assert bytes(recorder.received).startswith(b"POST /oauth/token")
        assert SECRET.encode() in bytes(recorder.received)
    finally:
        recorder.close()


def test_fingerprints_are_read_in_the_spellings_people_copy(tmp_path: Path) -> None:
    cert, _ = make_self_signed(tmp_path, ["localhost"])
    pin = certificate_fingerprint(cert)
    words = fingerprint_words(pin)
    assert len(words.split()) == 16 and words == words.upper()
    colons = ":".join(pin[i : i + 2] for i in range(0, 64, 2)).upper()
    for spelling in (pin, words, colons, f"SHA256 Fingerprint={colons}", f"sha256:{pin}"):
        assert normalize_fingerprint(spelling) == pin
    for wrong in ("", pin[:-1], pin + "0", "z" * 64):
        assert normalize_fingerprint(wrong) is None
    with pytest.raises(ValueError):
        pinned_context("not a fingerprint")


def test_the_office_network_serves_https_with_a_certificate_made_on_first_use(
    tmp_path: Path, config_dir: Path
) -> None:
    config, data = config_dir, tmp_path / "data"
    settings = Settings(data_dir=str(data), service_listen="network")
    settings.save(config)
    secrets = SecretStore(config, use_keyring=False)
    office = start_embedded_context(Settings.load(config), secrets)
    try:
        assert office.service_url.startswith("https://")
        saved = Settings.load(config)
        assert saved.tls_cert and Path(saved.tls_cert).parent == config / "tls"
        fingerprint = office_fingerprint(office)
        assert fingerprint == certificate_fingerprint(saved.tls_cert)
        # This computer's own clients pin it too, and work.
        assert office.verifier.healthz(office.service_url)
        assert office.admin is not None and office.admin.admin_list().clients

        # A desk given the address and the fingerprint signs in over HTTPS; without the
        # fingerprint the public authorities' check refuses the self-signed certificate.
        desk = Settings(tls_fingerprint=fingerprint_words(fingerprint))
        url = office.service_url
        verifier = secrets.get(f"instance:{data.resolve()}:verifier_id")
        secret = secrets.get(f"instance:{data.resolve()}:verifier_secret")
        assert verifier and secret
        with ApiClient(url, verifier, secret, verifier_url=url, **desk_options(desk)) as client:
            client.check_sign_in()
        assert probe(url) is not None

        # The certificate is kept: a restart serves the same one (desks stay pinned).
        office.close()
        office = start_embedded_context(Settings.load(config), secrets)
        assert office_fingerprint(office) == fingerprint
    finally:
        office.close()


def test_a_badge_address_naming_this_service_turns_https_and_a_proxy_is_left_alone(
    tmp_path: Path,
) -> None:
    from app.shell.office_tls import ensure_office_tls

    direct = Settings(
        service_listen="network", service_port=8443, scan_base="http://192.0.2.10:8443"
    )
    assert ensure_office_tls(direct, tmp_path / "a")
    assert direct.scan_base == "https://192.0.2.10:8443" and direct.tls_cert and direct.tls_key
    assert not ensure_office_tls(direct, tmp_path / "a")  # kept: made once
    proxy = Settings(service_listen="network", service_port=8443, scan_base="https://verify.test")
    assert ensure_office_tls(proxy, tmp_path / "b") and proxy.scan_base == "https://verify.test"
    here = Settings(service_listen="loopback")
    assert not ensure_office_tls(here, tmp_path / "c") and not here.tls_cert
    assert oct(Path(direct.tls_key).stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "a").stat().st_mode & 0o777) == "0o700"


def test_a_desk_refuses_plain_http_across_the_network_and_a_malformed_fingerprint() -> None:
    """Both refused before any connection: nothing is sent anywhere."""
    from app.api.desk_check import desk_problem

    clear = desk_problem("http://192.0.2.10:8080", "ver_desk", SECRET)
    assert clear is not None and "in clear" in clear and clear.startswith("Service address:")
    typo = desk_problem("https://192.0.2.10:8080", "ver_desk", SECRET, fingerprint="12:34")
    assert typo is not None and typo.startswith("Certificate fingerprint:")
