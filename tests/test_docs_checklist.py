"""The checklist of the papers (docs/papers/checklist.md) names only what exists: every test
named in its test column is a function of a test file, every module or object named in its
where column imports, and every experiment is one of ``ppdp evaluate``'s. A row whose test
cell reads exactly ``PENDING`` is skipped until someone names its test; a row without a test
or experiment says why in a sentence that starts "No test:"."""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

from ppdp.evaluate import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "papers" / "checklist.md"
HEADER = "| item | where | test | verdict |"
PENDING = "PENDING"
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
EXPERIMENT = re.compile(r"`ppdp evaluate (\w+)`")
OBJECT = re.compile(r"`(ppdp(?:\.\w+)+)`")


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row; ``\\|`` is a pipe inside a cell."""
    inner = line.strip()[1:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def _rows() -> list[tuple[str, str, str, str, str]]:
    """(paper, item, where, test, verdict) for every row of the page's tables."""
    rows = []
    paper, in_table = "", False
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            paper, in_table = line[3:], False
        elif line == HEADER:
            in_table = True
        elif in_table and line.startswith("|") and not line.startswith("|---"):
            cells = _cells(line)
            assert len(cells) == 4, f"{paper}: a row without 4 cells: {line}"
            rows.append((paper, *cells))
        elif not line.startswith("|"):
            in_table = False
    return rows


ROWS = _rows()
CHECKED = [row for row in ROWS if row[3] != PENDING]


def _id(row: tuple[str, ...]) -> str:
    return f"{row[0].split(' (')[0]}: {row[1][:60]}"


@cache
def _functions(path: str) -> frozenset[str]:
    """The module-level functions of a test file."""
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(node.name for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _resolve(name: str) -> object:
    """Import the longest module prefix of a dotted name, then get the rest as attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(name)


def test_the_page_has_the_four_papers_and_is_in_the_navigation() -> None:
    papers = {row[0].split(" (")[0] for row in ROWS}
    assert papers == {"alpha-beta", "Ambiguity", "Small Domain Randomization", "SPLU-Gen"}
    assert len(ROWS) > 100
    # The nav's section of the papers: its entries are the indented lines after its title.
    nav = (ROOT / "mkdocs.yml").read_text().split("  - Reproducing the papers:\n", 1)[1]
    section = re.match(r"(?:      - .*\n)+", nav)
    assert section and re.search(r": papers/checklist\.md$", section.group(), re.MULTILINE)


@pytest.mark.parametrize("row", CHECKED, ids=_id)
def test_every_named_test_exists(row: tuple[str, str, str, str, str]) -> None:
    _, item, _, test, _ = row
    named = TEST.findall(test)
    experiments = EXPERIMENT.findall(test)
    assert named or experiments or test.startswith("No test:"), \
        f"{item}: the test cell names no test or experiment and gives no reason: {test!r}"
    for path, function in named:
        assert (ROOT / path).is_file(), f"{item}: no file {path}"
        assert function in _functions(path), f"{item}: no function {function} in {path}"
    for name in experiments:
        assert name in EXPERIMENTS, f"{item}: no experiment {name!r}"


@pytest.mark.parametrize("row", CHECKED, ids=_id)
def test_every_named_module_imports(row: tuple[str, str, str, str, str]) -> None:
    _, item, where, _, verdict = row
    names = OBJECT.findall(where)
    assert names or where == "—", f"{item}: the where cell names nothing: {where!r}"
    for name in names:
        _resolve(name)
    if "erratum" in verdict:
        assert "(errata.md)" in verdict, f"{item}: an erratum without its link: {verdict!r}"


def test_pending_rows_are_literally_pending() -> None:
    """A test cell that mentions PENDING is exactly PENDING: anything else is checked."""
    loose = [row[1] for row in ROWS if PENDING in row[3] and row[3] != PENDING]
    assert not loose, loose


def test_the_parser_reads_escaped_pipes() -> None:
    assert _cells("| a \\|G\\| b | `ppdp.x` | c | d |") == ["a |G| b", "`ppdp.x`", "c", "d"]
