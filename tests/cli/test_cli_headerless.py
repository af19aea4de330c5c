"""A CSV file without a header line (UCI's adult.data) named from the command line:
--names gives the columns' names, --no-header says the first line is a row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdp.cli import app

runner = CliRunner()

NAMES = "age,sex,disease"


def invoke(*args: object) -> object:
    return runner.invoke(app, [str(a) for a in args])


def ok(*args: object) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def refused(*args: object, match: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and match in line, line


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A headerless file as UCI writes them: comma and space, no header, 30 rows."""
    path = tmp_path / "visits.data"
    path.write_text("".join(f"{20 + i % 5}, {'FM'[i % 2]}, {['flu', 'cold', 'hiv'][i % 3]}\n"
                            for i in range(30)))
    return path


def test_publish_and_count_a_headerless_file(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "release"
    ok("publish", data, "--no-header", "--names", NAMES, "-m", "dbr", "-s", "disease",
       "--observed-domains", "--seed", "1", "-o", out)
    metadata = json.loads((out / "release.json").read_text())
    assert metadata["n_rows"] == 30
    assert [c["name"] for c in metadata["schema"]] == ["age", "sex", "disease"]
    # The first line is a row: 20, F, flu is counted.
    answer = json.loads(ok("count", data, "age = 20 AND disease = 'flu'", "--no-header",
                           "--names", NAMES, "--json"))
    assert answer["estimate"] == 2


def test_names_replace_a_header(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "".join(f"{i},{i % 2},{i % 3}\n" for i in range(12)))
    answer = json.loads(ok("count", path, "sex = 1", "--names", NAMES, "--json"))
    assert answer["estimate"] == 6


def test_no_header_needs_names(data: Path, tmp_path: Path) -> None:
    refused("publish", data, "--no-header", "-m", "dbr", "-s", "disease", "-o",
            tmp_path / "r", match="--no-header needs --names")
    refused("count", data, "age = 20", "--no-header", match="--no-header needs --names")


def test_names_describe_a_csv_file(data: Path) -> None:
    refused("count", "adult", "age = 20", "--names", NAMES, match="describe a CSV file")
    result = invoke("count", data, "age = 20", "--no-header", "--names", "age,sex")
    assert result.exit_code != 0 and "2 column names given" in result.stderr
    refused("count", data, "age = 20", "--no-header", "--names", "age,,disease",
            match="--names takes the column names")
