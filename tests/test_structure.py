"""The layout keeps its rules: the import contracts of pyproject.toml (layers, independent
engines and families, no cycles), no source file over 800 lines, no function-local import of a ppdp
module outside the command line (but those that defer sqlglot and OpenDP), and no private name
imported from another package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SOURCE / "ppdp"
MAX_LINES = 800
DEFERRED_FOR_SPEED = {("ppdp.query.parse", "ppdp.query.sql")}
"""Function-local imports outside the CLI, each deferring a slow import (and saying so)."""


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed (the test extra installs it)")
    result = subprocess.run([str(lint)], cwd=SOURCE.parent, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout or "broken" not in result.stdout.split("Contracts:")[-1]


ROOT = SOURCE.parent
PYTHON_FILES = sorted(path.relative_to(ROOT) for folder in ("src", "tests", "benchmarks", "tools")
                      for path in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", PYTHON_FILES, ids=str)
def test_no_source_file_is_over_800_lines(path: Path) -> None:
    assert len((ROOT / path).read_text().splitlines()) <= MAX_LINES


def test_only_the_command_line_defers_imports() -> None:
    deferred = set()
    for name, path in modules().items():
        if name == "ppdp.cli" or name.startswith("ppdp.cli."):
            continue
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ppdp"):
                    deferred.add((name, node.module))
                elif isinstance(node, ast.Import):
                    deferred |= {(name, alias.name) for alias in node.names
                                 if alias.name.startswith("ppdp")}
    assert deferred == DEFERRED_FOR_SPEED


def test_no_private_name_is_imported_from_another_package() -> None:
    found = modules()
    crossing = []
    for name, path in found.items():
        mine = package_of(name, path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ppdp")):
                continue
            module = str(node.module)
            theirs = package_of(module, found[module]) if module in found else module
            crossing += [f"{name} imports {module}.{alias.name}" for alias in node.names
                         if alias.name.startswith("_") and not alias.name.startswith("__")
                         and theirs != mine]
    assert crossing == []
