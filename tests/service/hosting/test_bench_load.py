"""The benchmarks' Python load generator (used when wrk is not installed) reports failures.

A figure measured over failed requests would mislead whoever reads the README's table, so every
failure ends the run with a count; and a working endpoint gives real figures.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.service.conftest import LiveService

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "service_bench", ROOT / "bench" / "service_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["service_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_python_load_measures_a_working_endpoint(live: LiveService) -> None:
    rps, p50 = _bench().python_rps(live.url, "/healthz", 1)
    assert rps > 0 and p50 > 0


def test_python_load_reports_failed_requests_instead_of_crashing(live: LiveService) -> None:
    with pytest.raises(SystemExit) as stopped:
        _bench().python_rps(
            live.url, "/v1/verifications/payload", 1, "POST", '{"barcode": "x"}', "not-a-token"
        )
    message = str(stopped.value)
    assert message.startswith("/v1/verifications/payload: ")
    assert "failed requests during the load" in message and "HTTP 401" in message


def test_python_load_reports_an_unreachable_server() -> None:
    with pytest.raises(SystemExit) as stopped:
        _bench().python_rps("http://127.0.0.1:9", "/healthz", 1)
    assert "failed requests during the load" in str(stopped.value)
