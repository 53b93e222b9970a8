"""Scan URLs point at the verifier's origin (PROTOCOL §3), whatever path the verifier URL has."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import zxingcpp
from PIL import Image

from service.hosting.server import start
from service.protocol.barcode_text import parse_barcode
from testbed import web
from testbed.factories import build_body, sealed_record
from testbed.oauth import fetch_token
from tests.service.conftest import make_instance


def test_a_verifier_url_with_a_path_still_gives_readable_badges(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    _, issuer, _ = make_instance(data_dir)
    running = start(
        data_dir, public_url="http://127.0.0.1:1", verifier_url="http://localhost:9/verifier/"
    )
    try:
        assert running.config.scan_base == "http://localhost:9"
        url = running.url
        secret = issuer["client_secret"]
        token = fetch_token(url, issuer["client_id"], secret, audience="http://127.0.0.1:1")
        sealed = sealed_record(issuer["encryption_key"])
        reply = web.post(
            f"{url}/v1/registerAndBuildBarcode",
            json=build_body(sealed),
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert reply.status_code == 201, reply.text
        png = base64.b64decode(reply.json()["barcode"]["data"])
        text = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))[0].text
        assert text.startswith("http://localhost:9/v/")
        assert parse_barcode(text).ciphertext == sealed.ciphertext
    finally:
        running.stop()
