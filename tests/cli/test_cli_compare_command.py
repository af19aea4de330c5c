"""``ppdp compare``'s recommended command runs as printed: it reads the table as compare read
it (--qi, --names, ...), declares the domains compare measured with, writes each parameter so
that it reads back as the same number, and is printed on one line."""

from __future__ import annotations

import json
import random
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.datasets import adult
from ppdp.evaluate.compare import compare
from ppdp.evaluate.compare_report import Recommendation, publish_command

runner = CliRunner()


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


DISEASES = ["flu", "cold", "hiv", "cancer", "asthma", "gastritis", "x", "y"]


def visits(path: Path, *, header: bool = True) -> Path:
    """400 rows of a table with no declared domain."""
    rng = random.Random(1)
    lines = ["age,sex,zip,city,disease"] if header else []
    for _ in range(400):
        lines.append(f"{20 + rng.randrange(50)},{rng.choice('FM')},{1000 + rng.randrange(8)},"
                     f"{rng.choice('abc')},{rng.choice(DISEASES)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def recommended(stdout: str) -> list[str]:
    """The recommended command's words, from the one line that holds it."""
    lines = [line.strip() for line in stdout.splitlines()
             if line.strip().startswith("ppdp publish")]
    assert len(lines) == 1, stdout
    return shlex.split(lines[0])


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PPDP_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def test_the_recommended_command_runs_on_a_csv_without_declared_domains(here: Path) -> None:
    source = visits(here / "visits.csv")
    stdout = ok("compare", source.name, "-s", "disease", "--qi", "age,sex,zip", "--privacy",
                "rho1=1/13,rho2=0.2", "--quick", "--runs", "1", "--seed", "1", "-o", "cmp")
    words = recommended(stdout)
    assert words[:3] == ["ppdp", "publish", "visits.csv"]
    assert words[words.index("--qi") + 1] == "age,sex,zip" and "--observed-domains" in words
    # Run as printed (no --seed: a release for the public).
    ok(*words[1:])
    results = json.loads((here / "cmp" / "results.json").read_text())
    # The report gives the same command, naming the file.
    assert shlex.split(results["publish_command"]) == words
    chosen = results["recommendation"]
    release = json.loads((here / f"{chosen['mechanism']}-release" / "release.json").read_text())
    assert release["mechanism"] == chosen["mechanism"]
    assert {k: release["parameters"][k] for k in chosen["parameters"]} == chosen["parameters"]
    assert "city" not in {column["name"] for column in release["schema"]}
    assert "--observed-domains: the values present in age, sex, zip, disease" in " ".join(
        stdout.split())


def test_the_recommended_command_reads_a_headerless_file_as_compare_did(here: Path) -> None:
    visits(here / "visits.data", header=False)
    domain = "disease=" + ",".join(DISEASES)
    stdout = ok("compare", "visits.data", "--no-header", "--names", "age,sex,zip,city,disease",
                "-s", "disease", "--quasi-identifiers", "sex,zip", "--domain", domain,
                "--privacy", "beta=0.5", "--quick", "--runs", "1", "--seed", "2", "-o", "cmp")
    words = recommended(stdout)
    for option, value in (("--names", "age,sex,zip,city,disease"), ("--qi", "sex,zip"),
                          ("--domain", domain)):
        assert words[words.index(option) + 1] == value
    assert "--no-header" in words
    ok(*words[1:])


def test_float_parameters_are_written_to_read_back_exactly(here: Path) -> None:
    result = compare(adult(sensitive="occupation"), privacy="beta=0.2", quick=True, runs=1,
                     random_state=1)
    assert result.to_dict()["publish_command"].startswith("ppdp publish SOURCE")
    # The recommendation given parameters of long decimals.
    result = replace(result, recommendation=Recommendation(
        "uniform", {"rho1": 1 / 13, "rho2": 1 / 3}, "chosen here"),
        publish_options=("--qi", "age,sex"))
    command = publish_command(result, "adult")
    assert command is not None
    assert "-p rho1=1/13 -p rho2=1/3" in command
    words = shlex.split(command)
    ok(*words[1:])
    parameters = json.loads((here / "uniform-release" / "release.json").read_text())[
        "parameters"]
    assert parameters["rho1"] == 1 / 13 and parameters["rho2"] == 1 / 3
