"""The documentation's examples run as written: every code block of docs/**/*.md and README.md.

Fences and what is done with them (any other language fails the test, so that no example can
escape by an unmarked fence):

- ```python: run, in order, each page in a namespace of its own;
- ```bash: run by bash (``set -e``), with ``ppdp`` on the PATH;
- ```console: the lines after ``$ `` run as ```bash, the other lines are output;
- ```py: an excerpt of code shown elsewhere in full: it must appear, as written, in a file of
  the repository;
- ```sh: set-up commands, not run here: each line must be a line of .ci/run (the quick start,
  Java), or a ``pip install`` of ppdp;
- ```json: must parse; ```text (output samples) and ```mermaid (diagrams): shown only.

Blocks of a page share one temporary working directory, which holds the bundled data as files
(``adult.parquet``, ``adult.csv``, ``adult.domains.json``, the hierarchies in ``hierarchies/``).
A page that says ``<!-- docs-test: spark -->`` needs pyspark and Java 17: without them it
skips and says why; its Python blocks run each in a process of its own, so that the Spark
session it starts is not the one the Spark tests share; the JVMs its blocks start take the Java
options of the tests' own session (``JAVA_TOOL_OPTIONS``: `FAST_START_JVM`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.csv
import pyarrow.parquet
import pytest

from ppdp.engines.spark import SparkUnavailableError, require_java, require_pyspark
from ppdp.plan.registry import MECHANISM_MODULES
from tests.engines.conftest import FAST_START_JVM

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.rglob("*.md"), ROOT / "README.md"])
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
RUN = {"python", "bash", "console"}
SHOWN = {"text", "mermaid", "json", "py", "sh"}
DATASETS = ROOT / "src" / "ppdp" / "datasets"
PIP_INSTALL = re.compile(r"^pip install '?ppdp(\[[a-z,]+\])?'?$")
SPARK_PAGE = "<!-- docs-test: spark -->"


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(language, body) for language, body in FENCE.findall(page.read_text())]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_fence_is_known(page: Path) -> None:
    unknown = [language or "(none)" for language, _ in _blocks(page)
               if language not in RUN | SHOWN]
    assert not unknown, f"{_name(page)}: fences of no known kind: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_shown_blocks_hold(page: Path) -> None:
    sources = [path.read_text() for folder in ("src", "tests", "benchmarks", "tools")
               for path in (ROOT / folder).rglob("*.py")]
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()}
    for language, body in _blocks(page):
        if language == "json":
            json.loads(body)
        elif language == "py":
            assert any(body in source for source in sources), \
                f"{_name(page)}: an excerpt found in no file:\n{body}"
        elif language == "sh":
            missing = [line for line in body.splitlines()
                       if line and line not in ci and not PIP_INSTALL.match(line)]
            assert not missing, f"{_name(page)}: not run by .ci/run: {missing}"


def _setup(folder: Path) -> dict[str, str]:
    """The bundled data as files, a ``ppdp`` command on the PATH, private state kept here."""
    shutil.copy(DATASETS / "adult.parquet", folder / "adult.parquet")
    shutil.copy(DATASETS / "adult.domains.json", folder / "adult.domains.json")
    (folder / "hierarchies").mkdir()
    for path in DATASETS.glob("adult_hierarchy_*.csv"):
        shutil.copy(path, folder / "hierarchies" / path.name.removeprefix("adult_"))
    pyarrow.csv.write_csv(pyarrow.parquet.read_table(folder / "adult.parquet"),
                          folder / "adult.csv")
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    command = bin_dir / "ppdp"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ppdp.cli "$@"\n')
    command.chmod(command.stat().st_mode | stat.S_IXUSR)
    source = str(ROOT / "src")
    return {**os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])),
            "PPDP_STATE_DIR": str(folder / ".state"),
            "PPDP_CACHE_DIR": str(folder / ".cache"),
            "COLUMNS": "100"}


def _spark_missing() -> str | None:
    try:
        require_pyspark()
        require_java()
    except SparkUnavailableError as error:
        return str(error)
    return None


RUNNING = [page for page in PAGES if any(lang in RUN for lang, _ in _blocks(page))]


@pytest.mark.parametrize("page", RUNNING, ids=_name)
def test_the_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = page.read_text()
    spark = SPARK_PAGE in text
    if spark and (reason := _spark_missing()):
        pytest.skip(f"{_name(page)} needs Spark: {reason}")
    environment = _setup(tmp_path)
    if spark:
        environment["JAVA_TOOL_OPTIONS"] = " ".join(
            filter(None, [environment.get("JAVA_TOOL_OPTIONS"), FAST_START_JVM]))
    monkeypatch.chdir(tmp_path)
    for name in ("PPDP_STATE_DIR", "PPDP_CACHE_DIR"):
        monkeypatch.setenv(name, environment[name])
    # A page may register a mechanism: the registry is restored after it.
    registered = dict(MECHANISM_MODULES)
    names: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    try:
        for number, (language, body) in enumerate(_blocks(page)):
            where = f"{_name(page)}, {language} block {number}"
            if language == "python" and not spark:
                exec(compile(body, where, "exec"), names)
            elif language in ("bash", "console") or spark:
                script = body if language != "console" else "\n".join(
                    line[2:] for line in body.splitlines() if line.startswith("$ "))
                command = [sys.executable, "-c", script] if language == "python" else \
                    ["bash", "-e", "-o", "pipefail", "-c", script]
                done = subprocess.run(command,
                                      cwd=tmp_path, env=environment, capture_output=True,
                                      text=True, check=False)
                assert done.returncode == 0, \
                    f"{where} failed ({done.returncode}):\n{script}\n{done.stdout}{done.stderr}"
    finally:
        MECHANISM_MODULES.clear()
        MECHANISM_MODULES.update(registered)
