"""Every CLI command on a battery of bad inputs: one ``error:`` line, the exit status of its
kind (2: the command line is wrong, 3: the data, 4: a release), no traceback, and nothing
lost."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app

runner = CliRunner()


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-input")
    good = write_csv(root / "good.csv", ["age", "sex", "disease"],
                     [[20 + i % 7, "F" if i % 3 else "M", ["flu", "cold", "hiv"][i % 3]]
                      for i in range(60)])
    mixed = write_csv(root / "mixed.csv", ["age", "disease"],
                      [[("4O" if i == 5 else 20 + i % 50), "flu"] for i in range(200)])
    duplicated = write_csv(root / "duplicated.csv", ["a", "b", "a"], [[1, 2, 3]])
    wide = write_csv(root / "wide.csv", [f"c{i}" for i in range(1000)],
                     [[j % 2 for _ in range(1000)] for j in range(4)])
    (root / "empty.csv").write_text("")
    (root / "junk.csv").write_bytes(bytes(range(256)) * 40)
    (root / "junk.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    (root / "latin1.csv").write_bytes("name,city\nJos\xe9,M\xe1laga\n".encode("latin-1"))
    (root / "a-folder").mkdir()
    (root / "afile").write_text("precious")
    table = ppdp.read_table(good, sensitive="disease", observed_domains=True)
    release = ppdp.SPLUGen(gamma=3).publish(table, random_state=1).save(root / "release")
    deep = ppdp.SPLUGen(gamma=3).publish(table, random_state=2).save(root / "deep")
    (deep / "release.json").write_text("[" * 100_000 + "]" * 100_000)
    edited = ppdp.SPLUGen(gamma=3).publish(table, random_state=3).save(root / "edited")
    metadata = json.loads((edited / "release.json").read_text())
    metadata["parameters"]["gamma"] = 1e308
    (edited / "release.json").write_text(json.dumps(metadata))
    corrupt = ppdp.SPLUGen(gamma=3).publish(table, random_state=4).save(root / "corrupt")
    (corrupt / "rows.parquet").write_bytes(b"not parquet")
    return {"good": good, "mixed": mixed, "duplicated": duplicated, "wide": wide,
            "empty": root / "empty.csv", "junk": root / "junk.csv",
            "junk_parquet": root / "junk.parquet", "latin1": root / "latin1.csv",
            "folder": root / "a-folder", "afile": root / "afile", "release": release,
            "deep": deep, "edited": edited, "corrupt": corrupt, "root": root}


BATTERY: list[tuple[str, Callable[[dict[str, Path]], list[object]]]] = [
    # publish: sources
    ("missing file", lambda f: ["publish", f["root"] / "nope.csv", "-m", "dbr", "-s", "disease",
                                "-o", f["root"] / "o1"]),
    ("directory as source", lambda f: ["publish", f["folder"], "-m", "dbr", "-o",
                                       f["root"] / "o2"]),
    ("empty csv", lambda f: ["publish", f["empty"], "-m", "dbr", "-o", f["root"] / "o3"]),
    ("binary csv", lambda f: ["publish", f["junk"], "-m", "dbr", "-o", f["root"] / "o4"]),
    ("binary parquet", lambda f: ["publish", f["junk_parquet"], "-m", "dbr", "-o",
                                  f["root"] / "o5"]),
    ("latin-1 csv", lambda f: ["publish", f["latin1"], "-m", "dbr", "-s", "city", "-o",
                               f["root"] / "o6"]),
    ("duplicate columns", lambda f: ["publish", f["duplicated"], "-m", "dbr", "-s", "b", "-o",
                                     f["root"] / "o7"]),
    ("mostly numeric column", lambda f: ["publish", f["mixed"], "-m", "dbr", "-s", "disease",
                                         "-o", f["root"] / "o8"]),
    ("unknown sensitive", lambda f: ["publish", f["good"], "-m", "dbr", "-s", "diseas", "-o",
                                     f["root"] / "o9"]),
    ("undeclared domain", lambda f: ["publish", f["good"], "-m", "splu", "-s", "disease", "-p",
                                     "gamma=3", "-o", f["root"] / "o10"]),
    # publish: parameters
    ("unknown mechanism", lambda f: ["publish", "adult", "-m", "teleport", "-o",
                                     f["root"] / "o11"]),
    ("non-numeric parameter", lambda f: ["publish", "adult", "-m", "splu", "-s", "occupation",
                                         "-p", "gamma=abc", "-o", f["root"] / "o12"]),
    ("huge gamma", lambda f: ["publish", "adult", "-m", "splu", "-s", "occupation", "-p",
                              "gamma=1e308", "-o", f["root"] / "o13"]),
    ("negative k", lambda f: ["publish", "adult", "-m", "alphabeta", "-p", "k=-1", "-p",
                              "gamma=0.2", "-o", f["root"] / "o14"]),
    ("parameter without =", lambda f: ["publish", "adult", "-m", "dbr", "-s", "occupation",
                                       "-p", "gamma", "-o", f["root"] / "o15"]),
    ("alphabeta on 1,000 columns", lambda f: ["publish", f["wide"], "-m", "alphabeta", "-p",
                                              "k=1", "-p", "gamma=0.5", "--observed-domains",
                                              "-o", f["root"] / "o16"]),
    ("frapp on 1,000 columns", lambda f: ["publish", f["wide"], "-m", "frapp", "-p", "k=1",
                                          "-p", "gamma=0.5", "--observed-domains", "-o",
                                          f["root"] / "o17"]),
    ("alphabeta view too large", lambda f: ["publish", "adult", "-m", "alphabeta", "-p",
                                            "alpha=0.3", "-p", "beta=0.2", "-o",
                                            f["root"] / "o18"]),
    ("bad domain option", lambda f: ["publish", f["good"], "-m", "dbr", "-s", "disease",
                                     "--domain", "disease", "-o", f["root"] / "o19"]),
    ("missing domains file", lambda f: ["publish", f["good"], "-m", "dbr", "-s", "disease",
                                        "--domains", f["root"] / "nope.json", "-o",
                                        f["root"] / "o20"]),
    ("overwrite a file", lambda f: ["publish", "adult", "-m", "dbr", "-s", "occupation", "-o",
                                    f["afile"], "--overwrite"]),
    ("overwrite a folder", lambda f: ["publish", "adult", "-m", "dbr", "-s", "occupation", "-o",
                                      f["folder"], "--overwrite"]),
    ("output exists", lambda f: ["publish", "adult", "-m", "dbr", "-s", "occupation", "-o",
                                 f["release"]]),
    # count
    ("unparseable query", lambda f: ["count", f["release"], "age >>> 3"]),
    ("deeply nested query", lambda f: ["count", f["release"],
                                       "(" * 5000 + "age > 3" + ")" * 5000]),
    ("unknown column", lambda f: ["count", f["release"], "agee > 3"]),
    ("text against a number", lambda f: ["count", f["release"], "sex > 3"]),
    ("division by zero", lambda f: ["count", f["release"], "age / 0 > 1"]),
    ("another table", lambda f: ["count", f["good"],
                                 "SELECT COUNT(*) FROM users WHERE age > 3"]),
    ("huge number", lambda f: ["count", f["release"], "age > 1e400"]),
    ("nested release.json", lambda f: ["count", f["deep"], "age > 3"]),
    ("edited release.json", lambda f: ["count", f["edited"], "age > 3"]),
    ("corrupt parquet", lambda f: ["count", f["corrupt"], "age > 3"]),
    ("count on a file", lambda f: ["count", f["afile"], "age > 3"]),
    ("laplace huge epsilon", lambda f: ["count", "adult", "sex = 'Male'", "-m", "laplace",
                                        "-p", "epsilon=-1"]),
    ("laplace on a release", lambda f: ["count", f["release"], "age > 3", "-m", "laplace"]),
    # guarantee, risk, evaluate, demo
    ("guarantee unknown parameter", lambda f: ["guarantee", "splu", "-p", "delta=3"]),
    ("guarantee bad value", lambda f: ["guarantee", "splu", "-p", "gamma=-2"]),
    ("guarantee table for splu", lambda f: ["guarantee", "splu", "adult", "-p", "gamma=3"]),
    ("risk of a splu release", lambda f: ["risk", f["release"], f["good"]]),
    ("risk of nothing", lambda f: ["risk", f["root"] / "nope"]),
    ("attack unknown attack", lambda f: ["attack", f["release"], f["good"], "--attack",
                                         "teleport"]),
    ("attack another table", lambda f: ["attack", f["release"], "adult"]),
    ("attack into the release", lambda f: ["attack", f["release"], f["good"], "-o",
                                           f["release"]]),
    ("attack negative top", lambda f: ["attack", f["release"], f["good"], "--top", "-1"]),
    ("attack unknown attribute", lambda f: ["attack", f["release"], f["good"], "-s",
                                            "diseas"]),
    ("attack a missing release", lambda f: ["attack", f["root"] / "nope", f["good"]]),
    ("evaluate unknown", lambda f: ["evaluate", "nonsense"]),
    ("evaluate nothing", lambda f: ["evaluate"]),
    ("demo onto a file", lambda f: ["demo", "-o", f["afile"], "--size", "10"]),
]


DATA = {"missing file", "directory as source", "empty csv", "binary csv", "binary parquet",
        "latin-1 csv", "duplicate columns", "mostly numeric column", "unknown sensitive",
        "undeclared domain", "huge gamma", "alphabeta on 1,000 columns",
        "frapp on 1,000 columns", "alphabeta view too large", "missing domains file",
        "count on a file", "attack another table", "attack unknown attribute"}
"""The cases whose data cannot be read or do not fit (exit 3)."""
RELEASE = {"nested release.json", "edited release.json", "corrupt parquet", "risk of nothing",
           "attack a missing release"}
"""The cases whose release is missing or damaged (exit 4); every other case is a wrong
command line (exit 2)."""


@pytest.mark.parametrize(("name", "arguments"), BATTERY, ids=[name for name, _ in BATTERY])
def test_bad_input_is_one_line_and_its_exit_code(name: str, arguments,
                                                 files: dict[str, Path]) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in files["root"].iterdir()}
    result = runner.invoke(app, [str(a) for a in arguments(files)])
    code = 3 if name in DATA else 4 if name in RELEASE else 2
    assert result.exit_code == code, (name, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), (name, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (name, result.stderr)
    assert "Traceback" not in result.output
    # Nothing that was there is lost or changed, and no output appeared.
    after = {p.name: p.stat().st_mtime_ns for p in files["root"].iterdir()}
    assert after == before, name
    assert files["afile"].read_text() == "precious"
