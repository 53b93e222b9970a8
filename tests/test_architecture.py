"""What the import contracts cannot see: `bench/` is scripts, not a package, so a benchmark that
imports a test module would go unnoticed; sample data and clusters live in `testbed/` instead."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_benchmark_or_testbed_module_imports_a_test_module() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in ("bench", "testbed")
        for path in sorted((ROOT / folder).glob("*.py"))
        for name in _imported_modules(path)
        if name == "tests" or name.startswith("tests.")
    }
    assert not offenders, offenders
    # the check reads real files: the benchmarks are there and do import the testbed
    assert any(
        name.startswith("testbed")
        for name in _imported_modules(ROOT / "bench" / "service_bench.py")
    )
