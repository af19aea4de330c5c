"""Laplace counts over a Spark DataFrame, and any mechanism's ``publish`` taking one: the same
key gives the same answers and files as in memory."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import ppdp
import ppdp.query.cube
from ppdp.engines.spark import read_parquet
from ppdp.io.read import read_table
from ppdp.mechanisms import DBR, LaplaceCounts

COLUMNS = ["age", "sex", "race", "education", "occupation"]
QUERIES = [
    "sex = 'Female'",
    "age >= 40 AND occupation IN ('Sales', 'Craft-repair')",
    # Not a box: evaluated on the cells of the table over its columns.
    "age < 30 OR race = 'White'",
]
GROUPED = "SELECT COUNT(*) FROM t WHERE age >= 40 GROUP BY sex, race"
SEED = 3


@pytest.fixture(scope="module")
def domains(adult_domains) -> dict:
    return {name: domain for name, domain in adult_domains.items() if name in COLUMNS}


@pytest.fixture(scope="module")
def adult_file(adult_values, tmp_path_factory) -> Path:
    """5,000 of Adult's rows in one Parquet file."""
    rows = adult_values(COLUMNS, 5_000)
    target = tmp_path_factory.mktemp("adult") / "adult.parquet"
    pq.write_table(rows, target)
    return target


def answers(session) -> list:
    values, _ = session.count_all(QUERIES)
    return [*values.tolist(), session.count(GROUPED).to_dict()]


def test_laplace_on_spark_answers_as_in_memory(spark, adult_file, domains):
    table = read_table(adult_file, sensitive="occupation", domains=domains)
    expected = answers(LaplaceCounts(epsilon=0.5).publish(table, random_state=SEED))
    frame = read_parquet(spark, adult_file).repartition(3)
    session = LaplaceCounts(epsilon=0.5).publish(frame, sensitive="occupation",
                                                 domains=domains, random_state=SEED)
    assert answers(session) == expected


def test_laplace_on_spark_beyond_dense_tables(spark, adult_file, domains, monkeypatch):
    """A condition over more value combinations than a dense table may hold is evaluated on
    the combinations Spark finds in the rows."""
    table = read_table(adult_file, sensitive="occupation", domains=domains)
    expected = answers(LaplaceCounts(epsilon=0.5).publish(table, random_state=SEED))
    # age x race (74 x 5 cells) no longer fits: the disjunction needs the found cells.
    monkeypatch.setattr(ppdp.query.cube, "MAX_CUBE_CELLS", 300)
    session = LaplaceCounts(epsilon=0.5).publish(read_parquet(spark, adult_file),
                                                 sensitive="occupation", domains=domains,
                                                 random_state=SEED)
    assert answers(session)[2] == expected[2]


def test_mechanism_publish_takes_a_spark_frame(spark, adult_file, domains, tmp_path):
    table = read_table(adult_file, sensitive="occupation", domains=domains)
    DBR().publish(table, random_state=SEED).save(tmp_path / "memory")
    release = DBR().publish(read_parquet(spark, adult_file).repartition(4),
                            sensitive="occupation", domains=domains, random_state=SEED)
    assert release.rows.count() == table.n_rows
    release.save(tmp_path / "spark")
    assert {p.name: p.read_bytes() for p in (tmp_path / "spark").iterdir()} == \
        {p.name: p.read_bytes() for p in (tmp_path / "memory").iterdir()}


def test_cli_counts_with_laplace_on_spark(spark, adult_file):
    """``ppdp count FILE QUERY -m laplace --engine spark`` gives the in-memory answer."""
    import json

    from typer.testing import CliRunner

    from ppdp.cli import app

    def count(*engine: str) -> dict:
        result = CliRunner().invoke(app, ["count", str(adult_file), GROUPED, "-m", "laplace",
                                          "-p", "epsilon=0.5", "--seed", str(SEED),
                                          "-s", "occupation", "--json", *engine])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    assert count("--engine", "spark") == count("--engine", "memory")
    result = CliRunner().invoke(app, ["count", "adult", GROUPED, "-m", "laplace", "-p",
                                      "epsilon=0.5", "--engine", "spark"])
    assert result.exit_code == 2
    assert "error: --engine spark reads a Parquet file or a folder" in result.output
