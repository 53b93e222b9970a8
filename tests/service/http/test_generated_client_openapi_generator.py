"""A second generator's client works as generated (issue 36): openapi-generator's `python`
client, at the version pinned in the `dev` extra (PyPI's `openapi-generator-cli`, whose wheel
carries the generator's jar; it runs on Debian's Java), is generated from the document a real
server serves and, unedited, gets a token, registers with registerNonPII and
registerAndBuildBarcode, sends a batch and verifies, against the same server.

Why this generator beside openapi-python-client: its parser (swagger-parser) is the one behind
all of its client languages, and it is strict where openapi-python-client is lenient: it stopped
on a `$ref` to a schema the document lacked (`PairingRequest`), which the first generator passed
over. The comparison with a TypeScript client is in docs/decisions.md (2026-11-29)."""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from service.protocol.encoding import new_reference
from service.protocol.pii_text import build_pii_text
from service.protocol.sealing import SealedPii, seal
from testbed.factories import PII_FIELDS, SCHEMAS
from tests.service.conftest import LiveService

GENERATOR_VERSION = "7.26.0"
PACKAGE = "payslip_openapi_generator_client"
"""The generated package's name: one no other module has, so importing it cannot shadow one."""

TIMEOUT = 30.0
"""Seconds for each call: the generated client (urllib3) waits forever unless told."""

ISSUED_AT = "2026-11-13T09:00:00Z"

pytestmark = pytest.mark.slow


def _generate(live: LiveService, where: Path) -> ModuleType:
    """Generate the client from the served document into `where` and import it.

    The JVM compiles with C1 only (`TieredStopAtLevel=1`): a run this short gains nothing from
    C2, which doubled its CPU time (about 2.8 s instead of 5.5 s user, measured here).

    Only the package's source is written (no setup files, docs or test stubs); the packages it
    imports (pydantic, urllib3, python-dateutil, typing-extensions) are in the dev install."""
    assert version("openapi-generator-cli") == GENERATOR_VERSION, "pinned in pyproject's dev extra"
    assert shutil.which("java"), "Java runs the generator: scripts/bootstrap --test installs it"
    document = live.http.get(f"{live.url}/openapi.json", timeout=10)
    assert document.status_code == 200
    (where / "openapi.json").write_bytes(document.content)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-generator-cli"),
            "generate",
            "--input-spec",
            str(where / "openapi.json"),
            "--generator-name",
            "python",
            "--package-name",
            PACKAGE,
            "--output",
            str(where / "out"),
            "--additional-properties=generateSourceCodeOnly=true",
            "--global-property=apiTests=false,modelTests=false,apiDocs=false,modelDocs=false",
        ],
        env={**os.environ, "JAVA_OPTS": "-XX:TieredStopAtLevel=1"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "ERROR" not in output, output
    sys.path.insert(0, str(where / "out"))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where / "out"))


def _forget_generated() -> None:
    for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
        del sys.modules[name]


def test_an_openapi_generator_client_registers_and_verifies_as_generated(
    live: LiveService, tmp_path: Path
) -> None:
    package = _generate(live, tmp_path)
    try:
        with contextlib.ExitStack() as clients:
            _issue_and_verify(package, live, clients)
    finally:
        _forget_generated()


def _api(package: Any, url: str, clients: contextlib.ExitStack, token: str | None = None) -> Any:
    """The generated `DefaultApi` on its own `ApiClient`, with a bearer token when given."""
    configuration = package.Configuration(host=url, access_token=token)
    return package.DefaultApi(clients.enter_context(package.ApiClient(configuration)))


def _token(package: Any, client: dict[str, Any], scope: str, url: str) -> str:
    """An access token from the generated token operation (the JSON body it documents)."""
    with contextlib.ExitStack() as clients:
        answer = _api(package, url, clients).token(
            package.TokenRequest(
                grant_type="client_credentials",
                client_id=client["client_id"],
                client_secret=client["client_secret"],
                audience=url,
                scope=scope,
            ),
            _request_timeout=TIMEOUT,
        )
    assert isinstance(answer, package.TokenResponse), answer
    token: str = answer.access_token
    return token


def _issue_and_verify(package: Any, live: LiveService, clients: contextlib.ExitStack) -> None:
    issuer = _api(
        package, live.url, clients, _token(package, live.issuer, "service:issuer", live.url)
    )
    verifier_token = _token(package, live.verifier, "service:verifier", live.url)
    verifier = _api(package, live.url, clients, verifier_token)
    key, key_version = live.issuer["encryption_key"], live.issuer["key_version"]
    text = build_pii_text("AU2", PII_FIELDS["AU2"])
    payslip = SCHEMAS["au.payslip.v1"]["payslip_non_pii"]

    def fields(sealed: SealedPii) -> dict[str, Any]:
        """What every registration carries: the generated payslip union, read from the sample
        payslip, and the generated metadata model. `schema` is `var_schema` in the generated
        models (`schema` is a pydantic name); it goes out as `schema`."""
        return {
            "var_schema": "au.payslip.v1",
            "issued_at": ISSUED_AT,
            "payslip_non_pii": package.BatchRecordPayslipNonPii.from_dict(payslip),
            "encryption_metadata": package.EncryptionMetadata(
                iv=sealed.iv_b64, tag=sealed.tag_b64, key_version=key_version
            ),
        }

    # registerNonPII: the reference is the service's; issued_at goes out as written, with its Z.
    one = seal(text, key)
    registered = issuer.register_non_pii(
        package.RegisterNonPiiRequest(**fields(one)), _request_timeout=TIMEOUT
    )
    assert isinstance(registered, package.RegistrationResult), registered

    # registerAndBuildBarcode: the badge, its scan URL and payload.
    built_sealing = seal(text, key)
    built = issuer.register_and_build_barcode(
        package.RegisterAndBuildRequest(
            **fields(built_sealing), encrypted_pii=built_sealing.ciphertext_b64
        ),
        _request_timeout=TIMEOUT,
    )
    assert isinstance(built, package.BarcodeResult), built
    assert built.barcode.data and built.payload.startswith(f"2|{built.service_reference}|")

    # registerNonPIIBatch: two records, each its own result (a batch item is a BatchRecord or
    # any object, so the generated list item wraps one).
    sealings = [seal(text, key) for _ in range(2)]
    records = [
        package.BatchRecord(
            service_reference=new_reference(), external_id=f"row-{n}", **fields(sealed)
        )
        for n, sealed in enumerate(sealings)
    ]
    batch = issuer.register_non_pii_batch(
        package.BatchRequest(records=[package.BatchRequestRecordsInner(r) for r in records]),
        _request_timeout=TIMEOUT,
    )
    assert isinstance(batch, package.BatchResult), batch
    assert [item.status for item in batch.results] == ["created", "created"]

    # verifyPayload: every registered record, by payload and by scan URL.
    barcodes = [
        one.payload_v2(registered.service_reference),
        built.scan_url,
        *(
            sealed.payload_v2(record.service_reference)
            for record, sealed in zip(records, sealings, strict=True)
        ),
    ]
    for barcode in barcodes:
        result = verifier.verify_payload(
            package.VerifyRequest(barcode=barcode), _request_timeout=TIMEOUT
        )
        assert isinstance(result, package.VerificationResult), result
        assert result.verified is True
        assert result.payslip.issued_at == ISSUED_AT
