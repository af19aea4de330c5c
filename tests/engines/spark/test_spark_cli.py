"""``ppdp publish --engine spark``: the master it runs on, said, and the in-memory files."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.data.domains import read_domains_file
from ppdp.io.read import read_table
from ppdp.mechanisms import DBR, PerturbationPartitioning

COLUMNS = ["age", "sex", "race", "occupation"]


def release_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize(("name", "options", "mechanism"), [
    ("dbr", [], DBR),
    ("sdr", ["-p", "rho1=0.077", "-p", "rho2=0.2"],
     lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2)),
])
def test_publish_on_spark_equals_in_memory(name, options, mechanism, spark, tmp_path,
                                           parquet_parts):
    with resources.as_file(resources.files(ppdp.datasets) / "adult.parquet") as path:
        rows = pq.read_table(path, columns=COLUMNS).slice(0, 5_000)
    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        declared = json.loads(path.read_text())
    domains_file = tmp_path / "domains.json"
    domains_file.write_text(json.dumps(
        {"domains": {name: declared["domains"][name] for name in COLUMNS}}))
    folder = tmp_path / "input"
    folder.mkdir()
    parquet_parts(rows, folder, [2_000])
    result = CliRunner().invoke(app, ["publish", str(folder), "-m", name, *options,
                                      "-s", "occupation", "--domains", str(domains_file),
                                      "--engine", "spark", "--seed", "3",
                                      "-o", str(tmp_path / "spark")])
    assert result.exit_code == 0, result.output
    assert "publishing on Spark, master local[2]" in result.output
    assert f"published {name} release of 5000 rows" in result.output
    table = read_table(rows, sensitive="occupation", domains=read_domains_file(domains_file))
    mechanism().publish(table, random_state=3).save(tmp_path / "memory")
    assert release_files(tmp_path / "spark") == release_files(tmp_path / "memory")


def test_spark_engine_refusals(spark, tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,2\n")
    result = CliRunner().invoke(app, ["publish", str(csv), "-m", "dbr", "-s", "b",
                                      "--engine", "spark", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "error: --engine spark reads a Parquet file or a folder of Parquet files" \
        in result.output
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4]}), parquet)
    result = CliRunner().invoke(app, ["publish", str(parquet), "-m", "laplace", "-s", "b",
                                      "-p", "epsilon=1", "--observed-domains", "--engine",
                                      "spark", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "error: laplace answers queries over the private data" in result.output
    assert not (tmp_path / "out").exists()


def test_a_spark_failure_is_one_error_line(spark, tmp_path, monkeypatch):
    from pyspark.errors import PySparkRuntimeError

    import ppdp.engines.spark.engine

    def failing(*args, **kwargs):
        raise PySparkRuntimeError("PYTHON_EXCEPTION", {})

    # dbr's rows, published in Spark tasks, fail there.
    monkeypatch.setattr(ppdp.engines.spark.engine, "publish_rows", failing)
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": [3, 4]}), parquet)
    result = CliRunner().invoke(app, ["publish", str(parquet), "-m", "dbr", "-s", "b",
                                      "--observed-domains", "--engine", "spark",
                                      "-o", str(tmp_path / "out")])
    assert result.exit_code == 3
    assert "error: Spark failed: " in result.output
    assert "Traceback" not in result.output
