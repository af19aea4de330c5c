"""The command line's help: lists made from the registries, numbers as they are typed, and
the --quasi-identifiers spelling of --qi."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdp.attack.run import ATTACKS, attack_list
from ppdp.cli import app
from ppdp.evaluate.experiments import EXPERIMENTS
from ppdp.mechanisms.parameters import Parameter, number_text, real_number

runner = CliRunner()


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_evaluate_help_lists_every_experiment() -> None:
    text = ok("evaluate", "--help")
    for name in EXPERIMENTS:
        assert f"{name}:" in text, name
    assert "@" not in text and "see below" not in text


def test_evaluate_help_is_read_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An experiment added to the registry is listed without touching the command."""
    monkeypatch.setitem(EXPERIMENTS, "tiny_added", ("a tiny experiment", EXPERIMENTS["sdr"][1]))
    text = ok("evaluate", "--help")
    assert "tiny_added: a tiny experiment" in text
    assert sum(f"{name}:" in text for name in EXPERIMENTS) == len(EXPERIMENTS) >= 11


def test_attack_help_lists_every_attack_and_what_each_reports() -> None:
    text = ok("attack", "--help")
    for name, _, also in attack_list():
        assert f"{name}:" in text, name
        for other in also:
            assert other in text, other
    # The --attack option lists the names it takes.
    assert ", ".join(ATTACKS) in " ".join(text.replace("│", " ").split())
    assert "@" not in text
    assert {other for _, _, also in attack_list() for other in also} == {"repeated",
                                                                        "singling_out"}


@pytest.mark.parametrize("value", [1 / 13, 0.2, 1e-5, 1 / 3, 2 / 7, 0.123456789, 5.0, 1 / 30])
def test_numbers_are_written_as_they_read_back(value: float) -> None:
    text = number_text(value)
    assert real_number(text) == value
    assert Parameter("rho1", float, "").convert(text) == value
    assert len(text) <= 11


def test_fractions_are_written_as_fractions() -> None:
    assert number_text(1 / 13) == "1/13" and number_text(0.2) == "0.2"
    assert number_text(5) == "5" and number_text("frequency") == "frequency"


def test_defaults_print_briefly() -> None:
    assert "0.0769" not in ok("demo", "--help") and "1/13" in ok("demo", "--help")
    assert "0.0769" not in ok("mechanisms")


def test_a_fraction_is_taken_as_a_parameter(tmp_path: Path) -> None:
    ok("publish", "adult", "-m", "uniform", "-s", "occupation", "-p", "rho1=1/13", "-p",
       "rho2=0.5", "--seed", "1", "-o", tmp_path / "r")
    parameters = json.loads((tmp_path / "r" / "release.json").read_text())["parameters"]
    assert parameters["rho1"] == 1 / 13


def test_quasi_identifiers_spells_qi(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,s\n" + "".join(f"{i % 3},{i % 2},{'uvw'[i % 3]}\n" for i in range(30)))
    for option, out in (("--qi", "qi"), ("--quasi-identifiers", "long")):
        ok("publish", path, "-m", "dbr", "-s", "s", option, "b", "--observed-domains",
           "--seed", "1", "-o", tmp_path / out)
    assert (tmp_path / "qi" / "release.json").read_bytes() == (
        tmp_path / "long" / "release.json").read_bytes()
    text = ok("compare", path, "-s", "s", "--quasi-identifiers", "b", "--advice-only")
    assert "mechanism" in text
    for command in ("publish", "compare"):
        assert "--quasi-identifiers" in ok(command, "--help")
