"""The PyInstaller bundle: resources reachable from source and frozen, the spec's hidden imports
complete, and (with PAYSLIP_BUNDLE_TEST=1) a real build that passes its own self-test."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.shell import resources
from app.shell.version import __version__

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "pyinstaller.spec"
SCANNED = ("app", "service")
BY_NAME_CALLS = {"import_module", "__import__", "find_spec", "resolve_name"}


# -- resources ----------------------------------------------------------------------------------


def test_resources_are_found_from_source() -> None:
    assert resources.bundle_dir() is None
    assert resources.root() == ROOT / "resources"
    sample = resources.path("sample_payrun.csv")
    assert sample == ROOT / "resources" / "sample_payrun.csv"
    assert resources.read_text("sample_payrun.csv").splitlines()[0]
    assert resources.read_bytes("sample_payrun.json").lstrip().startswith(b"[")
    assert {"sample_payrun.csv", "sample_payrun.json"} <= set(resources.names())


def test_resources_come_from_meipass_when_frozen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "resources" / "icons").mkdir(parents=True)
    (tmp_path / "resources" / "icons" / "logo.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.root() == tmp_path / "resources"
    assert resources.read_text("icons/logo.svg") == "<svg/>"
    assert resources.names() == ["icons/logo.svg"]
    with pytest.raises(resources.ResourceNotFound):
        resources.path("sample_payrun.csv")  # the source tree is not consulted when frozen


@pytest.mark.parametrize("name", ["", "/etc/passwd", "../pyproject.toml", "nope.txt"])
def test_resources_refuse_names_outside_the_folder(name: str) -> None:
    with pytest.raises(resources.ResourceNotFound):
        resources.path(name)


# -- hidden imports ------------------------------------------------------------------------------


def _python_files() -> Iterator[Path]:
    for package in SCANNED:
        yield from sorted((ROOT / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str | None, level: int, importer: str, is_package: bool) -> str:
    if level == 0:
        return module or ""
    base = importer.split(".")
    base = base[: len(base) - level + (1 if is_package else 0)]
    return ".".join([*base, module] if module else base)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _imported(module: str, name: str) -> str:
    """`from module import name`: the submodule when `name` is one, else the module."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return module
    if spec is not None and spec.submodule_search_locations is not None:
        candidate = f"{module}.{name}"
        if _is_module(candidate):
            return candidate
    return module


def _is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def modules_imported_by_name() -> dict[str, str]:
    """Every non-stdlib module our code imports inside a function or by a string name, mapped to
    where (file:line): what PyInstaller's static scan may miss or see only by luck."""
    found: dict[str, str] = {}
    for path in _python_files():
        tree = ast.parse(path.read_text("utf-8"), str(path))
        importer = _module_name(path)
        is_package = path.name == "__init__.py"
        where = f"{path.relative_to(ROOT)}"
        names: list[tuple[str, int]] = []
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    names += [(alias.name, node.lineno) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    module = _absolute(node.module, node.level, importer, is_package)
                    names += [(_imported(module, a.name), node.lineno) for a in node.names]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                func_name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if func_name in BY_NAME_CALLS:
                    target = node.args[0].value.split(":")[0]
                    names.append((target, node.lineno))
        for name, line in names:
            if name and not _is_stdlib(name):
                found.setdefault(name, f"{where}:{line}")
    return found


def spec_hidden_imports() -> tuple[list[str], list[str]]:
    """The spec's literal HIDDENIMPORTS list and the packages it passes to collect_submodules."""
    tree = ast.parse(SPEC.read_text("utf-8"), str(SPEC))
    listed: list[str] | None = None
    collected: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "HIDDENIMPORTS" for t in node.targets
        ):
            listed = list(ast.literal_eval(node.value))
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "collect_submodules"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            collected.append(str(node.args[0].value))
    assert listed is not None, "pyinstaller.spec has no literal HIDDENIMPORTS = [...] list"
    return listed, collected


def test_the_scanner_sees_the_lazy_store_imports() -> None:
    found = modules_imported_by_name()
    assert "service.storage.tinydb_store" in found
    assert "service.storage.postgres_store" in found


def test_every_module_imported_by_name_is_a_hidden_import() -> None:
    listed, collected = spec_hidden_imports()
    missing = {
        name: where
        for name, where in modules_imported_by_name().items()
        if name not in listed and not any(name == p or name.startswith(p + ".") for p in collected)
    }
    assert not missing, (
        "add these to HIDDENIMPORTS in pyinstaller.spec (imported lazily or by name at "
        f"the places shown): {missing}"
    )


def test_hidden_imports_name_real_modules() -> None:
    """A renamed or deleted module must not linger in the spec (PyInstaller only warns)."""
    listed, _ = spec_hidden_imports()
    stale = [
        name
        for name in listed
        if (name.split(".")[0] in SCANNED or _is_module(name.split(".")[0]))
        and not _is_module(name)
    ]
    assert not stale, f"pyinstaller.spec lists modules that do not exist: {stale}"


# -- the real bundle -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(
    os.environ.get("PAYSLIP_BUNDLE_TEST") != "1",
    reason="set PAYSLIP_BUNDLE_TEST=1 to build the PyInstaller bundle (about a minute, ~420 MB) "
    "and run its self-test",
)
def test_bundle_builds_and_passes_its_self_test() -> None:
    args = ["bash", str(ROOT / "scripts" / "build-bundle"), sys.prefix]
    if os.environ.get("PAYSLIP_BUNDLE_NO_INSTALL") == "1":
        args.insert(2, "--no-install")
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1150)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert f"Payslip Verify {__version__}" in done.stdout
    checks = (
        "badge image",
        "stamped PDF",
        "document check of a scanned page (OCR)",
        "service health",
    )
    for check in checks:
        assert f"PASS  {check}" in done.stdout
    assert "self-test passed" in done.stdout
    assert "size:" in done.stdout
    dist = ROOT / "dist" / "payslip-verify"
    internal = dist / "_internal"
    assert (internal / "resources" / "sample_payrun.csv").is_file()
    assert not list(internal.rglob("libqgtk3*")), "the GTK3 theme plugin should be left out"
    for excluded in ("tkinter", "pytest", "hypothesis", "PySide6/QtQml", "PySide6/QtQuick", "lxml"):
        assert not list(internal.glob(f"{excluded}*")), f"{excluded} should not be bundled"
