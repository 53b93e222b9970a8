"""The issuer library: everything an issuer needs to put a verifiable badge on a payslip.

    from app.issuer import IssuerKey, au2_text, issue_self_managed

* PII text: `p1_text`, `p2_text`, `au2_text`, `nz2_text` (PROTOCOL §4), `au_address`,
  `nz_address`, `au_employer_identity`, `format_for_schema`.
* Sealing: `encrypt_pii(text, key) -> (ciphertext, iv, tag)`, `seal` / `SealedPii`,
  `new_reference`.
* Barcode text: `build_payload_v2`, `build_payload_v1`, `build_scan_url_v2`.
* Badges and PDFs: `render_badge_png`, `render_badge_svg`, `write_payload_metadata`,
  `stamp_badge` (the same helpers the service uses, so badges are pixel-identical).
* Records: `non_pii_record`, `build_and_register_record`, `check_payslip`,
  `issue_self_managed`, `issue_service_managed`, `prepare_self_managed` + `register_prepared`.
* Pay runs: `read_payrun`, `PayRun`, `RunSettings` (see docs/issuer.md).

The package imports no Qt: the GUI, the CLI and scripts all use it the same way.
"""

from __future__ import annotations

from app.issuer.fields import FieldSpec, money_to_cents, money_to_decimal, schema_fields
from app.issuer.pii import (
    PiiTextError,
    au2_text,
    au_address,
    au_employer_identity,
    format_for_schema,
    nz2_text,
    nz_address,
    p1_text,
    p2_text,
    pii_text,
)
from app.issuer.progress import Progress
from app.issuer.records import (
    IssuedPayslip,
    IssuerKey,
    PreparedPayslip,
    build_and_register_record,
    check_payslip,
    issue_self_managed,
    issue_service_managed,
    non_pii_record,
    prepare_self_managed,
    register_prepared,
    utc_now,
)
from app.issuer.run.results import (
    RecordResult,
    RunCancelled,
    RunInterrupted,
    RunSettings,
    RunSummary,
)
from app.issuer.run.rows import PayrunFileError, PayrunRow, RowProblem
from app.issuer.run.runner import PayRun
from app.issuer.run.source import read_payrun
from app.output.files import OutputError, atomic_write_bytes
from service.documents.badge import BADGE_WIDTH, BadgeError, render_badge_png, render_badge_svg
from service.documents.pdf_metadata import write_payload_metadata
from service.documents.pdf_stamp import CORNERS, stamp_badge
from service.protocol.barcode_text import build_payload_v1, build_payload_v2, build_scan_url_v2
from service.protocol.encoding import new_reference
from service.protocol.sealing import EncryptionKeyError, SealedPii, encrypt_pii, seal

__all__ = [
    "BADGE_WIDTH",
    "CORNERS",
    "BadgeError",
    "EncryptionKeyError",
    "FieldSpec",
    "IssuedPayslip",
    "IssuerKey",
    "OutputError",
    "PayRun",
    "PayrunFileError",
    "PayrunRow",
    "PiiTextError",
    "PreparedPayslip",
    "Progress",
    "RecordResult",
    "RowProblem",
    "RunCancelled",
    "RunInterrupted",
    "RunSettings",
    "RunSummary",
    "SealedPii",
    "atomic_write_bytes",
    "au2_text",
    "au_address",
    "au_employer_identity",
    "build_and_register_record",
    "build_payload_v1",
    "build_payload_v2",
    "build_scan_url_v2",
    "check_payslip",
    "encrypt_pii",
    "format_for_schema",
    "issue_self_managed",
    "issue_service_managed",
    "money_to_cents",
    "money_to_decimal",
    "new_reference",
    "non_pii_record",
    "nz2_text",
    "nz_address",
    "p1_text",
    "p2_text",
    "pii_text",
    "prepare_self_managed",
    "read_payrun",
    "register_prepared",
    "render_badge_png",
    "render_badge_svg",
    "schema_fields",
    "seal",
    "stamp_badge",
    "utc_now",
    "write_payload_metadata",
]
