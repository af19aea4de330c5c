"""Tests of the ppdp command line (ppdp.cli)."""

from __future__ import annotations

import csv
import importlib.metadata
import json
import shlex
import typing
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.io.read import write_table
from ppdp.mechanisms import all_mechanisms
from ppdp.mechanisms.alphabeta.privacy import public_row_count

runner = CliRunner()

DISEASES = ["flu", "cold", "hiv", "cancer", "asthma", "gastritis"]
# The synthetic table's values present are its public domains.
OBSERVED = "--observed-domains"


@pytest.fixture
def data_csv(tmp_path: Path) -> Path:
    """60 rows; each disease 10 times, so gamma and l up to 6 are feasible."""
    path = tmp_path / "patients.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "sex", "zip", "disease"])
        for i in range(60):
            writer.writerow([20 + i % 7, "F" if i % 3 else "M", f"{1000 + i % 4}",
                             DISEASES[i % 6]])
    return path


def invoke(*args: str) -> object:
    return runner.invoke(app, [str(a) for a in args])


def ok(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def fails(*args: str, match: str, code: int = 2) -> str:
    """Run a command that must fail: exit ``code`` (2: the command line is wrong, 3: the data,
    4: a release), one red 'error:' line on stderr, no traceback."""
    result = invoke(*args)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert match in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize(("mechanism", "params"),
                         [("splu", ["-p", "gamma=3"]), ("anatomy", ["-p", "l=3"]), ("dbr", []),
                          ("uniform", ["-p", "rho1=0.2", "-p", "rho2=0.5"]),
                          ("sdr", ["-p", "rho1=0.2", "-p", "rho2=0.5", "-p", "delta=0.1"])])
def test_publish_and_count_round_trip(data_csv: Path, tmp_path: Path, mechanism: str,
                                      params: list[str]) -> None:
    out = tmp_path / "release"
    text = ok("publish", data_csv, "--mechanism", mechanism, "--sensitive", "disease", *params,
              OBSERVED, "--seed", "1", "-o", out)
    assert (out / "release.json").is_file()
    assert mechanism in text and "60 rows" in text and "disease" in text
    # Non-sensitive columns are published unchanged: their counts are exact.
    exact = json.loads(ok("count", out, "sex = 'F'", "--json"))
    assert set(exact) == {"estimate", "stderr", "ci95"}
    assert exact["estimate"] == 40
    answer = json.loads(ok("count", out, "sex = 'F' AND disease = 'flu'", "--json"))
    assert set(answer) == {"estimate", "stderr", "ci95"}
    assert isinstance(answer["estimate"], float | int)
    assert answer["stderr"] is None or isinstance(answer["stderr"], float | int)
    plain = ok("count", out, "sex = 'F' AND disease = 'flu'")
    assert "estimate" in plain and "95% interval" in plain
    # The same seed gives the same release, hence the same estimate.
    again = tmp_path / "again"
    ok("publish", data_csv, "-m", mechanism, "-s", "disease", *params, OBSERVED, "--seed", "1",
       "-o", again)
    assert json.loads(ok("count", again, "sex = 'F' AND disease = 'flu'", "--json")) == answer


def test_count_with_the_papers_splu_estimator(tmp_path: Path) -> None:
    out = tmp_path / "release"
    ok("publish", "adult", "-m", "splu", "-s", "occupation", "-p", "gamma=5", "--seed", "2",
       "-o", out)
    query = "sex = 'Female' AND occupation = 'Sales'"
    release = ppdp.load_release(out)
    layout = json.loads(ok("count", out, query, "--json"))
    assert layout["estimate"] == pytest.approx(release.count(query).value)
    paper = json.loads(ok("count", out, query, "--json", "--estimator", "paper"))
    release.estimator = "paper"
    assert paper["estimate"] == pytest.approx(release.count(query).value)
    assert paper["estimate"] != pytest.approx(layout["estimate"])
    fails("count", out, query, "--estimator", "exact", match="--estimator must be one of")
    fails("count", "adult", query, "--estimator", "paper", match="applies to SPLU-Gen")


def test_count_group_by_json(data_csv: Path) -> None:
    data = json.loads(ok("count", data_csv, "SELECT COUNT(*) FROM t GROUP BY sex", "--json"))
    assert list(data) == ["groups"]
    for group in data["groups"]:
        assert set(group) == {"key", "estimate", "stderr", "ci95"}
    assert {g["key"]["sex"]: g["estimate"] for g in data["groups"]} == {"F": 40, "M": 20}
    plain = ok("count", data_csv, "SELECT COUNT(*) FROM t GROUP BY sex")
    assert "F" in plain and "40" in plain and "2 groups" in plain


def test_exact_counts_on_csv_and_adult(data_csv: Path) -> None:
    assert json.loads(ok("count", data_csv, "disease = 'flu'", "--json")) == {
        "estimate": 10.0, "stderr": 0.0, "ci95": [10.0, 10.0]}
    adult = json.loads(ok("count", "adult", "sex = 'Female'", "--json"))
    assert adult["estimate"] == 9782
    assert "9782" in ok("count", "adult", "sex = 'Female'")


def test_laplace_count_with_seed(data_csv: Path) -> None:
    args = ("count", "adult", "sex = 'Female'", "--mechanism", "laplace", "-p", "epsilon=1",
            "--seed", "4", "--json")
    first = json.loads(ok(*args))
    assert first == json.loads(ok(*args))
    assert set(first) == {"estimate", "stderr", "ci95"}
    # Discrete Laplace noise of scale 1: |noise| > 30 has probability about 2e-13.
    assert first["stderr"] > 0
    assert abs(first["estimate"] - 9782) <= 30 and first["estimate"] == int(first["estimate"])
    low, high = first["ci95"]
    assert low < first["estimate"] < high
    fails("count", data_csv, "sex = 'F'", "-p", "epsilon=1", match="--mechanism laplace")
    fails("count", data_csv, "sex = 'F'", "-m", "splu", "-p", "gamma=3", match="publish")


def test_laplace_publish_fails_without_output(data_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "laplace-out"
    fails("publish", data_csv, "-m", "laplace", "-s", "disease", "-p", "epsilon=1", "-o", out,
          match="no data release")
    assert not out.exists()


def test_guarantee_splu_json_example_2() -> None:
    data = json.loads(ok("guarantee", "splu", "-p", "gamma=10", "-p", "epsilon=0.3", "-p", "a=3",
                         "--json"))
    assert data["mechanism"] == "splu-gen" and data["gamma"] == 10 and data["a"] == 3
    assert data["T_P"] >= 0.6  # Example 2: T_P >= 0.6 for gamma = 10, epsilon = 0.3, a = 3
    assert [item["f"] for item in data["privacy_by_count"]] == [1, 2, 3]
    assert data["T_f"] is None
    with_utility = json.loads(ok("guarantee", "splu", "-p", "gamma=10", "-p", "T_E=0.1",
                                 "--json"))
    # Chebyshev on Binomial(10 f, 1/10): (1 - 1/10) / (0.3^2 * 0.1) = 100.
    assert with_utility["T_f"] == pytest.approx(100.0)
    assert with_utility["T_f_as_printed"] == pytest.approx((1 / (10 * 0.09 * 0.1)) ** 0.5)


def test_guarantee_plain_output() -> None:
    text = ok("guarantee", "splu", "-p", "gamma=10", "-p", "T_E=0.1")
    assert "T_P" in text and "0.6126" in text
    assert "T_f_as_printed" in text and "Chebyshev" in text and "Lemma 1 as printed" in text
    assert "T_E" in ok("guarantee", "splu", "-p", "gamma=5")  # tells how to get T_f
    assert "0.2" in ok("guarantee", "anatomy", "-p", "l=5")
    laplace = json.loads(ok("guarantee", "laplace", "-p", "epsilon=0.5", "--json"))
    assert laplace["scale"] == pytest.approx(2.0)
    assert "no formal guarantee" in ok("guarantee", "dbr")
    fails("guarantee", "splu", "-p", "gamma=10", "-p", "b=2", match="no parameter 'b'")
    fails("guarantee", "anatomy", match="needs parameter 'l'")


def test_guarantee_uniform_and_sdr() -> None:
    data = json.loads(ok("guarantee", "uniform", "-p", "rho1=0.25", "-p", "rho2=0.5", "-p",
                         "m=10", "-p", "n=10000", "--json"))
    # Eq. 6: gamma = 0.5 * 0.75 / (0.25 * 0.5) = 3; Eq. 4 with m = 10: p = 2/12, q = 1/12.
    assert data["gamma"] == pytest.approx(3.0)
    assert data["retention"] == pytest.approx(2 / 12) and data["replacement"] == pytest.approx(
        1 / 12)
    # Eq. 11: 2 sqrt(ln 40) / sqrt(10000) * (10/2 + 1), ln 40 = 3.6888795.
    assert data["epsilon"] == pytest.approx(0.02 * 1.9206455 * 6, rel=1e-6)  # sqrt(3.6888795)
    no_size = json.loads(ok("guarantee", "uniform", "-p", "rho1=0.25", "-p", "rho2=0.5",
                            "--json"))
    assert no_size["gamma"] == pytest.approx(3.0) and no_size["epsilon"] is None
    text = ok("guarantee", "sdr", "adult", "-s", "occupation", "-p", "rho1=0.077", "-p",
              "rho2=0.2")
    assert "sub-tables" in text and "mean_retention" in text and "Eq. 12" in " ".join(
        text.split())
    sdr = json.loads(ok("guarantee", "sdr", "adult", "-s", "occupation", "-p", "rho1=0.077",
                        "-p", "rho2=0.2", "--json"))
    assert sdr["subtables"] == len(sdr["subtable_details"]) >= 1
    assert sum(part["rows"] for part in sdr["subtable_details"]) == 30162
    assert sdr["row_weighted_retention"] > sdr["uniform_retention"]
    fails("guarantee", "uniform", "-p", "rho1=0.5", "-p", "rho2=0.2", match="rho1 < rho2")
    fails("guarantee", "splu", "adult", "-p", "gamma=5", match="does not depend on the data")
    fails("guarantee", "uniform", "adult", "-s", "occupation", "-p", "rho1=0.1", "-p",
          "rho2=0.2", "-p", "m=3", match="comes from the table")
    fails("guarantee", "sdr", "adult", "-s", "occupation", "-p", "rho1=0.0001", "-p",
          "rho2=0.2", match="raise rho1", code=3)


def test_guarantee_alphabeta_and_frapp() -> None:
    n, m = 30162, 648023040
    data = json.loads(ok("guarantee", "alphabeta", "-p", "k=10", "-p", "gamma=0.2", "-p",
                         f"n={n}", "-p", f"m={m}", "--json"))
    # Section 4.2: d = k n'/m, beta = d/gamma, alpha + beta = 1/2, with n' the row count
    # rounded up as the views publish it (beta would otherwise reveal n).
    public_n = public_row_count(n, k=10, gamma=0.2)
    assert data["d"] == pytest.approx(10 * public_n / m)
    assert data["beta"] == pytest.approx(10 * public_n / m / 0.2)
    assert data["alpha"] + data["beta"] == pytest.approx(0.5)
    assert data["expected_view_size"] == pytest.approx(data["alpha"] * n + data["beta"] * m)
    on_table = json.loads(ok("guarantee", "alphabeta", "adult", "-p", "k=10", "-p",
                             "gamma=0.2", "--json"))
    # The bundled adult declares the UCI codebook's domains: 74 ages and 8 workclasses instead
    # of the 72 and 7 values present, so m = 648,023,040 * 74/72 * 8/7.
    assert on_table["n"] == n and on_table["m"] == m * 74 // 72 * 8 // 7 == 761_169_920
    assert on_table["d"] == pytest.approx(10 * public_n / on_table["m"])
    fails("guarantee", "alphabeta", "-p", "alpha=0.4", "-p", "beta=0.00001", "-p", "k=10",
          "-p", "gamma=0.2", "-p", f"n={n}", "-p", f"m={m}", match="raise beta", code=3)
    fails("guarantee", "alphabeta", "-p", "k=10", match="gamma")
    frapp = json.loads(ok("guarantee", "frapp", "adult", "-p", "k=10", "-p", "gamma=0.2",
                          "--json"))
    # About gamma / (k (1 - gamma)) = 0.025 (see ppdp.mechanisms.frapp).
    assert 0.02 < frapp["retention"] < 0.025


def test_mechanisms_listing() -> None:
    text = ok("mechanisms")
    for name in all_mechanisms():
        assert name in text
    assert "gamma" in text and "epsilon" in text and "required" in text


def test_errors_exit_2_with_a_message(data_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    fails("publish", data_csv, "-m", "nope", "-s", "disease", "-o", out,
          match="unknown mechanism 'nope'")
    fails("publish", data_csv, "-m", "splu", "-s", "disease", "-p", "gamma", "-o", out,
          match="key=value")
    fails("publish", data_csv, "-m", "splu", "-s", "illness", "-p", "gamma=3", "-o", out,
          match="unknown column 'illness'", code=3)
    fails("count", data_csv, "agee = 3", match="unknown column 'agee'")
    fails("count", "adult", "sex = 'Femal'", match="'Female'")
    fails("count", tmp_path / "missing.csv", "sex = 'F'", match="bundled datasets: adult",
          code=3)
    fails("publish", "adult", "-m", "splu", "-s", "occupation", "-p", "gamma=20", "-o", out,
          match="largest feasible gamma is 7", code=3)
    fails("publish", data_csv, "-m", "splu", "-s", "disease", "-p", "gamma=x", "-o", out,
          match="gamma")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patients.csv"]


def test_existing_output_needs_overwrite(data_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "release"
    ok("publish", data_csv, "-m", "dbr", "-s", "disease", OBSERVED, "--seed", "2", "-o", out)
    fails("publish", data_csv, "-m", "dbr", "-s", "disease", OBSERVED, "-o", out,
          match="--overwrite")
    ok("publish", data_csv, "-m", "splu", "-s", "disease", "-p", "gamma=2", OBSERVED, "-o", out,
       "--overwrite")
    assert json.loads((out / "release.json").read_text())["mechanism"] == "splu"


def test_overwrite_of_the_current_directory_is_refused_every_time(
        data_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o . --overwrite`` run inside a release: one line, the same on every run."""
    out = tmp_path / "release"
    ok("publish", data_csv, "-m", "dbr", "-s", "disease", OBSERVED, "--seed", "2", "-o", out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.chdir(out)
    for _ in range(2):
        fails("publish", data_csv, "-m", "dbr", "-s", "disease", OBSERVED, "-o", ".",
              "--overwrite", match=". is the current directory; it cannot be replaced from "
                                   "inside: run from another directory")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_drop_missing_and_qi(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text("a;b;s\n1;x;u\n2;?;v\n3;y;w\n4;x;u\n5;y;v\n6;x;w\n")
    out = tmp_path / "release"
    fails("publish", path, "-m", "dbr", "-s", "s", OBSERVED, "-o", out, match="--drop-missing",
          code=3)
    text = ok("publish", path, "-m", "dbr", "-s", "s", "--qi", "b", "--drop-missing", "--sep",
              ";", OBSERVED, "-o", out)
    assert "dropped 1 rows" in text and "left out" in text
    assert json.loads(ok("count", out, "b = 'x'", "--json"))["estimate"] == 3
    fails("count", out, "a = 1", match="unknown column 'a'")


@pytest.mark.parametrize("command", ["publish", "count", "guarantee", "mechanisms", "demo",
                                     "attack"])
def test_help_shows_examples(command: str) -> None:
    text = ok(command, "--help")
    assert "Example" in text and f"ppdp {command}" in text


def test_help_says_seed_is_for_experiments() -> None:
    text = " ".join(ok("publish", "--help").split())
    assert "reproducible" in text and "entropy" in text


def test_demo_command(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    text = ok("demo", "-o", out, "--size", "60", "--seed", "3")
    for name in ("SPLU-Gen", "Anatomy", "DBR", "Laplace", "Uniform perturbation", "SDR (PP)"):
        assert name in text
    assert (out / "results.csv").is_file() and (out / "errors.png").is_file()
    assert "results.json" in text
    # The evaluation machinery reports the demo's run too, with the run time results.json
    # holds (its value is checked against a counting clock in tests/evaluate/test_demo.py).
    assert (out / "report.html").is_file() and (out / "claims.csv").is_file()
    assert "SPLU-Gen" in (out / "splu.csv").read_text()
    run_time = json.loads((out / "results.json").read_text())["seconds"]
    assert f"Run time {run_time:.1f} s." in (out / "report.html").read_text()
    # A second run refuses the folder, before any work, unless told to replace it.
    line = fails("demo", "-o", out, "--size", "60",
                 match="already exists and is not empty; choose another directory or pass "
                       "--overwrite")
    assert "overwrite=True" not in line
    ok("demo", "-o", out, "--size", "60", "--seed", "4", "--overwrite")
    assert json.loads((out / "results.json").read_text())["seed"] == 4
    (out / "mine.txt").write_text("keep")
    fails("demo", "-o", out, "--size", "60", "--overwrite", match="not the demo's (mine.txt)")
    assert (out / "mine.txt").read_text() == "keep"


def test_ambiguity_publish_risk_and_per_tuple(data_csv: Path, tmp_path: Path) -> None:
    release = tmp_path / "amb"
    ok("publish", data_csv, "-m", "ambiguity", "-s", "disease", "-p", "alpha=0.5",
       "-p", "beta=0.5", OBSERVED, "-o", release, "--seed", "1")
    data = json.loads(ok("risk", release, "--json"))
    assert data["mechanism"] == "ambiguity"
    assert data["presence_max"] <= 0.5 and data["association_max"] <= 0.5
    per_tuple = tmp_path / "risk.csv"
    data = json.loads(ok("risk", release, data_csv, "--per-tuple", per_tuple, "--json"))
    assert data["source_rows"] == 60 and data["uncovered_rows"] == 0
    with open(per_tuple) as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 60
    assert set(rows[0]) == {"covering_groups", "presence", "presence_any", "association"}
    assert max(float(r["presence"]) for r in rows) <= 0.5
    assert "estimate" in ok("count", release, "age >= 22 AND disease = 'flu'")


def test_mondrian_with_hierarchies_and_risk(tmp_path: Path) -> None:
    release = tmp_path / "gen"
    ok("publish", "adult", "-m", "mondrian", "-s", "occupation", "-p", "k=10", "-p", "l=3",
       "--hierarchies", "adult", "-o", release, "--seed", "1")
    data = json.loads(ok("risk", release, "--json"))
    assert data["mechanism"] == "mondrian" and data["k"] >= 10 and data["l"] >= 3


def test_mondrian_frequency_diversity(tmp_path: Path) -> None:
    release = tmp_path / "frequency"
    published = ok("publish", "adult", "-m", "mondrian", "-s", "occupation", "-p", "k=5", "-p",
                   "l=5", "-p", "diversity=frequency", "--hierarchies", "adult", "-o", release,
                   "--seed", "1")
    assert "diversity=frequency" in published
    assert json.loads((release / "release.json").read_text())["parameters"]["diversity"] == (
        "frequency")
    data = json.loads(ok("risk", release, "--json"))
    assert data["k"] >= 5 and data["association_max"] <= 0.2
    assert 0 < data["presence_max"] <= 1
    assert "association_max" in ok("risk", release)
    stated = json.loads(ok("guarantee", "mondrian", "-p", "k=5", "-p", "l=5", "-p",
                           "diversity=frequency", "--json"))
    assert stated["diversity"] == "frequency" and "1/5" in stated["statement"]
    fails("publish", "adult", "-m", "mondrian", "-s", "occupation", "-p", "k=5", "-p", "l=8",
          "-p", "diversity=frequency", "-o", tmp_path / "refused",
          match="'Prof-specialty' makes up 0.1339 of the table", code=3)
    fails("publish", "adult", "-m", "mondrian", "-s", "occupation", "-p", "k=5", "-p",
          "diversity=entropy", "-o", tmp_path / "unknown",
          match="diversity must be 'distinct' or 'frequency'")


def test_hierarchies_declare_domains_for_every_mechanism(data_csv: Path, tmp_path: Path) -> None:
    """--hierarchies declares the leaves as the domains (it used to be for mondrian only)."""
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    fails("publish", data_csv, "-m", "anatomy", "-s", "disease", "-p", "l=2",
          "--hierarchies", folder, "-o", tmp_path / "x", match="no hierarchy files", code=3)
    assert not (tmp_path / "x").exists()
    # The leaves include a disease absent from the rows: the release lists it all the same.
    leaves = [*DISEASES, "malaria"]
    (folder / "hierarchy_disease.csv").write_text(
        "".join(f"{leaf};{'respiratory' if leaf in ('flu', 'cold', 'asthma') else 'other'};*\n"
                for leaf in leaves))
    ok("publish", data_csv, "-m", "anatomy", "-s", "disease", "-p", "l=2",
       "--hierarchies", folder, "-o", tmp_path / "x", "--seed", "1")
    schema = json.loads((tmp_path / "x" / "release.json").read_text())["schema"]
    domains = {column["name"]: column["domain"] for column in schema}
    assert sorted(domains["disease"]) == sorted(leaves)


def test_attack_json_files_and_the_release_untouched(data_csv: Path, tmp_path: Path) -> None:
    """`ppdp attack` prints JSON that parses, writes its three files into -o, and refuses an
    -o that is the release (or inside it) without writing anything there."""
    release = tmp_path / "anatomy"
    ok("publish", data_csv, "-m", "anatomy", "-s", "disease", "-p", "l=2", OBSERVED, "-o",
       release, "--seed", 1)
    before = sorted(path.name for path in release.iterdir())
    data = json.loads(ok("attack", release, data_csv, "--seed", 2, "--json", "-o",
                         tmp_path / "out", "--top", 5))
    assert data["mechanism"] == "anatomy" and data["rows"] == 60
    assert [a["attack"] for a in data["attacks"]] == ["inference", "definetti"]
    assert all(a["bound"] == 0.5 and 0 <= a["success"] <= 1 for a in data["attacks"])
    assert sorted(Path(f).name for f in data["files"]) == ["attack-risk.png", "attacks.csv",
                                                           "individuals.csv"]
    with open(tmp_path / "out" / "individuals.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 5
    text = ok("attack", release, data_csv, "--attack", "definetti", "--seed", 2)
    assert "definetti" in text and "inference" not in text.split("definetti")[0]
    fails("attack", release, data_csv, "-o", release, match="release directory")
    fails("attack", release, data_csv, "-o", release / "sub", match="release directory")
    assert sorted(path.name for path in release.iterdir()) == before
    fails("attack", release, data_csv, "--attack", "teleport", match="unknown attack")


def test_risk_source_needs_an_ambiguity_release(data_csv: Path, tmp_path: Path) -> None:
    release = tmp_path / "anatomy"
    ok("publish", data_csv, "-m", "anatomy", "-s", "disease", "-p", "l=2", OBSERVED, "-o",
       release)
    result = invoke("risk", release)
    assert result.exit_code == 2 and "ambiguity and mondrian" in result.output


@pytest.mark.parametrize("mechanism,params", [("sdr", ["-p", "rho1=0.077", "-p", "rho2=0.2"]),
                                              ("dbr", [])])
def test_publish_streaming_writes_the_release_of_the_memory_engine(mechanism, params, tmp_path):
    source = tmp_path / "adult.parquet"
    write_table(ppdp.datasets.adult().to_arrow(), source)
    common = ["publish", source, "-m", mechanism, "-s", "occupation", *params, "--seed", 4,
              "--observed-domains"]
    streamed = invoke(*common, "-o", tmp_path / "s", "--engine", "streaming", "--batch-rows", 5000)
    assert streamed.exit_code == 0, streamed.output
    assert "30162 rows" in streamed.output
    memory = invoke(*common, "-o", tmp_path / "m", "--engine", "memory")
    assert memory.exit_code == 0, memory.output
    for path in (tmp_path / "m").iterdir():
        assert path.read_bytes() == (tmp_path / "s" / path.name).read_bytes(), path.name


def test_publish_engine_is_checked(tmp_path):
    source = tmp_path / "adult.parquet"
    write_table(ppdp.datasets.adult().to_arrow(), source)
    result = invoke("publish", source, "-m", "dbr", "-s", "occupation", "-o", tmp_path / "r",
                 "--engine", "cluster")
    assert result.exit_code == 2 and "--engine must be one of auto, memory, streaming, spark" \
        in result.output
    result = invoke("count", "adult", "age < 30", "--engine", "cluster")
    assert result.exit_code == 2 and "--engine must be one of auto, memory, streaming, spark" \
        in result.output
    # Spark counts on a release only: on data, refused, not answered in memory.
    result = invoke("count", "adult", "age < 30", "--engine", "spark")
    assert result.exit_code == 2 and "--engine spark counts on a release directory" \
        in result.output


def test_auto_reads_large_files_in_batches(tmp_path, monkeypatch):
    """--engine auto streams a file of STREAMING_FILE_BYTES or more, or one more than an eighth
    of the memory available, and reads the others whole; the help gives the size."""
    import ppdp.engines.streaming.engine
    import ppdp.plan.engine

    commands = typer.main.get_command(app).commands
    help_text = next(param.help for param in commands["publish"].params
                     if param.name == "engine")
    assert f"{ppdp.plan.engine.STREAMING_FILE_BYTES >> 20} MB or more" in help_text
    source = tmp_path / "adult.parquet"
    write_table(ppdp.datasets.adult().to_arrow(), source)
    streaming = ppdp.engines.streaming.engine.ENGINE
    opened = []
    monkeypatch.setattr(streaming, "open", lambda data, **options: opened.append(data) or
                        type(streaming).open(streaming, data, **options))
    size = source.stat().st_size
    cases = [(size, None, True), (size + 1, None, False), (size + 1, 8 * size - 1, True),
             (size + 1, 8 * size, False)]
    for i, (threshold, available, streamed) in enumerate(cases):
        monkeypatch.setattr(ppdp.plan.engine, "STREAMING_FILE_BYTES", threshold)
        monkeypatch.setattr(ppdp.plan.engine, "available_memory",
                            lambda available=available: available)
        opened.clear()
        ok("publish", source, "-m", "dbr", "-s", "occupation", OBSERVED, "--seed", 1,
           "-o", tmp_path / f"r{i}")
        assert bool(opened) == streamed, (threshold, available)
    for i in range(1, len(cases)):
        for path in (tmp_path / "r0").iterdir():
            assert path.read_bytes() == (tmp_path / f"r{i}" / path.name).read_bytes()


def test_an_engine_registered_later_needs_no_change_here(tmp_path, monkeypatch):
    """The command line runs any registered engine through the engine protocol: one that
    works elsewhere is said to, and publishes and counts as its protocol says."""
    import sys

    import ppdp.plan.engine

    module = tmp_path / "elsewhere_engine.py"
    module.write_text(
        "import contextlib\n"
        "from ppdp.engines.memory.engine import MemoryEngine\n"
        "class Elsewhere(MemoryEngine):\n"
        "    name = 'elsewhere'\n"
        "    @contextlib.contextmanager\n"
        "    def command(self):\n"
        "        yield 'elsewhere, on a test double'\n"
        "ENGINE = Elsewhere()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(ppdp.plan.engine.ENGINE_MODULES, "elsewhere", "elsewhere_engine")
    try:
        common = ["publish", "adult", "-m", "splu", "-s", "occupation", "-p", "gamma=4",
                  "--seed", 2]
        result = invoke(*common, "--engine", "elsewhere", "-o", tmp_path / "there")
        assert result.exit_code == 0, result.output
        assert "publishing elsewhere, on a test double" in result.stderr
        ok(*common, "--engine", "memory", "-o", tmp_path / "here")
        for path in (tmp_path / "here").iterdir():
            assert path.read_bytes() == (tmp_path / "there" / path.name).read_bytes()
        query = "occupation = 'Sales' AND sex = 'Male'"
        assert ok("count", tmp_path / "there", query, "--engine", "elsewhere", "--json") == \
            ok("count", tmp_path / "here", query, "--json")
        fails("count", "adult", query, "--engine", "elsewhere",
              match="--engine elsewhere counts with --mechanism laplace")
    finally:
        sys.modules.pop("elsewhere_engine", None)


def test_alphabeta_views_streamed_are_the_views_in_memory(tmp_path, monkeypatch):
    """Views 1 and 2 of a file through --engine streaming, with their private state, are the
    files --engine memory writes with the same seeds; the third view is refused (v = 2)."""
    source = tmp_path / "adult.parquet"
    write_table(ppdp.datasets.adult().to_arrow(), source)
    common = ["publish", source, "-m", "alphabeta", "-p", "k=10", "-p", "gamma=0.2", "-p",
              "v=2", "--observed-domains"]
    for view in (1, 2, 3):
        outputs = {}
        for engine in ("memory", "streaming"):
            monkeypatch.setenv("PPDP_STATE_DIR", str(tmp_path / f"state-{engine}"))
            outputs[engine] = tmp_path / f"{engine}-{view}"
            result = invoke(*common, "-o", outputs[engine], "--engine", engine, "--seed", view,
                            "--batch-rows", 7_000)
            if view == 3:
                assert result.exit_code == 3 and "v = 2" in result.output, result.output
                assert not outputs[engine].exists()
                continue
            assert result.exit_code == 0, result.output
            assert f"view {view} of at most v = 2" in result.output
        if view < 3:
            files = sorted(path.name for path in outputs["memory"].iterdir())
            assert files == sorted(path.name for path in outputs["streaming"].iterdir())
            for name in files:
                assert (outputs["memory"] / name).read_bytes() == \
                    (outputs["streaming"] / name).read_bytes(), (view, name)


# -- compare -----------------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


def page_commands(page: str, command: str) -> list[list[str]]:
    """The lines of a documentation page's bash blocks that start with ``command``, split as a
    shell splits them."""
    blocks = (DOCS / page).read_text().split("```bash\n")[1:]
    lines = [line for block in blocks for line in block.split("```")[0].splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line.startswith(command)]


def test_the_documented_compare_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands = page_commands("choosing.md", "ppdp compare")
    assert len(commands) == 2
    outputs = [ok(*argv[1:]) for argv in commands]
    data = json.loads((tmp_path / "adult-compare" / "results.json").read_text())
    assert data["privacy"]["text"] == "rho1=1/13,rho2=0.2"
    chosen = data["recommendation"]["mechanism"]
    assert f"recommended: {chosen}" in " ".join(outputs[1].split())
    assert (tmp_path / "adult-compare" / "report.html").stat().st_size > 10_000
    # --advice-only: SPLU-Gen's smallest gamma with T_P >= 0.6 for counts 1..3 on Adult.
    assert "gamma=7" in outputs[0]
    assert not (tmp_path / "adult-compare" / "splu").exists()


CHECKED_EXAMPLES = (
    "ppdp publish adult -m mondrian -s occupation -p k=10 -p l=5 --hierarchies adult",
    "ppdp risk adult-gen",
)
"""Examples of the Adult tutorial that run as written on a fresh clone: the bundled
hierarchies by name, and the risk of the release they make."""


def test_the_tutorial_command_line_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands = [argv for argv in page_commands("getting-started/adult.md", "ppdp ")
                if " ".join(argv).startswith(CHECKED_EXAMPLES)]
    # A renamed or removed example fails here: the list and the page change together.
    assert [next(c for c in CHECKED_EXAMPLES if " ".join(argv).startswith(c))
            for argv in commands] == list(CHECKED_EXAMPLES)
    for argv in commands:
        ok(*argv[1:])
    assert json.loads((tmp_path / "adult-gen" / "release.json").read_text())["mechanism"] == (
        "mondrian")


def test_compare_refuses_a_folder_that_holds_files_unless_overwrite(tmp_path):
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    args = ["compare", "adult", "-s", "occupation", "--quick", "--runs", "1", "--seed", "1",
            "-o", folder]
    fails(*args, match="--overwrite")
    ok(*args, "--overwrite")
    assert (folder / "notes.txt").read_text() == "mine"
    assert {p.name for p in folder.iterdir()} == {"notes.txt", "report.html", "results.json"}


@pytest.mark.parametrize(("args", "match", "code"), [
    (["--privacy", "beta=2", "--advice-only"], "beta must lie in (0, 1)", 2),
    (["--privacy", "rho1=0.3"], "names none of the forms", 2),
    ([], "-o DIR is needed", 2),
    (["--queries", "absent.sql", "-o", "out"], "absent.sql", 3),
])
def test_compare_bad_input_is_one_line(args, match, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fails("compare", "adult", "-s", "occupation", *args, match=match, code=code)


def test_version() -> None:
    assert ok("--version") == f"ppdp {importlib.metadata.version('ppdp')}\n"


def test_every_boolean_option_is_a_plain_flag() -> None:
    """Each command's boolean options are flags, shown without a value type, and a flag
    given a value gets one line that says how to write it."""
    commands = typer.main.get_command(app).commands
    # Each command with its words on the command line: the groups' commands (ppdp keys
    # create) too.
    registered = [((info.callback.__name__,), info, commands[info.callback.__name__])
                  for info in app.registered_commands]
    for group in app.registered_groups:
        group_name = group.typer_instance.info.name
        for info in group.typer_instance.registered_commands:
            name = info.name or info.callback.__name__
            registered.append(((group_name, name), info,
                               commands[group_name].commands[name]))
    booleans = {}
    for words, info, command in registered:
        hints = typing.get_type_hints(info.callback)
        options = {param.name: param for param in command.params}
        # Every option declared bool is a flag: none takes a value.
        assert all(options[name].is_flag for name, hint in hints.items() if hint is bool)
        booleans[words] = [options[name].opts[0] for name, hint in hints.items()
                           if hint is bool]
    assert set(commands) == {words[0] for words in booleans}
    assert booleans["publish",] == ["--drop-missing", "--overwrite", "--observed-domains",
                                    "--no-header", "--json"]
    assert booleans["demo",] == ["--overwrite", "--json"] and "--json" in booleans["count",]
    for words, flags in booleans.items():
        text = ok(*words, "--help")
        assert "<bool>" not in text, words
        for flag in flags:
            assert flag in text
    assert "<bool>" not in ok("--help")
    fails("publish", "adult", "-m", "dbr", "-s", "occupation", "-o", "x", "--drop-missing",
          "true", match="--drop-missing is a flag and takes no value: write --drop-missing")
    fails("count", "adult", "sex = 'Male'", "--json", "False", match="--json is a flag")


def test_encoding_of_a_latin_1_csv(tmp_path: Path) -> None:
    """A Latin-1 CSV is refused with a line naming the encoding tried and --encoding, and read
    with --encoding by every command that reads a source (publish in memory and streaming,
    count, guarantee, risk)."""
    path = tmp_path / "pacientes.csv"
    cities = ["Málaga", "Cádiz", "León", "Ávila"]
    illnesses = ["gripe", "asma", "otitis", "anemia"]
    rows = [f"{20 + i % 9};{cities[i % 4]};{illnesses[i // 12]}" for i in range(48)]
    path.write_bytes(("edad;ciudad;enfermedad\n" + "\n".join(rows) + "\n").encode("latin-1"))
    common = ["-m", "anatomy", "-s", "enfermedad", "-p", "l=2", OBSERVED, "--seed", "1"]
    fails("publish", path, *common, "-o", tmp_path / "refused",
          match="is not utf-8 text; give its encoding with encoding=\"...\" (CLI: --encoding",
          code=3)
    assert not (tmp_path / "refused").exists()
    for engine in ("memory", "streaming"):
        out = tmp_path / engine
        ok("publish", path, *common, "--encoding", "latin-1", "--engine", engine, "-o", out)
        answer = json.loads(ok("count", out, "ciudad = 'Málaga'", "--json"))
        assert answer["estimate"] == 12
    assert json.loads(ok("count", path, "ciudad = 'Ávila'", "--encoding", "latin-1",
                         "--json"))["estimate"] == 12
    fails("count", path, "ciudad = 'Ávila'", "--encoding", "ascii", match="not ascii text", code=3)
    sdr = json.loads(ok("guarantee", "sdr", path, "-s", "enfermedad", "-p", "rho1=0.3", "-p",
                        "rho2=0.6", "--encoding", "latin-1", "--json"))
    assert sum(part["rows"] for part in sdr["subtable_details"]) == 48
    ambiguity = tmp_path / "amb"
    ok("publish", path, "-m", "ambiguity", "-s", "enfermedad", "-p", "alpha=0.5", "-p",
       "beta=0.5", OBSERVED, "--encoding", "cp1252", "-o", ambiguity, "--seed", "1")
    risk = json.loads(ok("risk", ambiguity, path, "--encoding", "latin-1", "--json"))
    assert risk["source_rows"] == 48 and risk["uncovered_rows"] == 0


def test_progress_is_shown_on_a_terminal_only(data_csv: Path, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """Every command that can take long shows what it is doing on standard error when that is
    a terminal (TTY_COMPATIBLE=1 tells rich it is), and nothing otherwise; standard output
    stays as it is (--json parses either way). Progress is redrawn a few times a second, so
    the text checked is the last one shown, which is drawn whatever the speed."""
    monkeypatch.setenv("COLUMNS", "300")
    amb = tmp_path / "amb"
    ok("publish", data_csv, "-m", "ambiguity", "-s", "disease", "-p", "alpha=0.5", "-p",
       "beta=0.5", OBSERVED, "-o", amb, "--seed", "1")
    commands = [
        (["count", "adult", "sex = 'Male'", "--json"], "counting on adult"),
        (["guarantee", "sdr", "adult", "-s", "occupation", "-p", "rho1=0.077", "-p",
          "rho2=0.2", "--json"], "reading adult and computing the guarantee"),
        (["risk", amb, data_csv, "--json"], f"measuring the risk of {amb}"),
        (["publish", "adult", "-m", "dbr", "-s", "occupation", "-o", tmp_path / "dbr"],
         f"writing {tmp_path / 'dbr'}"),
        (["evaluate", "ambiguity_time", "--quick", "-o", tmp_path / "evaluation", "--seed", "1"],
         f"writing the report to {tmp_path / 'evaluation'}"),
        (["demo", "-o", tmp_path / "demo", "--size", "60", "--seed", "1"],
         f"writing {tmp_path / 'demo'}"),
    ]
    for terminal in ("1", "0"):
        monkeypatch.setenv("TTY_COMPATIBLE", terminal)
        for args, shown in commands:
            again = ["--overwrite"] if args[0] in ("demo", "publish") and terminal == "0" \
                else []
            result = invoke(*args, *again)
            assert result.exit_code == 0, result.output
            if terminal == "1":
                assert shown in result.stderr, (args[0], result.stderr[-500:])
            else:
                assert result.stderr == "", (args[0], result.stderr)
            if "--json" in args:
                assert json.loads(result.stdout)
