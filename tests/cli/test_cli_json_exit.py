"""The command line's exit codes (0 done, 1 a bug, 2 a wrong command line, 3 the data,
4 a release) and the --json output of every command that prints results: one line of strict
JSON with the keys docs/reference/exit-codes.md lists."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ppdp.mechanisms
from ppdp.cli import app
from ppdp.cli._app import EXIT_INPUT, EXIT_RELEASE, EXIT_USAGE, exit_code
from ppdp.errors import (
    InfeasibleError,
    MissingValuesError,
    PpdpError,
    QueryError,
    ReleaseError,
    SchemaError,
    UndeclaredDomainError,
)
from ppdp.evaluate.experiments import EXPERIMENTS
from ppdp.evaluate.result import Claim, ExperimentResult

runner = CliRunner()

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes.md"


def run(*args: object) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def as_json(*args: object) -> Any:
    """A command's --json output: exit 0 and one line of strict JSON."""
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0], parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


@pytest.fixture
def data_csv(tmp_path: Path) -> Path:
    path = tmp_path / "patients.csv"
    path.write_text("age,sex,disease\n" + "".join(
        f"{20 + i % 7},{'FM'[i % 2]},{['flu', 'cold', 'hiv', 'cancer', 'x', 'y'][i % 6]}\n"
        for i in range(60)))
    return path


# -- exit codes ---------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "code"), [
    (ValueError("x"), 2), (QueryError("x"), 2), (FileExistsError("x"), 2),
    (SchemaError("x"), 3), (MissingValuesError("x"), 3), (UndeclaredDomainError("x"), 3),
    (InfeasibleError("x"), 3), (FileNotFoundError("x"), 3), (PermissionError("x"), 3),
    (MemoryError(), 3), (PpdpError("x"), 3), (ReleaseError("x"), 4)])
def test_each_error_class_has_its_exit_code(error: BaseException, code: int) -> None:
    assert exit_code(error) == code


def test_exit_codes_of_commands(data_csv: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # click's usage errors, and values an option does not take: 2.
    assert run("publish", data_csv, "--no-such-option").exit_code == EXIT_USAGE
    assert run("publish", data_csv, "-m", "dbr").exit_code == EXIT_USAGE  # no -o
    assert run("publish", data_csv, "-m", "teleport", "-o", tmp_path / "r").exit_code == 2
    assert run("count", data_csv, "age >>> 3").exit_code == EXIT_USAGE
    # The data: 3.
    gaps = tmp_path / "gaps.csv"
    gaps.write_text("a,s\n1,x\n,y\n3,z\n")
    assert run("publish", gaps, "-m", "dbr", "-s", "s", "--observed-domains", "-o",
               tmp_path / "r").exit_code == EXIT_INPUT
    assert run("publish", data_csv, "-m", "splu", "-s", "disease", "-p", "gamma=3", "-o",
               tmp_path / "r").exit_code == EXIT_INPUT  # undeclared domain
    assert run("count", tmp_path / "nope.csv", "a = 1").exit_code == EXIT_INPUT
    # A damaged release: 4.
    release = tmp_path / "release"
    assert run("publish", data_csv, "-m", "dbr", "-s", "disease", "--observed-domains",
               "--seed", "1", "-o", release).exit_code == 0
    metadata = release / "release.json"
    metadata.write_text(metadata.read_text().replace('"n_rows": 60', '"n_rows": 61'))
    result = run("count", release, "age > 3")
    assert result.exit_code == EXIT_RELEASE and "changed after" in result.stderr
    # A bug: Python's traceback and 1.
    monkeypatch.setattr(ppdp.mechanisms, "get_mechanism",
                        lambda name: (_ for _ in ()).throw(RuntimeError("a bug")))
    result = run("publish", data_csv, "-m", "dbr", "-o", tmp_path / "r2")
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)


def test_the_exit_codes_page_lists_the_codes() -> None:
    text = PAGE.read_text()
    rows = dict(re.findall(r"^\| (\d) \| ([^|]+) \|", text, flags=re.MULTILINE))
    assert sorted(rows) == ["0", "1", "2", "3", "4"]
    assert "command line" in rows[str(EXIT_USAGE)] and "data" in rows[str(EXIT_INPUT)]
    assert "release" in rows[str(EXIT_RELEASE)]


# -- --json ---------------------------------------------------------------------------------


def test_publish_json(data_csv: Path, tmp_path: Path) -> None:
    data = as_json("publish", data_csv, "-m", "dbr", "-s", "disease", "--qi", "age",
                   "--observed-domains", "--seed", "1", "-o", tmp_path / "r")
    assert data.keys() >= {"release", "mechanism", "parameters", "n_rows", "dropped_rows",
                           "seeded", "columns"}
    assert data["release"] == str(tmp_path / "r") and data["n_rows"] == 60 and data["seeded"]
    assert {c["name"]: c["published"] for c in data["columns"]} == {
        "age": True, "sex": False, "disease": True}


def test_mechanisms_json() -> None:
    data = as_json("mechanisms")
    assert [m["name"] for m in data["mechanisms"]] == list(ppdp.mechanisms.all_mechanisms())
    splu = next(m for m in data["mechanisms"] if m["name"] == "splu")
    gamma = next(p for p in splu["parameters"] if p["name"] == "gamma")
    assert gamma.keys() == {"name", "type", "required", "default", "help"}


def test_compare_json(data_csv: Path, tmp_path: Path) -> None:
    advice = as_json("compare", data_csv, "-s", "disease", "--privacy", "beta=0.5",
                     "--advice-only")
    assert advice["privacy"] == "beta=0.5"
    assert {a["mechanism"] for a in advice["advice"]} == set(ppdp.mechanisms.all_mechanisms())
    data = as_json("compare", data_csv, "-s", "disease", "--privacy", "beta=0.5", "--quick",
                   "--runs", "1", "--seed", "1", "-o", tmp_path / "cmp")
    assert data.keys() >= {"recommendation", "publish_command", "mechanisms", "privacy",
                           "observed_domains", "files"}
    assert data["publish_command"].startswith(f"ppdp publish {data_csv}")
    assert data["observed_domains"] == ["age", "sex", "disease"]


def test_evaluate_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def tiny(config: Any) -> ExperimentResult:
        return ExperimentResult("tiny", "a tiny experiment", {}, rows=[{"x": 1}],
                                claims=[Claim("it holds", "it does", True)], notes=["a note"])

    monkeypatch.setitem(EXPERIMENTS, "tiny", ("a tiny experiment", tiny))
    data = as_json("evaluate", "tiny", "--quick", "-o", tmp_path / "ev")
    assert data["experiments"][0].keys() == {"name", "title", "seconds", "claims", "notes"}
    assert data["experiments"][0]["claims"] == [
        {"paper": "it holds", "measured": "it does", "verdict": "holds", "holds": True}]
    assert str(tmp_path / "ev" / "claims.csv") in data["files"]


def test_demo_json(tmp_path: Path) -> None:
    data = as_json("demo", "-o", tmp_path / "demo", "--size", "60", "--seed", "3")
    assert data.keys() >= {"rows", "gamma", "rho1", "rho2", "files"}
    assert data["rho1"] == 1 / 13


def test_count_guarantee_risk_attack_json(data_csv: Path, tmp_path: Path) -> None:
    assert as_json("count", data_csv, "sex = 'F'")["estimate"] == 30
    assert as_json("guarantee", "splu", "-p", "gamma=3").keys() >= {"mechanism"}
    release = tmp_path / "amb"
    assert run("publish", data_csv, "-m", "ambiguity", "-s", "disease", "-p", "alpha=0.5",
               "-p", "beta=0.5", "--observed-domains", "--seed", "1", "-o",
               release).exit_code == 0
    assert as_json("risk", release)["mechanism"] == "ambiguity"
    attacks = as_json("attack", release, data_csv, "--seed", "1")
    assert attacks.keys() >= {"release", "mechanism", "files"}
