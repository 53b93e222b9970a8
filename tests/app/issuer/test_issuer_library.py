"""The issuer library: PII text, sealing, barcode texts, records, badges, PDFs, and round trips
against a real service (text -> encrypt -> register -> verify gives back the input)."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops

from app.api import ApiClient
from app.inputs.reading import read_input
from app.issuer import (
    IssuerKey,
    PiiTextError,
    SealedPii,
    au2_text,
    au_address,
    au_employer_identity,
    build_and_register_record,
    build_payload_v1,
    build_payload_v2,
    build_scan_url_v2,
    check_payslip,
    encrypt_pii,
    format_for_schema,
    issue_self_managed,
    issue_service_managed,
    money_to_cents,
    money_to_decimal,
    new_reference,
    non_pii_record,
    nz2_text,
    nz_address,
    p1_text,
    p2_text,
    prepare_self_managed,
    register_prepared,
    render_badge_png,
    seal,
    stamp_badge,
    write_payload_metadata,
)
from app.issuer.fields import ValueProblem, field_index, read_quantity, whole_cents
from app.output.files import OutputError, atomic_write_bytes, check_writable
from service.documents.pdf_metadata import read_payload_metadata
from service.protocol.barcode_text import parse_barcode
from service.protocol.crypto import decrypt, new_key
from service.protocol.encoding import b64url_encode
from service.protocol.sealing import EncryptionKeyError, decode_key
from testbed.factories import MARKER_ACCOUNT, MARKER_NAME, PII_FIELDS, SCHEMAS, blank_pdf
from tests.service.conftest import (  # noqa: F401 - the fixtures
    LiveService,
    live,
    tinydb_server,
)

KEY = new_key()
SCAN_BASE = "https://verify.example.test"


# --- PII text ----------------------------------------------------------------------------------


def test_builders_write_the_protocol_formats() -> None:
    assert p1_text(employee_name="A B", bsb="062-000", account_number="1") == "P1|A B||||062-000|1|"
    assert p2_text(employee_name="A", address="x").endswith("||x")
    assert au2_text(**PII_FIELDS["AU2"]) == "AU2|" + "|".join(PII_FIELDS["AU2"].values())
    assert nz2_text(**PII_FIELDS["NZ2"]) == "NZ2|" + "|".join(PII_FIELDS["NZ2"].values())
    assert (
        au_address("1 Test St", "", "Testville", "NSW", "2000") == "1 Test St, Testville NSW 2000"
    )
    assert nz_address("2 Rd", "", "Te Aro", "Wellington", "6011") == "2 Rd, Te Aro, Wellington 6011"
    assert au_employer_identity("", "Acme Pty Ltd") == "Acme Pty Ltd"
    assert au_employer_identity("51824753556", "Acme") == "51824753556"
    assert [format_for_schema(s) for s in SCHEMAS] == ["AU2", "NZ2", "AU2", "NZ2"]


def test_pii_errors_name_the_field_never_the_value() -> None:
    with pytest.raises(PiiTextError) as caught:
        au2_text(employee_name=MARKER_NAME, account_number=MARKER_ACCOUNT + "|1")
    assert caught.value.field == "account_number"
    assert MARKER_ACCOUNT not in str(caught.value)
    with pytest.raises(PiiTextError) as caught:
        nz2_text(employee_name=MARKER_NAME + "\u200b")  # a format character
    assert MARKER_NAME not in str(caught.value)
    with pytest.raises(PiiTextError):
        au2_text(employee_name="x" * 1100)


# --- sealing and barcode texts ---------------------------------------------------------------


def test_encrypt_pii_round_trips_with_a_fresh_iv_each_time() -> None:
    text = au2_text(**PII_FIELDS["AU2"])
    ciphertext, iv, tag = encrypt_pii(text, KEY)
    assert len(iv) == 12 and len(tag) == 16 and len(ciphertext) == len(text.encode())
    assert decrypt(ciphertext, iv, tag, KEY).decode() == text
    assert encrypt_pii(text, b64url_encode(KEY))[1] != iv  # base64url key text works too
    assert len({seal(text, KEY).iv for _ in range(50)}) == 50
    assert MARKER_NAME not in repr(seal(text, KEY))


def test_keys_are_checked_without_showing_them() -> None:
    assert decode_key(b64url_encode(KEY)) == KEY
    with pytest.raises(EncryptionKeyError) as caught:
        decode_key("bm90LWEta2V5")
    assert "bm90" not in str(caught.value)
    with pytest.raises(EncryptionKeyError):
        decode_key(b"short")
    assert b64url_encode(KEY) not in repr(IssuerKey(KEY, "v"))


def test_references_payloads_and_scan_urls_parse_back() -> None:
    reference = new_reference()
    assert len(reference) == 22 and reference != new_reference()
    sealed = seal("AU2|x|||||||", KEY)
    for text in (
        build_payload_v2(reference, sealed.ciphertext),
        build_payload_v1(reference, sealed.ciphertext),
        build_scan_url_v2(SCAN_BASE, reference, sealed.ciphertext),
        sealed.scan_url(SCAN_BASE + "/", reference),
        sealed.payload_v2(reference),
        sealed.payload_v1(reference),
    ):
        parsed = parse_barcode(text)
        assert parsed.service_reference == reference
        assert parsed.ciphertext == sealed.ciphertext
    assert sealed.scan_url(SCAN_BASE, reference).startswith(f"{SCAN_BASE}/v/{reference}#2.")


# --- amounts and schema fields ---------------------------------------------------------------


def test_money_is_read_as_cents_or_decimal_strings() -> None:
    assert money_to_cents("3,846.15") == 384615
    assert money_to_cents("$12") == 1200
    assert money_to_cents("-0.5") == -50
    assert money_to_decimal("1.50") == "1.50"
    assert money_to_decimal("$1,234.5") == "1234.5"
    assert whole_cents("384615") == 384615
    assert read_quantity("7.5") == 7.5 and read_quantity("38") == 38
    for bad in ("12.345", "abc", "1.2.3", ""):
        with pytest.raises(ValueProblem):
            money_to_cents(bad)
    with pytest.raises(ValueProblem):
        whole_cents("12.5")


def test_schema_fields_come_from_the_service_models() -> None:
    au1 = field_index("au.payslip.v1")
    assert au1["gross_cents"].kind == "cents" and au1["gross_cents"].required
    assert au1["earnings.*.allowance_type"].conditions == (("type", "allowance"),)
    nz2 = field_index("nz.payslip.v2")
    assert nz2["gross"].kind == "decimal"
    assert nz2["tax_code"].is_free_text
    assert not field_index("au.payslip.v2")["period_start"].required


def test_check_payslip_reports_service_paths() -> None:
    payslip = dict(SCHEMAS["au.payslip.v1"]["payslip_non_pii"])
    assert check_payslip("au.payslip.v1", payslip) == []
    payslip["gross_cents"] = "12"
    payslip["period_end"] = "2026-02-30"
    paths = {e.path for e in check_payslip("au.payslip.v1", payslip)}
    assert paths == {"payslip_non_pii.gross_cents", "payslip_non_pii.period_end"}
    assert check_payslip("xx", payslip)[0].path == "schema"


def test_record_bodies() -> None:
    sealed = seal("AU2|x|||||||", KEY)
    body = non_pii_record(
        "au.payslip.v1",
        "2026-11-13T09:00:00Z",
        SCHEMAS["au.payslip.v1"]["payslip_non_pii"],
        sealed,
        reference="r" * 22,
        key_version="k",
        external_id="E1",
    )
    assert body["encryption_metadata"] == {
        "iv": sealed.iv_b64,
        "tag": sealed.tag_b64,
        "key_version": "k",
    }
    assert body["service_reference"] == "r" * 22 and body["external_id"] == "E1"
    other = build_and_register_record("au.payslip.v1", "t", {}, sealed)
    assert other["encrypted_pii"] == sealed.ciphertext_b64 and "service_reference" not in other


# --- output files ----------------------------------------------------------------------------


def test_atomic_writes_leave_no_partial_files(tmp_path: Path) -> None:
    target = tmp_path / "badge.png"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["badge.png"]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError) as caught:
        check_writable(blocker / "out")
    assert "out" in str(caught.value) or "file" in str(caught.value)


def test_a_full_disk_is_a_plain_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputError) as caught:
        atomic_write_bytes(tmp_path / "b.png", b"x")
    assert "full" in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too


# --- badges and PDFs -------------------------------------------------------------------------


def test_pdf_metadata_and_stamp_read_back_by_the_kiosk_reader(tmp_path: Path) -> None:
    sealed = seal("AU2|x|||||||", KEY)
    reference = new_reference()
    payload = sealed.payload_v2(reference)
    with_meta = write_payload_metadata(blank_pdf(), payload)
    assert read_payload_metadata(with_meta) == (payload, payload)
    png = render_badge_png(sealed.scan_url(SCAN_BASE, reference), 720)
    stamped = tmp_path / "stamped.pdf"
    stamped.write_bytes(stamp_badge(blank_pdf(2), png, payload, 1, "top-left"))
    reading = read_input(str(stamped))
    assert not reading.disagreement
    assert [parse_barcode(p).service_reference for p in reading.payloads] == [reference]


# --- against a real service ------------------------------------------------------------------


def _clients(service: LiveService) -> tuple[ApiClient, ApiClient, IssuerKey]:
    url = service.url
    issuer = ApiClient(
        url, service.issuer["client_id"], service.issuer["client_secret"], issuer_url=url
    )
    verifier = ApiClient(
        url, service.verifier["client_id"], service.verifier["client_secret"], verifier_url=url
    )
    return issuer, verifier, IssuerKey.from_info(service.issuer)


def test_round_trip_for_every_schema_and_pii_format(live: LiveService) -> None:  # noqa: F811
    issuer, verifier, key = _clients(live)
    scan_base = live.config.scan_base
    with issuer, verifier:
        for schema, template in SCHEMAS.items():
            for fmt, fields in PII_FIELDS.items():
                text = {"P1": p1_text, "P2": p2_text, "AU2": au2_text, "NZ2": nz2_text}[fmt](
                    **fields
                )
                prepared = prepare_self_managed(
                    key,
                    scan_base,
                    schema,
                    template["payslip_non_pii"],
                    text,
                    template["issued_at"],
                )
                issued = register_prepared(issuer, prepared)
                assert issued.created and issued.service_reference == prepared.reference
                # Resending the prepared payslip is a duplicate, never a second record.
                assert not register_prepared(issuer, prepared).created
                for barcode in (
                    issued.payload,
                    issued.scan_url,
                    prepared.sealed.payload_v1(prepared.reference),
                ):
                    assert barcode is not None
                    result = verifier.verify_payload(barcode)
                    assert result.verified is True
                    assert result.employee.wire() == {k: v for k, v in fields.items() if v}
                    assert result.payslip.schema_id == schema
                    assert result.payslip.payslip_non_pii == template["payslip_non_pii"]
                    assert result.payslip.issued_at == template["issued_at"]


def test_issue_helpers_and_badges_are_identical_both_ways(live: LiveService) -> None:  # noqa: F811
    issuer, verifier, key = _clients(live)
    config = live.config
    # The scan URL base is the service's public verifier URL.
    assert config.scan_base == config.verifier_url.rstrip("/")
    text = au2_text(**PII_FIELDS["AU2"])
    payslip = SCHEMAS["au.payslip.v2"]["payslip_non_pii"]
    with issuer, verifier:
        mine = issue_self_managed(issuer, key, config.scan_base, "au.payslip.v2", payslip, text)
        assert mine.managed_by == "issuer" and mine.badge_png.startswith(b"\x89PNG")
        theirs = issue_service_managed(
            issuer,
            key,
            "nz.payslip.v2",
            SCHEMAS["nz.payslip.v2"]["payslip_non_pii"],
            nz2_text(**PII_FIELDS["NZ2"]),
        )
        assert verifier.verify_payload(theirs.payload).employee.ird_number == "123-456-789"
        assert theirs.scan_url is not None  # the service's answer carries it (issue 36)
        assert (
            verifier.verify_payload(theirs.scan_url).service_reference == theirs.service_reference
        )

        # Same record and ciphertext: the service's badge and ours, pixel for pixel.
        sealed = seal(text, key.encryption_key)
        body = build_and_register_record(
            "au.payslip.v1",
            "2026-11-13T09:00:00Z",
            SCHEMAS["au.payslip.v1"]["payslip_non_pii"],
            sealed,
            key_version=key.key_version,
        )
        answer = issuer.register_and_build_barcode(body)
        service_png = base64.b64decode(answer.barcode.data)
        local_png = render_badge_png(
            sealed.scan_url(config.scan_base, answer.service_reference), 720
        )
        a = Image.open(io.BytesIO(service_png)).convert("RGB")
        b = Image.open(io.BytesIO(local_png)).convert("RGB")
        assert a.size == b.size and a.width == 720
        assert ImageChops.difference(a, b).getbbox() is None
        verified = verifier.verify_payload(
            SealedPii(sealed.ciphertext, sealed.iv, sealed.tag).payload_v2(answer.service_reference)
        )
        assert verified.employee.employee_name == MARKER_NAME


def test_stamped_pdf_from_a_registration_verifies(
    live: LiveService,  # noqa: F811
    tmp_path: Path,
) -> None:
    issuer, verifier, key = _clients(live)
    scan_base = live.config.scan_base
    with issuer, verifier:
        issued = issue_self_managed(
            issuer,
            key,
            scan_base,
            "nz.payslip.v1",
            SCHEMAS["nz.payslip.v1"]["payslip_non_pii"],
            nz2_text(**PII_FIELDS["NZ2"]),
        )
        pdf = tmp_path / "payslip.pdf"
        pdf.write_bytes(stamp_badge(blank_pdf(), issued.badge_png, issued.payload))
        reading = read_input(str(pdf))
        assert reading.payloads and not reading.disagreement
        for payload in reading.payloads:
            result = verifier.verify_payload(payload)
            assert result.verified and result.service_reference == issued.service_reference
