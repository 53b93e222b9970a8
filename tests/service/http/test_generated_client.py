"""A client generated from `/openapi.json` works as generated (issue 36): openapi-python-client,
at the version pinned in the `dev` extra, generates a package from the document a real server
serves, and that package, unedited, gets a token, registers with registerNonPII and
registerAndBuildBarcode, sends a batch and verifies, against the same server.

What broke before: the token endpoint listed one schema for two media types, and the generator
wrote `Unset` without importing it (`NameError` on import); `issued_at` was a `date-time`, which
a generated model holds as a datetime and sends as `+00:00`, refused by the spec's trailing `Z`.
The generator runs without its ruff post-hooks (formatting the output changes nothing it does)."""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from service.protocol.encoding import new_reference
from service.protocol.sealing import seal
from testbed.factories import PII_FIELDS, SCHEMAS, build_pii_text
from tests.service.conftest import LiveService

GENERATOR_VERSION = "0.29.1"
PACKAGE = "payslip_generated_client"
"""The generated package's name: one no other module has, so importing it cannot shadow one."""

pytestmark = pytest.mark.slow


def _generate(live: LiveService, where: Path) -> ModuleType:
    """Generate the client from the served document into `where` and import it."""
    assert version("openapi-python-client") == GENERATOR_VERSION, "pinned in pyproject's dev extra"
    document = live.http.get(f"{live.url}/openapi.json", timeout=10)
    assert document.status_code == 200
    (where / "openapi.json").write_bytes(document.content)
    (where / "config.json").write_text(json.dumps({"post_hooks": []}))
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--path",
            str(where / "openapi.json"),
            "--config",
            str(where / "config.json"),
            "--meta",
            "none",
            "--output-path",
            str(where / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))


def _forget_generated() -> None:
    for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
        del sys.modules[name]


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_a_generated_client_registers_and_verifies_as_generated(
    live: LiveService, tmp_path: Path
) -> None:
    package = _generate(live, tmp_path)
    try:
        with contextlib.ExitStack() as clients:
            _issue_and_verify(package, live, clients)
    finally:
        _forget_generated()


def _token(
    package: Any, client: dict[str, Any], scope: str, url: str, clients: contextlib.ExitStack
) -> Any:
    """A bearer client with a token from the generated token operation."""
    models, token = _module("models"), _module("api.default.token")
    answer = token.sync(
        client=clients.enter_context(package.Client(base_url=url)),
        body=models.TokenRequest(
            grant_type="client_credentials",
            client_id=client["client_id"],
            client_secret=client["client_secret"],
            audience=url,
            scope=models.TokenRequestScope(scope),
        ),
    )
    assert isinstance(answer, models.TokenResponse), answer
    bearer = package.AuthenticatedClient(base_url=url, token=answer.access_token)
    return clients.enter_context(bearer)


def _au_v1(models: Any) -> Any:
    """The sample au.payslip.v1 payslip as the generated model (dates as dates, enums)."""
    return models.AuPayslipV1.from_dict(SCHEMAS["au.payslip.v1"]["payslip_non_pii"])


def _issue_and_verify(package: Any, live: LiveService, clients: contextlib.ExitStack) -> None:
    models = _module("models")
    api = {
        name: _module(f"api.default.{name}")
        for name in (
            "register_non_pii",
            "register_and_build_barcode",
            "register_non_pii_batch",
            "verify_payload",
        )
    }
    issuer = _token(package, live.issuer, "service:issuer", live.url, clients)
    verifier = _token(package, live.verifier, "service:verifier", live.url, clients)
    key, key_version = live.issuer["encryption_key"], live.issuer["key_version"]
    text = build_pii_text("AU2", PII_FIELDS["AU2"])

    def metadata(sealed: Any) -> Any:
        return models.EncryptionMetadata(
            iv=sealed.iv_b64, tag=sealed.tag_b64, key_version=key_version
        )

    # registerNonPII: the reference is the service's; issued_at goes out as written, with its Z.
    one = seal(text, key)
    reply = api["register_non_pii"].sync_detailed(
        client=issuer,
        body=models.RegisterNonPiiRequest(
            schema=models.RegisterNonPiiRequestSchema.AU_PAYSLIP_V1,
            issued_at="2026-11-13T09:00:00Z",
            payslip_non_pii=_au_v1(models),
            encryption_metadata=metadata(one),
        ),
    )
    assert reply.status_code == 201, reply.content
    registered = reply.parsed.service_reference

    # registerAndBuildBarcode: the badge, its scan URL and payload.
    built_sealing = seal(text, key)
    built = api["register_and_build_barcode"].sync(
        client=issuer,
        body=models.RegisterAndBuildRequest(
            schema=models.RegisterAndBuildRequestSchema.AU_PAYSLIP_V1,
            issued_at="2026-11-13T09:00:00Z",
            payslip_non_pii=_au_v1(models),
            encryption_metadata=metadata(built_sealing),
            encrypted_pii=built_sealing.ciphertext_b64,
        ),
    )
    assert isinstance(built, models.BarcodeResult), built
    assert built.barcode.data and built.payload.startswith(f"2|{built.service_reference}|")

    # registerNonPIIBatch: two records, each its own result.
    sealings = [seal(text, key) for _ in range(2)]
    records = [
        models.BatchRecord(
            service_reference=reference,
            external_id=f"row-{n}",
            schema=models.BatchRecordSchema.AU_PAYSLIP_V1,
            issued_at="2026-11-13T09:00:00Z",
            payslip_non_pii=_au_v1(models),
            encryption_metadata=metadata(sealed),
        )
        for n, (reference, sealed) in enumerate(
            zip((new_reference(), new_reference()), sealings, strict=True)
        )
    ]
    batch = api["register_non_pii_batch"].sync(
        client=issuer, body=models.BatchRequest(records=records)
    )
    assert isinstance(batch, models.BatchResult), batch
    assert [item.status for item in batch.results] == ["created", "created"]

    # verifyPayload: every registered record, by payload and by scan URL.
    barcodes = [
        one.payload_v2(registered),
        built.scan_url,
        *(
            sealed.payload_v2(record.service_reference)
            for record, sealed in zip(records, sealings, strict=True)
        ),
    ]
    for barcode in barcodes:
        result = api["verify_payload"].sync(
            client=verifier, body=models.VerifyRequest(barcode=barcode)
        )
        assert isinstance(result, models.VerificationResult), result
        assert result.verified is True
        assert result.payslip.issued_at == "2026-11-13T09:00:00Z"
