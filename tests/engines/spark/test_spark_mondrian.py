"""Mondrian on Spark against the in-memory publication: the top levels cut from Spark
aggregations and the small partitions partitioned in tasks give the same release files (the
same partition, generalized values and release order) whatever the input's partitioning."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pyarrow as pa
import pytest

import ppdp
import ppdp.plan.order
from ppdp.data.hierarchy import read_hierarchies
from ppdp.engines.spark import SparkMondrianRelease, SparkSource, read_parquet
from ppdp.engines.spark.mondrian import publish_mondrian
from ppdp.io.read import read_table
from ppdp.mechanisms.mondrian import steps
from ppdp.mechanisms.mondrian.mechanism import Mondrian
from ppdp.plan.keyed import make_key
from ppdp.release.load import load_release
from tests.engines.spark.test_spark_rows import release_files

COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "occupation"]
N_ROWS = 4_000
LOCAL = 1_500
"""Partitions of more than this many rows are cut from Spark aggregations: 4,000 of Adult's
rows take two levels to come down to it."""
SEED = 13


@pytest.fixture(scope="module")
def adult_rows(adult_values) -> pa.Table:
    """Adult's first 4,000 rows (six columns), as values."""
    return adult_values(COLUMNS, N_ROWS)


@pytest.fixture(scope="module")
def domains() -> dict:
    from ppdp.datasets import read_domains_file

    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        return {name: domain for name, domain in read_domains_file(path).items()
                if name in COLUMNS}


@pytest.fixture(scope="module")
def input_folder(adult_rows, tmp_path_factory, parquet_parts) -> Path:
    """The rows cut into two Parquet files of unequal sizes (rows in name order)."""
    return parquet_parts(adult_rows, tmp_path_factory.mktemp("adult-parts"), [1_500], 600)


def spark_release(spark, folder: Path, mechanism: Mondrian, domains: dict, partitions: int,
                  local_rows: int = LOCAL) -> SparkMondrianRelease:
    frame = read_parquet(spark, folder).repartition(partitions)
    source = SparkSource(frame, sensitive="occupation", domains=domains)
    return publish_mondrian(mechanism, source, make_key(SEED), local_rows=local_rows)


def domain_bound(release: SparkMondrianRelease, domains: dict) -> int:
    """The most rows an aggregation of the publication can bring to the driver: a level's
    counts by partition, rank of one quasi-identifier and sensitive value (the other results,
    the distinct generalized values of every attribute and the parts' digests, are fewer on
    these rows)."""
    quasi = [name for name in COLUMNS if name != "occupation"]
    most_open = 2 ** (release._top.depth - 1)
    return most_open * max(len(domains[name]) for name in quasi) * len(domains["occupation"])


CASES = {
    "k": lambda: Mondrian(k=8),
    "l-distinct": lambda: Mondrian(k=5, l=3),
    # Hierarchies for two attributes: their generalized values are hierarchy nodes, the
    # others' ranges (age) and sets (sex, race, salary-class, workclass) in the other cases.
    "l-frequency": lambda: Mondrian(k=5, l=3, diversity="frequency", hierarchies={
        name: hierarchy for name, hierarchy in read_hierarchies("adult").items()
        if name in ("age", "workclass")}),
}


@pytest.fixture
def four_parts(monkeypatch) -> None:
    """Releases of 4,000 rows written in four parts: the exchange by part and the files of
    each part are tested."""
    monkeypatch.setattr(ppdp.plan.order, "ROWS_PER_PART", 1_100)


# l's two kinds, one under each partitioning; k alone under 1 here and under 7 below (each
# Spark publication is some thirty Spark jobs).
@pytest.mark.parametrize(("case", "partitions"), [("k", 1), ("l-distinct", 7),
                                                  ("l-frequency", 1)])
def test_spark_release_equals_in_memory_release(case, partitions, spark, input_folder,
                                                adult_rows, domains, tmp_path, four_parts,
                                                collected, monkeypatch):
    if case == "l-frequency":
        # No room for counts by rank and sensitive value: a second aggregation a level counts
        # the sensitive values around the medians.
        monkeypatch.setattr(steps, "JOINT_CELLS", 0)
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    CASES[case]().publish(table, random_state=SEED).save(tmp_path / "memory")
    expected = release_files(tmp_path / "memory")
    assert len([name for name in expected if name.startswith("rows-")]) == 4
    release = spark_release(spark, input_folder, CASES[case](), domains, partitions)
    # Two levels cut from aggregations before the rest is partitioned in tasks.
    assert release._top.depth == 2 and len(release._top.leaves) == 4
    release.save(tmp_path / "spark")
    assert release_files(tmp_path / "spark") == expected
    assert collected and max(collected) <= domain_bound(release, domains) < table.n_rows


def test_classes_cut_by_aggregation_alone(spark, input_folder, adult_rows, domains, tmp_path):
    # With k = 700 some partitions of more than 1,000 rows admit no cut: they are classes
    # whose generalized values (sets among them) come from the aggregations alone.
    mechanism = Mondrian(k=700)
    table = read_table(adult_rows, sensitive="occupation", domains=domains)
    mechanism.publish(table, random_state=SEED).save(tmp_path / "memory")
    release = spark_release(spark, input_folder, mechanism, domains, 7, local_rows=1_000)
    assert release._top.classes and release._top.leaves
    release.save(tmp_path / "spark")
    assert release_files(tmp_path / "spark") == release_files(tmp_path / "memory")
    loaded = load_release(tmp_path / "spark")
    assert loaded.risk()["k"] >= 700
