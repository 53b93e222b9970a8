"""Shared test setup. Qt must be told to render offscreen before anything imports it."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_IP", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_CLIENT", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_TOKEN_IP", "off")
os.environ.setdefault("PAYSLIP_LOG_DIR", tempfile.mkdtemp(prefix="payslip-test-logs-"))
