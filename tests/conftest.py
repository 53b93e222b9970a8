"""Shared test setup. Qt must be told to render offscreen before anything imports it."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import settings

# Property tests: the same examples in every CI run (a red CI must be about the change, not the
# draw); a developer's run draws new ones, which is how they find what CI would not.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_IP", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_CLIENT", "off")
os.environ.setdefault("PAYSLIP_RATE_LIMIT_TOKEN_IP", "off")
os.environ.setdefault("PAYSLIP_LOG_DIR", tempfile.mkdtemp(prefix="payslip-test-logs-"))
# The app's own files (settings, the issued-payslips ledger of `issue-run`) never in the user's.
os.environ.setdefault("PAYSLIP_CONFIG_DIR", tempfile.mkdtemp(prefix="payslip-test-config-"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with a slow test first (the bundle build, the fresh clone, clusters, browsers),
    then the others by their number of tests, each module's tests in their own order.

    The suite runs on four workers with `--dist loadscope --no-loadscope-reorder`: a worker takes
    the next module in this order when it is nearly done. A long module taken last would run
    alone after the others ended; taken first, the short ones fill in around it."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)

    def weight(tests: list[pytest.Item]) -> tuple[bool, int]:
        return (not any(t.get_closest_marker("slow") for t in tests), -len(tests))

    items[:] = [item for tests in sorted(modules.values(), key=weight) for item in tests]
