"""``load_release(path, engine="spark")`` and ``ppdp count --engine spark``: counts from Spark
aggregations over a release's rows equal those of the in-memory release."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import ppdp.datasets
from ppdp.cli import app
from ppdp.engines.spark import SparkCube
from ppdp.mechanisms import DBR, FRAPP, PerturbationPartitioning, UniformPerturbation
from ppdp.release.load import load_release

COLUMNS = ["age", "sex", "race", "occupation"]

QUERIES = [
    "sex = 'Female'",
    "age >= 40 AND occupation IN ('Sales', 'Craft-repair')",
    "age < 30 OR race = 'White'",
    "SELECT COUNT(*) FROM t WHERE age >= 40 GROUP BY sex, occupation",
]

MECHANISMS = {
    "uniform": lambda: UniformPerturbation(rho1=0.077, rho2=0.2),
    "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
    "dbr": DBR,
    "frapp": lambda: FRAPP(k=0.3, gamma=0.2),
}


@pytest.fixture(scope="module")
def adult():
    return ppdp.datasets.adult(sensitive="occupation").select(COLUMNS).take(np.arange(5_000))


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_spark_counts_equal_in_memory(name, adult, spark, tmp_path):
    release = MECHANISMS[name]().publish(adult, random_state=5)
    release.save(tmp_path / name)
    on_spark = load_release(tmp_path / name, engine="spark")
    assert any(isinstance(value, SparkCube) for value in vars(on_spark).values())
    for query in QUERIES:
        assert on_spark.count(query).to_dict() == release.count(query).to_dict(), query
    result = CliRunner().invoke(app, ["count", str(tmp_path / name), QUERIES[-1],
                                      "--engine", "spark", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(
        release.count(QUERIES[-1]).to_dict()))


def test_spark_engine_checks_digests_and_refuses_data_files(adult, spark, tmp_path):
    DBR().publish(adult, random_state=1).save(tmp_path / "dbr")
    rows = next(path for path in (tmp_path / "dbr").iterdir() if path.name.startswith("rows"))
    rows.write_bytes(rows.read_bytes()[:-1] + b"x")
    result = CliRunner().invoke(app, ["count", str(tmp_path / "dbr"), "sex = 'Female'",
                                      "--engine", "spark"])
    assert result.exit_code == 4  # a damaged release
    assert "does not match the digest" in result.output
    result = CliRunner().invoke(app, ["count", "adult", "sex = 'Female'", "--engine", "spark"])
    assert result.exit_code == 2
    assert "error: --engine spark counts on a release directory" in result.output


WIDE = [
    # Six columns span more value combinations than a dense table may hold (MAX_CUBE_CELLS).
    "age < 30 OR workclass = 'Self-emp-inc' OR education = 'Masters' OR "
    "marital-status = 'Divorced' OR occupation = 'Sales' OR native-country = 'Mexico'",
    "SELECT COUNT(*) FROM t WHERE (age < 30 OR education = 'Masters') AND NOT "
    "(workclass = 'Private' AND native-country = 'United-States' AND race = 'White' AND "
    "marital-status = 'Never-married') GROUP BY sex",
]


@pytest.mark.parametrize("name", ["dbr", "sdr"])
def test_wide_conditions_are_evaluated_in_spark_tasks(name, spark, tmp_path, monkeypatch):
    adult = ppdp.datasets.adult(sensitive="occupation").take(np.arange(5_000))
    release = MECHANISMS[name]().publish(adult, random_state=5)
    release.save(tmp_path / name)
    on_spark = load_release(tmp_path / name, engine="spark")
    (cube,) = (value for value in vars(on_spark).values() if isinstance(value, SparkCube))
    assert not cube.fits(("age", "workclass", "education", "marital-status", "occupation",
                          "native-country"))

    def read_on_the_driver(columns):
        raise AssertionError("rows read on the driver")

    monkeypatch.setattr(SparkCube, "code_batches", read_on_the_driver)
    for query in WIDE:
        expected = release.count(query).to_dict()
        assert on_spark.count(query).to_dict() == expected, query
