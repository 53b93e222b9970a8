"""HTTPS for "This office network": the office's own certificate, or one this app makes.

When the embedded service listens on the office network, verify answers, desk secrets, tokens
and pairing codes cross that network; over plain HTTP anyone on it reads them (issue 37). So the
service never listens there without TLS: with no certificate of the office's own in the
settings, the first start on the network makes a self-signed one (ECDSA P-256, ten years) in the
config folder's ``tls`` folder (0700; the key 0600) and saves its paths like an office's own.

Nobody's browser or desk trusts that certificate by itself; desks are given its fingerprint
(app.api.pinning) with their address and sign-in, and the Service screen shows it for people to
compare. Phones open badge links in a browser, which warns about a self-signed certificate: an
office that pairs phones puts a reverse proxy with a public certificate in front, or uses its
own certificate here (docs/deploy.md).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.api.pinning import fingerprint_of_der
from app.settings.desk import Settings, config_dir
from service.files.private import private_dir, write_private_text

TLS_FOLDER = "tls"
CERT_FILE = "office-service.crt"
KEY_FILE = "office-service.key"
LIFETIME = datetime.timedelta(days=3650)


def make_self_signed(folder: Path, hosts: list[str]) -> tuple[Path, Path]:
    """A new key and self-signed certificate for `hosts` (names or IP addresses) in `folder`;
    returns (certificate, key). The names matter to browsers only: desks pin the fingerprint."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Payslip Verify office service")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    private_dir(folder)
    key_path, cert_path = folder / KEY_FILE, folder / CERT_FILE
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write_private_text(key_path, key_pem.decode("ascii"))
    write_private_text(cert_path, cert.public_bytes(serialization.Encoding.PEM).decode("ascii"))
    return cert_path, key_path


def certificate_fingerprint(cert_file: Path | str) -> str:
    """The SHA-256 fingerprint of the first certificate in a PEM file (the server's own)."""
    first = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
    return fingerprint_of_der(first.public_bytes(serialization.Encoding.DER))


def _hosts(settings: Settings) -> list[str]:
    hosts = [socket.gethostname(), "localhost", "127.0.0.1"]
    base = urlsplit(settings.scan_base).hostname
    if base:
        hosts.insert(0, base)
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent; names the LAN address
        hosts.append(str(probe.getsockname()[0]))
    return hosts


def ensure_office_tls(settings: Settings, folder: Path | None = None) -> bool:
    """Before the embedded service starts on the office network: make sure it has a certificate.
    With none in the settings, make a self-signed one and save its paths, and turn an address
    for badges that names this service over ``http://`` into ``https://`` (the port no longer
    speaks plain HTTP). True when a certificate was made. Nothing changes on loopback."""
    if settings.service_listen != "network" or settings.tls_cert:
        return False
    cert, key = make_self_signed(folder or config_dir() / TLS_FOLDER, _hosts(settings))
    settings.tls_cert, settings.tls_key = str(cert), str(key)
    base = urlsplit(settings.scan_base)
    if base.scheme == "http" and settings.service_port and base.port == settings.service_port:
        settings.scan_base = "https" + settings.scan_base[len("http") :]
    with contextlib.suppress(OSError):  # an unwritable config folder must not stop the app
        settings.save()
    return True
