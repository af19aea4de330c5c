"""The README's examples run as written: the code is read from README.md, not copied here.

The command-line examples checked are named by their first words (`CHECKED_COMMANDS`); a
renamed or removed example fails the test, so the list and the README move together. They
run in order in an empty working directory, as on a fresh clone, through the `ppdp` command's
entry point (`typer.testing.CliRunner`). The Python examples that use the bundled hierarchies
run as one session (the README's later blocks use the names of its first).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdp.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"

CHECKED_COMMANDS = (
    "ppdp publish adult -m mondrian -s occupation -p k=10 -p l=5 --hierarchies adult",
    "ppdp risk adult-gen",
    "ppdp demo -o demo-output --seed 1 --overwrite",
    "ppdp --version",
)
"""The command-line examples of "From the command line" that must run as written."""


def code_blocks(language: str) -> list[str]:
    """The README's fenced code blocks of one language, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), re.S | re.M)


def command_lines() -> list[str]:
    """The ``ppdp`` lines of the README's shell blocks, without their comments."""
    return [" ".join(shlex.split(line, comments=True))
            for block in code_blocks("sh") for line in block.splitlines()
            if line.startswith("ppdp ")]


def test_the_checked_command_line_examples_run_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = command_lines()
    chosen = [line for line in lines if line.startswith(CHECKED_COMMANDS)]
    assert [next(c for c in CHECKED_COMMANDS if line.startswith(c)) for line in chosen] == \
        list(CHECKED_COMMANDS), "an example named in CHECKED_COMMANDS left the README"
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for line in chosen:
        result = runner.invoke(app, shlex.split(line)[1:])
        assert result.exit_code == 0, (line, result.output)
    assert (tmp_path / "adult-gen" / "release.json").is_file()
    assert (tmp_path / "demo-output" / "report.html").is_file()


def test_the_hierarchy_examples_in_python_run_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "From Python" block, then the Mondrian block of the design notes, which promises
    an association of at most 0.2 and no class above beta."""
    blocks = code_blocks("python")
    session = [block for block in blocks if 'read_hierarchies("adult")' in block]
    assert len(session) == 2 and session[0] == blocks[0]
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    for number, block in enumerate(session):
        exec(compile(block, f"README.md python block {number}", "exec"), names)
    risk = names["release"].risk(beta=0.2)  # type: ignore[attr-defined]
    assert risk["association_max"] <= 0.2 and risk["association_over_beta_share"] == 0
